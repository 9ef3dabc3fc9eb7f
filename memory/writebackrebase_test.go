package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// A write-back store's acknowledged appends survive another
// store's rebase made while they were unflushed, whoever wrote in between.
func TestWriteBackEditsSurviveAnotherStoresRebase(t *testing.T) {
	testWriteBackAcrossRebase(t, filepath.Join(t.TempDir(), "wb.db"))
}

func TestWriteBackEditsSurviveAnotherStoresRebasePostgres(t *testing.T) {
	testWriteBackAcrossRebase(t, pgtest.Start(t).NewDatabase(t))
}

// testWriteBackAcrossRebase runs the scenario on the store at path (a
// file or a PostgreSQL URL).
func testWriteBackAcrossRebase(t *testing.T, path string) {
	ctx := context.Background()
	a, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	b := openFile(t, path, nil)
	if _, err := b.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes"}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		s    *memory.Store
		text string
	}{{a, "a0\n"}, {b, "b1\n"}, {a, "a2\n"}} {
		if err := step.s.Agent("a").Block("notes").Append(ctx, step.text); err != nil {
			t.Fatal(err)
		}
	}
	// a0 and b1 are concurrent appends: automerge orders them by actor.
	// Whichever order, the write-back store reads it before the rebase,
	// and every store reads the same after.
	d, err := a.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := d.Render()
	if want != "a0\nb1\na2\n" && want != "b1\na0\na2\n" {
		t.Fatalf("before the rebase the write-back store reads %q", want)
	}
	if err := b.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	// The store's read switches to the new epoch. (On PostgreSQL a store
	// learns of another's commit by notification, so its next read may
	// still miss the rebase; its flush does not.)
	if !strings.HasPrefix(path, "postgres") {
		if d, err = a.Agent("a").Block("notes").Doc(ctx); err != nil {
			t.Fatal(err)
		}
		if got := d.Render(); got != want {
			t.Errorf("after the rebase the write-back store reads %q, want %q", got, want)
		}
		if ep, _, _ := epochOf(t, a, "a", "notes"); ep != 1 {
			t.Fatalf("epoch %d after the rebase", ep)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	cold := openFile(t, path, nil)
	if d, err = cold.Agent("a").Block("notes").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	if got := d.Render(); got != want {
		t.Fatalf("reopened, the block reads %q, want %q", got, want)
	}
}

// Several stores on one file, write-back and write-through, append
// distinct lines from several goroutines each while the block is rebased
// in a loop, by a write-through and a write-back store in turn. Every
// acknowledged append is in the block exactly once after every store
// closed (without error) and the file is reopened.
func TestWriteBackEditsSurviveConcurrentRebases(t *testing.T) {
	testWriteBackConcurrentRebases(t, filepath.Join(t.TempDir(), "wb.db"))
}

func TestWriteBackEditsSurviveConcurrentRebasesPostgres(t *testing.T) {
	testWriteBackConcurrentRebases(t, pgtest.Start(t).NewDatabase(t))
}

func testWriteBackConcurrentRebases(t *testing.T, path string) {
	ctx := context.Background()
	const goroutines, minRebases = 2, 6
	var rebased atomic.Int64
	appends := 60 / raceScale
	opts := []*memory.Options{{WriteBack: true}, {WriteBack: true}, {WriteBack: true}, nil}
	stores := make([]*memory.Store, len(opts))
	for i, o := range opts {
		c, err := memory.Open(ctx, fresh(path), o)
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = c
	}
	if _, err := stores[3].Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	for s, c := range stores {
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// At least minRebases rebases land among the appends.
				for i := 0; i < appends || (rebased.Load() < minRebases && i < 20*appends); i++ {
					line := fmt.Sprintf("s%d-g%d-%03d", s, g, i)
					if err := c.Agent("a").Block("notes").Append(ctx, line+"\n"); err != nil {
						t.Errorf("append %s: %v", line, err)
						return
					}
					mu.Lock()
					acked = append(acked, line)
					mu.Unlock()
					if opts[s] != nil && i%7 == 0 {
						// A write-back store flushes now and then, so its
						// writes interleave with the others' in the rows.
						if err := c.Flush(ctx); err != nil {
							t.Errorf("flush store %d: %v", s, err)
						}
					}
				}
			}()
		}
	}
	stop := make(chan struct{})
	rebases := make(chan int)
	go func() {
		n := 0
		defer func() { rebases <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Store 3 writes through, store 0 writes back (its Rebase
			// writes its own pending edits first).
			if err := stores[[]int{3, 0}[n%2]].Agent("a").Block("notes").Rebase(ctx); err != nil {
				t.Errorf("rebase %d: %v", n, err)
				return
			}
			n++
			rebased.Add(1)
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	n := <-rebases
	for s, c := range stores {
		if err := c.Close(); err != nil {
			t.Errorf("close store %d: %v", s, err)
		}
	}
	cold := openFile(t, path, nil)
	d, err := cold.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := d.Text()
	counts := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		if l != "" {
			counts[l]++
		}
	}
	lost := 0
	for _, l := range acked {
		switch counts[l] {
		case 1:
		case 0:
			lost++
			t.Errorf("acknowledged line %s lost", l)
		default:
			t.Errorf("line %s present %d times", l, counts[l])
		}
	}
	ackedSet := map[string]bool{}
	for _, l := range acked {
		ackedSet[l] = true
	}
	for l := range counts {
		if !ackedSet[l] {
			t.Errorf("line %q was never acknowledged", l)
		}
	}
	if lost > 0 || len(counts) != len(acked) {
		t.Fatalf("%d of %d acknowledged appends lost (%d distinct lines present) across %d rebases", lost, len(acked), len(counts), n)
	}
	if n < minRebases {
		t.Fatalf("only %d rebases ran: the test did not exercise epoch switches", n)
	}
	t.Logf("%d appends, %d rebases", len(acked), n)
}

// A write-back store with a one-document cache, whose blocks are evicted
// (and so flushed) between appends while another store on the same
// database appends to them too and rebases them, loses no acknowledged
// append.
func TestWriteBackEvictionAndRebaseLoseNothing(t *testing.T) {
	writeBackEvictRebase(t, filepath.Join(t.TempDir(), "wb.db"))
}

func TestWriteBackEvictionAndRebaseLoseNothingPostgres(t *testing.T) {
	writeBackEvictRebase(t, pgtest.Start(t).NewDatabase(t))
}

func writeBackEvictRebase(t *testing.T, path string) {
	ctx := context.Background()
	a, err := memory.Open(ctx, fresh(path), &memory.Options{WriteBack: true, CacheSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := openFile(t, path, nil)
	labels := []string{"x", "y", "z"}
	for _, l := range labels {
		if _, err := b.CreateBlock(ctx, "a", memory.BlockSpec{Label: l, CharLimit: 100000}); err != nil {
			t.Fatal(err)
		}
	}
	acked := map[string][]string{}
	for i := range 60 {
		l := labels[i%3]
		s := a
		if i%5 == 0 {
			s = b
		}
		line := fmt.Sprintf("%s-%d\n", l, i)
		if err := s.AppendToBlock(ctx, "a", l, line); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		acked[l] = append(acked[l], line)
		if i%7 == 3 {
			if err := b.Rebase(ctx, "a", labels[(i+1)%3]); err != nil {
				t.Fatalf("rebase: %v", err)
			}
		}
		if i%11 == 5 {
			if err := a.Rebase(ctx, "a", labels[(i+2)%3]); err != nil {
				t.Fatalf("rebase a: %v", err)
			}
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cold := openFile(t, path, nil)
	for _, l := range labels {
		d, err := cold.GetBlock(ctx, "a", l)
		if err != nil {
			t.Fatal(err)
		}
		got := d.Render()
		for _, line := range acked[l] {
			if n := strings.Count(got, line); n != 1 {
				t.Errorf("block %s: %q %d times", l, line, n)
			}
		}
	}
}
