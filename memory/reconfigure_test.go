package memory_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// Metadata changes and writes from two stores on one block, write-through
// and write-back: no deadlock (reconfigure holds the entry lock across its
// UPDATE), and the stored rendering matches the document. Write-through
// also ends valid under its schema; write-back validates an edit against
// what its own process has seen, so two processes' merged pushes can pass
// max_items (documented in docs/design.md).
func TestReconfigureUnderConcurrentWrites(t *testing.T) {
	for _, wb := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		path := filepath.Join(t.TempDir(), "m.db")
		a := openFile(t, path, &memory.Options{WriteBack: wb})
		b := openFile(t, path, &memory.Options{WriteBack: wb})
		if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "l", Schema: schema.List{Item: schema.FieldInteger}, Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, c := range []*memory.Store{a, b} {
			wg.Add(2)
			go func() {
				defer wg.Done()
				for i := range 40 {
					_ = c.Agent("ada").Block("l").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: int64(i)})
					if i%3 == 0 {
						_ = c.Agent("ada").Block("l").Apply(ctx, memory.Edit{Op: blocks.OpDeleteItem, Index: 0})
					}
					if wb {
						_ = c.Agent("ada").Block("l").Persist(ctx)
					}
				}
			}()
			go func() {
				defer wg.Done()
				for i := range 40 {
					_ = c.Agent("ada").Block("l").SetSchema(ctx, schema.List{Item: schema.FieldInteger, MaxItems: 20 + i%5})
					_ = c.Agent("ada").Block("l").SetPinned(ctx, i%2 == 0)
				}
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatal("deadlock/timeout")
		}
		cancel()
		_ = a.Flush(context.Background())
		_ = b.Flush(context.Background())
		c := openFile(t, path, nil)
		d, err := c.Agent("ada").Block("l").Doc(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v, _ := d.Value()
		if err := blocks.CheckValue(d.Schema(), v); err != nil && !wb {
			t.Fatalf("wb=%v: %v", wb, err)
		}
		r, _ := c.Agent("ada").Block("l").Render(context.Background())
		if r != d.Render() {
			t.Fatalf("wb=%v: rendering %q vs %q", wb, r, d.Render())
		}
	}
}

// A reconfigure that meets another store's write while its own block has
// write-back edits pending retries without losing either: after Flush the
// block holds both appends, its stored rendering matches, and it is pinned.
func TestReconfigureRetryKeepsPendingWriteBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var armed atomic.Bool
	var b *memory.Store
	var bErr error
	now := func() time.Time {
		if armed.CompareAndSwap(true, false) {
			bErr = b.AppendToBlock(ctx, "ada", "t", " +b")
		}
		return time.Now()
	}
	a := openFile(t, path, &memory.Options{Now: now, WriteBack: true})
	b = openFile(t, path, nil)
	if _, err := a.CreateBlock(ctx, "ada", memory.BlockSpec{Label: "t", Value: "hello", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := a.PersistBlock(ctx, "ada", "t"); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendToBlock(ctx, "ada", "t", " +a"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err := a.SetBlockPinned(ctx, "ada", "t", true)
	t.Logf("pin: %v, b: %v, armed %v", err, bErr, armed.Load())
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := openFile(t, path, nil)
	d, err := c.GetBlock(ctx, "ada", "t")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.RenderedContent(ctx, "ada", "t")
	t.Logf("doc %q rendered %q pinned %v", d.Render(), r, d.Info().Pinned)
	if !strings.Contains(d.Render(), "+a") || !strings.Contains(d.Render(), "+b") || r != d.Render() {
		t.Fatalf("lost: doc %q rendered %q", d.Render(), r)
	}
}

// A reconfiguration whose UPDATE fails (here a trigger refuses it) leaves
// the document's metadata as the row has it, in write-back mode too,
// where an edit still pending keeps the block's document around: the
// pending edit is flushed later, and the pin the row never took must not
// come back with it.
func TestReconfigureFailedLeavesMetadata(t *testing.T) {
	for _, wb := range []bool{false, true} {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "m.db")
		a := openFile(t, path, &memory.Options{WriteBack: wb})
		blk := a.Agent("ada").Block("t")
		if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "t", Value: "hello", Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
		if err := blk.Persist(ctx); err != nil {
			t.Fatal(err)
		}
		if err := blk.Append(ctx, " world"); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open(sqlitedriver.Name, path+"?_busy_timeout=10000")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TRIGGER refuse_pin BEFORE UPDATE OF pinned ON blocks WHEN NEW.pinned <> OLD.pinned
			BEGIN SELECT RAISE(ABORT, 'no pins here'); END`); err != nil {
			t.Fatal(err)
		}
		if err := blk.SetPinned(ctx, true); err == nil {
			t.Fatalf("wb=%v: the pin went through a refusing trigger", wb)
		}
		if _, err := db.Exec(`DROP TRIGGER refuse_pin`); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		d, err := blk.Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Info().Pinned || d.Render() != "hello world" {
			t.Fatalf("wb=%v: after the refused pin the store holds pinned %v, %q", wb, d.Info().Pinned, d.Render())
		}
		c := openFile(t, path, nil)
		d, err = c.Agent("ada").Block("t").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Info().Pinned || d.Render() != "hello world" {
			t.Fatalf("wb=%v: reopened, the block is pinned %v, %q", wb, d.Info().Pinned, d.Render())
		}
	}
}
