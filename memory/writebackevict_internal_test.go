package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
)

// TestWriteBackEditsSurviveEvictions: in write-back mode, with a cache
// of one document and a reader loading two blocks in turn beside the
// writer, every acknowledged append is in the block the process reads
// next (not in a copy the cache dropped), the limit holds across the
// edits, and all of them are there after Close.
func TestWriteBackEditsSurviveEvictions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c, err := Open(ctx, path, &Options{CacheSize: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agent("ada")
	const limit = 6_000
	for _, l := range []string{"x", "y"} {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, l := range []string{"y", "x"} {
				if _, err := a.Block(l).Doc(ctx); err != nil {
					t.Error(err)
					return
				}
			}
			reads.Add(1)
		}
	}()
	line := strings.Repeat("z", 19) + "\n"
	acked := 0
	for i := range 400 {
		err := a.Block("x").Append(ctx, line)
		if err != nil {
			if errors.Is(err, blocks.ErrLimit) {
				continue
			}
			close(stop)
			wg.Wait()
			t.Fatalf("append %d: %v", i, err)
		}
		acked++
		doc, err := a.Block("x").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(doc.Render(), "\n"); got != acked {
			close(stop)
			wg.Wait()
			t.Fatalf("append %d acknowledged (%d in all), then %d lines in the block's document (%d reads beside)", i, acked, got, reads.Load())
		}
	}
	close(stop)
	wg.Wait()
	got := reopenedText(t, c, path, "x")
	if n := len([]rune(got)); n > limit || strings.Count(got, "\n") != acked {
		t.Fatalf("reopened: %d characters (limit %d), %d lines, %d acknowledged", n, limit, strings.Count(got, "\n"), acked)
	}
}

// TestWriteBackViewAfterReload: a write through a Block.Doc view whose
// copy of the block left the cache and was loaded again lands, is read by
// the process's next read of the block, and persists at the flush.
func TestWriteBackViewAfterReload(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 100})
	view, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // x leaves the cache
		t.Fatal(err)
	}
	if _, err := a.Block("x").Doc(ctx); err != nil { // and comes back, another copy
		t.Fatal(err)
	}
	if err := view.AppendText("from the view", blocks.Agent); err != nil {
		t.Fatalf("write through the old view: %v", err)
	}
	doc, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Render(); got != "from the view" {
		t.Fatalf("the block's document after the view's write: %q", got)
	}
	// An edit through the block is made on the view's copy, after the
	// view's edit.
	if err := a.Block("x").Append(ctx, ", then the block"); err != nil {
		t.Fatal(err)
	}
	if got := reopenedText(t, c, path, "x"); got != "from the view, then the block" {
		t.Fatalf("reopened: %q", got)
	}
}

// TestWriteBackEvictionsNoDeadlock: write-back writers to their own
// blocks beside a reader loading others, with a cache of one document, on
// a file and in memory (whose pool is one connection), finish: a claim on
// a copy waits for loads, a load for a connection, and no claim holds one.
func TestWriteBackEvictionsNoDeadlock(t *testing.T) {
	for _, target := range []string{"file", ":memory:"} {
		t.Run(target, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if target == "file" {
				target = filepath.Join(t.TempDir(), "wb.db")
			}
			c, err := Open(ctx, target, &Options{CacheSize: 1, WriteBack: true})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			a := c.Agent("ada")
			labels := []string{"w0", "w1", "w2", "w3", "r0", "r1"}
			for _, l := range labels {
				if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: 100_000}); err != nil {
					t.Fatal(err)
				}
			}
			var writers, reader sync.WaitGroup
			stop := make(chan struct{})
			for w := range 4 {
				writers.Add(1)
				go func() {
					defer writers.Done()
					for i := range 150 {
						if err := a.Block(labels[w]).Append(ctx, "line\n"); err != nil {
							t.Errorf("writer %d, append %d: %v", w, i, err)
							return
						}
					}
				}()
			}
			reader.Add(1)
			go func() {
				defer reader.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := a.Block(labels[4+i%2]).Render(ctx); err != nil {
						t.Errorf("read %d: %v", i, err)
						return
					}
				}
			}()
			finished := make(chan struct{})
			go func() {
				writers.Wait()
				close(stop)
				reader.Wait()
				close(finished)
			}()
			select {
			case <-finished:
			case <-time.After(50 * time.Second):
				t.Fatal("writers and reader still running after 50 s: deadlocked")
			}
			for _, l := range labels[:4] {
				got, err := a.Block(l).Render(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(got, "\n"); n != 150 {
					t.Fatalf("block %s: %d lines, want 150", l, n)
				}
			}
		})
	}
}

