package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/engram-go/engram/blocks"
)

// cachedLabels lists the labels of the cached documents, least recently
// used first, and what they weigh together.
func cachedLabels(c *Store) (labels []string, total int64) {
	for _, e := range c.lru.Values() {
		labels = append(labels, e.label)
		total += e.weight.Load()
	}
	return labels, total
}

// TestCacheBytesBoundsTheDocuments: past Options.CacheBytes the least
// recently used documents leave the cache, at a load or creation and at
// a write that grew a document past it; the newest always stays, a
// negative bound (or WriteBack) leaves only CacheSize, and nothing
// written is lost.
func TestCacheBytesBoundsTheDocuments(t *testing.T) {
	ctx := context.Background()
	const chars = 20_000
	text := func(i int) string { return fmt.Sprintf("%d:%s", i, strings.Repeat("x", chars)) }
	heavy := DocumentBytes(chars + 10)
	for _, tc := range []struct {
		name      string
		bound     int64
		writeBack bool
		most      int // heavy documents the cache may hold after a load
	}{
		{"two fit", 2*heavy + heavy/2, false, 2},
		{"two fit, but write-back: no byte bound", 2*heavy + heavy/2, true, 6},
		{"none fits", 1, false, 1},
		{"no byte bound", -1, false, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "w.db")
			c, err := Open(ctx, path, &Options{CacheBytes: tc.bound, WriteBack: tc.writeBack})
			if err != nil {
				t.Fatal(err)
			}
			a := c.Agent("ada")
			heavyCached := func() int {
				n := 0
				for _, e := range c.lru.Values() {
					if e.weight.Load() >= heavy/2 {
						n++
					}
				}
				return n
			}
			for i := range 6 {
				label := fmt.Sprint("b", i)
				if _, err := a.CreateBlock(ctx, BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit}); err != nil {
					t.Fatal(err)
				}
				// The creation evicted for what the earlier writes grew.
				if n := heavyCached(); n > tc.most {
					labels, total := cachedLabels(c)
					t.Fatalf("block %d created: cached %v weighing %d (%d heavy), bound %d", i, labels, total, n, tc.bound)
				}
				if err := a.Block(label).SetText(ctx, text(i)); err != nil {
					t.Fatal(err)
				}
				labels, total := cachedLabels(c)
				if labels[len(labels)-1] != label {
					t.Fatalf("after block %d: the newest, %s, is not cached: %v", i, label, labels)
				}
				// And the write that grew it past the bound, for it.
				if n := heavyCached(); n > tc.most {
					t.Fatalf("block %d written: cached %v weighing %d (%d heavy), bound %d", i, labels, total, n, tc.bound)
				}
			}
			// A load evicts for what the writes grew (a rendering is read
			// from its stored copy; Doc loads the document).
			if _, err := a.Block("b0").Doc(ctx); err != nil {
				t.Fatal(err)
			}
			labels, total := cachedLabels(c)
			if tc.bound > 0 && !tc.writeBack && total > max(tc.bound, heavy) {
				t.Fatalf("after a load: cached %v weighing %d, bound %d", labels, total, tc.bound)
			}
			if (tc.bound < 0 || tc.writeBack) && len(labels) != 6 {
				t.Fatalf("no byte bound: cached %v, want all six", labels)
			}
			for i := range 6 {
				got, err := a.Block(fmt.Sprint("b", i)).Render(ctx)
				if err != nil || got != text(i) {
					t.Fatalf("block %d: %d characters, %v; want %d", i, len(got), err, len(text(i)))
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			c, err = Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for i := range 6 {
				got, err := c.Agent("ada").Block(fmt.Sprint("b", i)).Render(ctx)
				if err != nil || got != text(i) {
					t.Fatalf("reopened, block %d: %d characters, %v", i, len(got), err)
				}
			}
		})
	}
}

