package memory

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/schema"
)

// gatedReads holds the next ReadTx, once armed, until released.
type gatedReads struct {
	driver.Backend
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedReads) ReadTx(ctx context.Context) (*sql.Tx, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Backend.ReadTx(ctx)
}

func openForTest(t *testing.T, path string, o *Options) *Store {
	t.Helper()
	c, err := Open(context.Background(), path, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestWriteBackRenderDuringAViewsWrite: an acknowledged, flushed append
// stays in Block.Render and Agent.Blocks while a write through an older
// view (whose copy is put back in the cache before it is caught up) is in
// flight.
func TestWriteBackRenderDuringAViewsWrite(t *testing.T) {
	ctx := context.Background()
	c, a, _ := writeBackTwoBlocks(t, BlockSpec{CharLimit: 100})
	old, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // x's copy leaves the cache, clean
		t.Fatal(err)
	}
	if err := a.Block("x").Append(ctx, "A"); err != nil { // another copy
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Block("x").Render(ctx); err != nil || got != "A" {
		t.Fatalf("before: %q %v", got, err)
	}
	g := &gatedReads{Backend: c.be, entered: make(chan struct{}), release: make(chan struct{})}
	c.be = g
	g.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- old.AppendText("B", blocks.Agent) }()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the view's write never reached its read transaction")
	}
	got, rerr := a.Block("x").Render(ctx)
	metas, merr := a.Blocks(ctx)
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("view write: %v", err)
	}
	if rerr != nil || merr != nil {
		t.Fatal(rerr, merr)
	}
	var listed string
	for _, m := range metas {
		if m.Label == "x" {
			listed = m.Rendered
		}
	}
	after, _ := a.Block("x").Render(ctx)
	if got != "A" || listed != "A" {
		t.Fatalf("Render during the view's write: %q, Blocks: %q; want %q (acknowledged and flushed before); after the write: %q", got, listed, "A", after)
	}
}

// TestWriteBackNoopEditLeavesNoOtherCopyPending: a write-back edit that
// changes nothing leaves nothing pending, and a write through an older
// view then lands.
func TestWriteBackNoopEditLeavesNoOtherCopyPending(t *testing.T) {
	ctx := context.Background()
	c, a, _ := writeBackTwoBlocks(t, BlockSpec{CharLimit: 100})
	old, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Block("x").SetText(ctx, ""); err != nil { // no change
		t.Fatal(err)
	}
	c.mu.Lock()
	nd := len(c.dirty)
	c.mu.Unlock()
	if err := old.AppendText("v", blocks.Agent); err != nil {
		t.Fatalf("write through the view, no copy with pending edits (dirty entries: %d): %v", nd, err)
	}
}