// TestWriteBackEditOfAnEvictedCopy: a write-back edit whose copy of the
// block leaves the cache between its lookup and its lock, while a read
// loads another copy, is made to the copy the process reads next, and
// the limit is checked with it.
func TestWriteBackEditOfAnEvictedCopy(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 30})
	if _, err := a.Block("x").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	displace := true
	c.beforeWriteLock = func(e *entry) {
		if !displace || e.label != "x" {
			return
		}
		displace = false
		if _, err := a.Block("y").Doc(ctx); err != nil { // x leaves the cache
			t.Error(err)
		}
		if _, err := a.Block("x").Doc(ctx); err != nil { // another copy comes
			t.Error(err)
		}
	}
	if err := a.Block("x").Append(ctx, strings.Repeat("a", 20)); err != nil {
		t.Fatal(err)
	}
	if displace {
		t.Fatal("the write never came to its lock")
	}
	doc, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Render(); got != strings.Repeat("a", 20) {
		t.Fatalf("the block's document after the append: %q", got)
	}
	if err := a.Block("x").Append(ctx, strings.Repeat("b", 20)); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("an append past the limit: %v, want ErrLimit", err)
	}
	if got := reopenedText(t, c, path, "x"); got != strings.Repeat("a", 20) {
		t.Fatalf("reopened: %q", got)
	}
}

// TestWriteBackViewBesideAnotherCopysEdits: a write through a view whose
// copy of the block was displaced by another copy holding pending edits
// lands after them (the other copy is flushed first), its limit checked
// with them, and both persist.
func TestWriteBackViewBesideAnotherCopysEdits(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 20})
	old, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // x leaves the cache
		t.Fatal(err)
	}
	if err := a.Block("x").Append(ctx, "pending"); err != nil { // another copy, with an edit
		t.Fatal(err)
	}
	if err := old.AppendText(", and a line past the limit", blocks.Agent); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("write past the limit with the other copy's edit: %v, want ErrLimit", err)
	}
	if err := old.AppendText(", viewed", blocks.Agent); err != nil {
		t.Fatalf("write through the displaced view: %v", err)
	}
	doc, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Render(); got != "pending, viewed" {
		t.Fatalf("the block's document after the view's write: %q", got)
	}
	if got := reopenedText(t, c, path, "x"); got != "pending, viewed" {
		t.Fatalf("reopened: %q", got)
	}
}

// writeBackTwoBlocks opens a write-back store on a file with a cache of
// one document, and makes agent ada's blocks x and y as spec says.
func writeBackTwoBlocks(t *testing.T, spec BlockSpec) (*Store, *Agent, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c, err := Open(ctx, path, &Options{CacheSize: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := c.Agent("ada")
	for _, l := range []string{"x", "y"} {
		spec.Label = l
		if _, err := a.CreateBlock(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	return c, a, path
}

// appendWhileDisplaced arranges that the next write to ada's block x,
// between its lookup and its lock, finds its copy displaced (block y is
// read, with a cache of one) and another copy holding a pending append of
// 20 characters. The returned func ends the arrangement and fails t
// unless that happened and the write failed with ErrLimit.
func appendWhileDisplaced(t *testing.T, c *Store, a *Agent) (check func(what string, err error)) {
	t.Helper()
	ctx := context.Background()
	displace := true
	var appendErr error
	c.beforeWriteLock = func(e *entry) {
		if !displace || e.label != "x" {
			return
		}
		displace = false
		if _, err := a.Block("y").Doc(ctx); err != nil {
			t.Error(err)
		}
		appendErr = a.Block("x").Append(ctx, strings.Repeat("a", 20))
	}
	return func(what string, err error) {
		t.Helper()
		c.beforeWriteLock = nil
		if displace || appendErr != nil || !errors.Is(err, blocks.ErrLimit) {
			t.Fatalf("displaced: %v, append: %v, %s: %v (want ErrLimit)", !displace, appendErr, what, err)
		}
	}
}

// reopenedText closes c and returns ada's block label as a store opened
// again on path reads it.
func reopenedText(t *testing.T, c *Store, path, label string) string {
	t.Helper()
	ctx := context.Background()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Agent("ada").Block(label).Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestWriteBackBusyBlock: when another copy of the block is still claimed
// after each of holdCopy's flushes (here a claim no edit releases), a write
// through a displaced view is refused with ErrBlockBusy after
// maxStaleCopies flushes, applies nothing and leaves no claim; once the
// other copy is free, the same write lands.
func TestWriteBackBusyBlock(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 100})
	old, err := a.Block("x").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("y").Doc(ctx); err != nil { // x leaves the cache
		t.Fatal(err)
	}
	if err := a.Block("x").Append(ctx, "A"); err != nil { // another copy, cached
		t.Fatal(err)
	}
	var other *entry
	for _, e := range c.lru.Values() {
		if e.label == "x" {
			other = e
		}
	}
	if other == nil {
		t.Fatal("block x's other copy is not cached")
	}
	c.mu.Lock()
	c.claimed[other] = struct{}{}
	c.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- old.AppendText("B", blocks.Agent) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("write beside a busy copy did not return")
	}
	if !errors.Is(err, ErrBlockBusy) {
		t.Fatalf("write beside a copy that stays claimed: %v, want ErrBlockBusy", err)
	}
	c.mu.Lock()
	delete(c.claimed, other)
	left := len(c.claimed)
	c.mu.Unlock()
	if left != 0 {
		t.Fatalf("the refused write left %d copies claimed", left)
	}
	if got, err := a.Block("x").Render(ctx); err != nil || got != "A" {
		t.Fatalf("after the refused write: %q %v, want %q", got, err, "A")
	}
	if err := old.AppendText("B", blocks.Agent); err != nil {
		t.Fatalf("write once the other copy is free: %v", err)
	}
	if got := reopenedText(t, c, path, "x"); got != "AB" {
		t.Fatalf("reopened: %q, want %q", got, "AB")
	}
}