// TestCacheBytesConcurrentWriters: writers on blocks that do not fit the
// bound together, evicting each other's documents as they go, lose no
// append.
func TestCacheBytesConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, filepath.Join(t.TempDir(), "w.db"), &Options{CacheBytes: 3 * DocumentBytes(2_000)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const writers, appends = 6, 40
	a := c.Agent("ada")
	for w := range writers {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: fmt.Sprint("w", w), CharLimit: blocks.MaxCharLimit}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range appends {
				if err := a.Block(fmt.Sprint("w", w)).Append(ctx, fmt.Sprintf("%03d%s\n", i, strings.Repeat("y", 96))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range writers {
		got, err := a.Block(fmt.Sprint("w", w)).Render(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(got, "\n"); n != appends {
			t.Fatalf("block w%d: %d appends, want %d", w, n, appends)
		}
	}
	if _, total := cachedLabels(c); total > 3*DocumentBytes(2_000)+DocumentBytes(4_000) {
		t.Fatalf("cached documents weigh %d", total)
	}
}

// TestEvictedDocumentIsFreed: a document that left the cache is not kept
// alive by it (golang-lru's thread-safe Cache kept the last one it
// evicted until its next eviction: a whole document pinned).
func TestEvictedDocumentIsFreed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "freed.db")
	o := &Options{CacheBytes: DocumentBytes(30_000)} // one of the two fits
	c, err := Open(ctx, path, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		label := fmt.Sprint("b", i)
		if _, err := c.Agent("ada").CreateBlock(ctx, BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit}); err != nil {
			t.Fatal(err)
		}
		if err := c.Agent("ada").Block(label).SetText(ctx, strings.Repeat("x", 20_000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = Open(ctx, path, o); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var first weak.Pointer[entry]
	func() {
		if err := c.Agent("ada").Block("b0").Append(ctx, "y"); err != nil {
			t.Fatal(err)
		}
		e := c.cachedEntry("ada", "b0")
		if e == nil {
			t.Fatal("b0 is not cached after a write")
		}
		first = weak.Make(e)
		if err := c.Agent("ada").Block("b1").Append(ctx, "y"); err != nil { // evicts b0
			t.Fatal(err)
		}
	}()
	if labels, _ := cachedLabels(c); len(labels) != 1 || labels[0] != "b1" {
		t.Fatalf("cached %v, want b1 alone", labels)
	}
	for range 10 {
		runtime.GC()
		if first.Value() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the evicted document is still alive")
}

// TestCacheBytesHoldsAcrossCatchUps: two stores on one file, the
// reader's cached documents growing by catching up with the writer's
// changes (merges, a rebase onto a new epoch): the bound holds against
// the documents' real sizes, not only the sizes they were weighed at.
func TestCacheBytesHoldsAcrossCatchUps(t *testing.T) {
	ctx := context.Background()
	for _, rebase := range []bool{false, true} {
		t.Run(fmt.Sprint("rebase=", rebase), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "two.db")
			bound := int64(4 << 20)
			w, err := Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			r, err := Open(ctx, path, &Options{CacheBytes: bound})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			const n = 8
			for i := range n {
				if _, err := w.Agent("ada").CreateBlock(ctx, BlockSpec{Label: fmt.Sprint("b", i), CharLimit: blocks.MaxCharLimit}); err != nil {
					t.Fatal(err)
				}
				if _, err := r.Agent("ada").Block(fmt.Sprint("b", i)).Doc(ctx); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 3 {
				for i := range n {
					b := w.Agent("ada").Block(fmt.Sprint("b", i))
					if err := b.Append(ctx, strings.Repeat("x", 10_000)); err != nil {
						t.Fatal(err)
					}
					if rebase {
						if err := b.Rebase(ctx); err != nil {
							t.Fatal(err)
						}
					}
				}
				for i := range n {
					if _, err := r.Agent("ada").Block(fmt.Sprint("b", i)).Doc(ctx); err != nil {
						t.Fatal(err)
					}
				}
				var real, counted int64
				for _, e := range r.lru.Values() {
					real += DocumentBytes(e.doc.Size())
					counted += e.weight.Load()
				}
				if real > bound+DocumentBytes(30_000) {
					t.Fatalf("round %d: %d cached documents really weigh %d (counted %d), bound %d", round, r.lru.Len(), real, counted, bound)
				}
			}
		})
	}
}
