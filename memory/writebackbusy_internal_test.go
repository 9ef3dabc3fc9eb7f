package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
)

// TestWriteBackAppendersBesideEvictions: 24 goroutines append to one
// block through Block.Append while readers of two other blocks evict it
// from a cache of one document and Flush and Persist run beside. No
// append fails (an appender whose copy was displaced flushes the copies
// loaded since and is not starved by the writers queued on them), and
// every acknowledged append is in the reopened block once. (With the
// claim made after the flushed copy's lock was let go, and 8 flushes,
// ErrBlockBusy came once in 4 to 51 rounds under -race.)
func TestWriteBackAppendersBesideEvictions(t *testing.T) {
	rounds := testenv.Scale(4, 60)
	deadline := time.Now().Add(time.Duration(testenv.Scale(40, 600)) * time.Second)
	for round := range rounds {
		if time.Now().After(deadline) {
			t.Logf("%d rounds", round)
			return
		}
		appendersBesideEvictions(t, round)
		if t.Failed() {
			return
		}
	}
}

func appendersBesideEvictions(t *testing.T, round int) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("wb%d.db", round))
	c := openForTest(t, path, &Options{CacheSize: 1, WriteBack: true})
	a := c.Agent("ada")
	for _, l := range []string{"x", "y", "z"} {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: 500_000}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var acked []string
	var failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var bg, writers sync.WaitGroup
	const appenders, appends = 24, 40
	for g := range appenders {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range appends {
				tok := fmt.Sprintf("<a%d-%d>", g, i)
				if err := a.Block("x").Append(ctx, tok); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mu.Lock()
				acked = append(acked, tok)
				mu.Unlock()
			}
		}()
	}
	const readers = 3
	bg.Add(readers + 1)
	for range readers {
		go func() {
			defer bg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = a.Block([]string{"y", "z"}[i%2]).Doc(ctx)
			}
		}()
	}
	go func() {
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if i%2 == 0 {
				_ = c.Flush(ctx)
			} else {
				_ = a.Block("x").Persist(ctx)
			}
		}
	}()
	writers.Wait()
	close(stop)
	bg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("round %d did not finish in time", round)
	}
	got := reopenedText(t, c, path, "x")
	missing, dup := 0, 0
	for _, tok := range acked {
		switch strings.Count(got, tok) {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if failed.Load() > 0 || missing > 0 || dup > 0 {
		t.Errorf("round %d: %d appends failed (first: %v); reopened: %d of %d acknowledged missing, %d twice",
			round, failed.Load(), firstErr.Load(), missing, len(acked), dup)
	}
}

// TestWriteBackDeletedCopyBesideLive: a copy of a block holding a pending
// write-back edit, then the block deleted and made again under its label,
// by this store or by a second one on the file. Writes to the new block
// (appends, a view of it) land, the old view's write is refused, and
// Flush and Close do not fail on the old copy's edits, which are not in
// the reopened block.
func TestWriteBackDeletedCopyBesideLive(t *testing.T) {
	for _, bySecond := range []bool{false, true} {
		t.Run(fmt.Sprint("second store ", bySecond), func(t *testing.T) {
			ctx := context.Background()
			c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 10_000, Permission: blocks.Admin})
			if err := c.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			old, err := a.Block("x").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := old.AppendText("<dead>", blocks.Agent); err != nil {
				t.Fatal(err)
			}
			del := a
			if bySecond {
				if err := c.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if err := old.AppendText("<dead2>", blocks.Agent); err != nil {
					t.Fatal(err)
				}
				c2 := openForTest(t, path, nil)
				defer c2.Close()
				del = c2.Agent("ada")
			}
			if err := del.Block("x").Delete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := del.CreateBlock(ctx, BlockSpec{Label: "x", CharLimit: 10_000, Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Block("y").Doc(ctx); err != nil {
				t.Fatal(err)
			}
			var errs []string
			if err := a.Block("x").Append(ctx, "<live1>"); err != nil {
				errs = append(errs, "append: "+err.Error())
			}
			live, err := a.Block("x").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := old.AppendText("<dead3>", blocks.Agent); err == nil {
				errs = append(errs, "write through the deleted block's view succeeded")
			}
			if err := live.AppendText("<live2>", blocks.Agent); err != nil {
				errs = append(errs, "append through a view of the new block: "+err.Error())
			}
			if err := a.Block("x").Append(ctx, "<live3>"); err != nil {
				errs = append(errs, "append after: "+err.Error())
			}
			if err := c.Flush(ctx); err != nil {
				errs = append(errs, "flush: "+err.Error())
			}
			got := reopenedText(t, c, path, "x")
			if got != "<live1><live2><live3>" {
				errs = append(errs, fmt.Sprintf("reopened: %q, want the new block's three appends", got))
			}
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
		})
	}
}

// TestWriteBackPersistRacingClose: Block.Persist and Store.Flush called
// while Close closes an in-memory write-back store (an append pending
// before each call) return nil or an error matching ErrClosed.
func TestWriteBackPersistRacingClose(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	bad := map[string]int{}
	for round := range testenv.Scale(40, 200) {
		c := openForTest(t, ":memory:", &Options{CacheSize: 1, WriteBack: true})
		a := c.Agent("ada")
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: "x", CharLimit: 100_000}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g, op := range []string{"persist", "flush"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					err := a.Block("x").Append(ctx, fmt.Sprintf("<%d-%d>", g, i))
					what := "append"
					if err == nil {
						what = op
						if op == "persist" {
							err = a.Block("x").Persist(ctx)
						} else {
							err = c.Flush(ctx)
						}
					}
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							mu.Lock()
							bad[what+": "+err.Error()]++
							mu.Unlock()
						}
						return
					}
				}
			}()
		}
		for range 20 + round%50 {
			_, _ = a.Block("x").Render(ctx)
		}
		_ = c.Close()
		wg.Wait()
	}
	for m, n := range bad {
		t.Errorf("%d× racing Close, not ErrClosed: %s", n, m)
	}
}