// TestWriteBackMergeThroughADisplacedCopy: a merge (written through even
// in write-back mode) reaching a copy displaced between lookup and lock,
// while another copy holds a pending append, checks the limit with that
// append: after the flush the block is within its character limit.
func TestWriteBackMergeThroughADisplacedCopy(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 30})
	doc, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	v, err := peer.RootMap().Get("content")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Text().Append(strings.Repeat("m", 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit("peer"); err != nil {
		t.Fatal(err)
	}
	data := peer.Save()
	check := appendWhileDisplaced(t, c, a)
	check("merge", a.Block("x").Merge(ctx, data))
	if got := reopenedText(t, c, path, "x"); got != strings.Repeat("a", 20) {
		t.Fatalf("reopened: %q, want the acknowledged append alone", got)
	}
}

// TestWriteBackViewOfADeletedBlock: a view of a deleted block (its copy
// evicted, a new block made with the same label) fails, with the deleted
// block's error, and nothing lands in the new block.
func TestWriteBackViewOfADeletedBlock(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 100, Permission: blocks.Admin})
	if err := a.Block("x").Append(ctx, "old1"); err != nil {
		t.Fatal(err)
	}
	old, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // old copy evicted dirty, flushed
		t.Fatal(err)
	}
	if err := a.Block("x").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateBlock(ctx, BlockSpec{Label: "x", CharLimit: 100, Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := a.Block("x").Append(ctx, "new"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // new copy evicted dirty
		t.Fatal(err)
	}
	werr := old.AppendText("STALE", blocks.Agent)
	if werr == nil || errors.Is(werr, ErrBlockBusy) {
		t.Errorf("write through the deleted block's view: %v, want a not-found error", werr)
	}
	if err := a.Block("x").Append(ctx, "+more"); err != nil {
		t.Fatalf("append to the new block: %v", err)
	}
	if got, err := a.Block("x").Render(ctx); err != nil || got != "new+more" {
		t.Fatalf("new block in process: %q %v", got, err)
	}
	if got := reopenedText(t, c, path, "x"); got != "new+more" {
		t.Fatalf("reopened: %q", got)
	}
}

// TestWriteBackRenderDuringAnEdit: another store (process) commits to the
// block; while a write-back edit here has held its copy and not yet caught
// it up, Block.Render reads the committed row, not the copy's old state.
func TestWriteBackRenderDuringAnEdit(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c := openForTest(t, path, &Options{WriteBack: true})
	defer c.Close()
	a := c.Agent("ada")
	if _, err := a.CreateBlock(ctx, BlockSpec{Label: "x", CharLimit: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("x").Doc(ctx); err != nil { // cached here
		t.Fatal(err)
	}
	other := openForTest(t, path, nil)
	defer other.Close()
	if err := other.Agent("ada").Block("x").Append(ctx, "P"); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Block("x").Render(ctx); err != nil || got != "P" {
		t.Fatalf("before: %q %v", got, err)
	}
	g := &gatedReads{Backend: c.be, entered: make(chan struct{}), release: make(chan struct{})}
	c.be = g
	g.armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- a.Block("x").Append(ctx, "Q") }()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the append never reached its read transaction")
	}
	got, rerr := a.Block("x").Render(ctx)
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("append: %v", err)
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	after, _ := a.Block("x").Render(ctx)
	if got != "P" {
		t.Fatalf("Render during the append: %q, want %q (committed, read by Render before); after: %q", got, "P", after)
	}
}

// TestWriteBackSchemaChangeThroughADisplacedCopy: a schema change whose
// copy of the block was displaced between lookup and lock, while another
// copy holds a pending edit the new schema refuses, is checked against
// that edit: refused, and the block keeps its schema and the edit.
func TestWriteBackSchemaChangeThroughADisplacedCopy(t *testing.T) {
	ctx := context.Background()
	fields := func(typ schema.FieldType) schema.Map {
		return schema.Map{Fields: []schema.FieldDef{{Name: "x", Type: typ}}}
	}
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 1000, Permission: blocks.Admin, Schema: fields(schema.FieldString)})
	if _, err := a.Block("x").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	displace := true
	var setErr error
	c.beforeWriteLock = func(e *entry) {
		if !displace || e.label != "x" {
			return
		}
		displace = false
		if _, err := a.Block("y").Doc(ctx); err != nil {
			t.Error(err)
		}
		setErr = a.Block("x").Apply(ctx, Edit{Op: blocks.OpSetField, Field: "x", Value: "abc"})
	}
	err := a.Block("x").SetSchema(ctx, fields(schema.FieldInteger))
	c.beforeWriteLock = nil
	if displace || setErr != nil || !errors.Is(err, schema.ErrInvalid) {
		t.Fatalf("displaced: %v, set_field: %v, schema change: %v (want schema.ErrInvalid)", !displace, setErr, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openForTest(t, path, nil)
	defer c.Close()
	doc, err := c.Agent("ada").Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Schema(); !reflect.DeepEqual(got, fields(schema.FieldString)) {
		t.Fatalf("reopened schema: %#v", got)
	}
	if v, _ := doc.Value(); !reflect.DeepEqual(v, map[string]any{"x": "abc"}) {
		t.Fatalf("reopened value: %#v", v)
	}
}

// TestWriteBackSubscriberOfAFlushedCopy: a write through a displaced view
// flushes the block's other copy, which catches up another store's write
// (a Remote event held back under its lock). The other copy's subscriber
// calls the store when the event fires, as Subscribe allows; it does not
// wait for the lock of the view's copy, held by its own goroutine.
func TestWriteBackSubscriberOfAFlushedCopy(t *testing.T) {
	for _, mode := range []string{"read", "append"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 1000})
			v1, err := a.Block("x").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Block("y").Doc(ctx); err != nil { // v1's copy leaves the cache, clean
				t.Fatal(err)
			}
			v2, err := a.Block("x").Doc(ctx) // another copy
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Block("x").Append(ctx, "A"); err != nil { // pending on it
				t.Fatal(err)
			}
			c2 := openForTest(t, path, nil)
			defer c2.Close()
			if err := c2.Agent("ada").Block("x").Append(ctx, "R"); err != nil { // caught up in its flush
				t.Fatal(err)
			}
			var fired atomic.Bool
			var cbErr atomic.Value
			v2.Subscribe(func(ev blocks.Event) {
				if !ev.Remote || !fired.CompareAndSwap(false, true) {
					return
				}
				var err error
				if mode == "read" {
					_, err = a.Block("x").Doc(ctx)
				} else {
					err = a.Block("x").Append(ctx, "S")
				}
				if err != nil {
					cbErr.Store(err.Error())
				}
			})
			done := make(chan error, 1)
			go func() { done <- v1.AppendText("B", blocks.Agent) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("write through the displaced view: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the write through the displaced view did not return in 20 s (remote event fired: %v)", fired.Load())
			}
			if e := cbErr.Load(); e != nil {
				t.Fatalf("subscriber: %v", e)
			}
			if !fired.Load() {
				t.Fatal("no remote event fired on the flushed copy")
			}
			want := "ABR" // (in an order the merge picks)
			if mode == "append" {
				want += "S"
			}
			got := reopenedText(t, c, path, "x")
			for _, w := range want {
				if strings.Count(got, string(w)) != 1 {
					t.Fatalf("reopened: %q, want each of %q once", got, want)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("reopened: %q, want each of %q once", got, want)
			}
		})
	}
}
