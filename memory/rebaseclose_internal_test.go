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

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
)

// Close called by a goroutine that holds the block's lock while the
// rebase goroutine waits for that lock after its build: Close returns
// promptly; once the lock is let go, the abandoned helper takes it and
// lets it go, and no goroutine is left behind.
func TestCloseWhileHoldingTheBlocksLock(t *testing.T) {
	for _, phase := range []string{"before build", "after build"} {
		t.Run(phase, func(t *testing.T) {
			base := runtime.NumGoroutine()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "r.db")
			s, err := Open(ctx, path, &Options{CompactAfter: 4, HistoryLimit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			proceed := make(chan struct{})
			if phase == "after build" {
				rewriteUntilRebase(t, s, func() { <-proceed })
			}
			e := s.cachedEntry("ann", "notes")
			e.lock()
			if phase == "after build" {
				close(proceed)
			} else {
				// A write that finds the block due starts its rebase while
				// this goroutine holds the lock... the write itself would
				// wait: start the rebase by hand, as committed does.
				s.startRebase(e)
			}
			time.Sleep(50 * time.Millisecond) // the rebase goroutine waits for e.mu
			done := make(chan error, 1)
			go func() { done <- s.Close() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Close by the lock's holder still waiting after 5 s:\n%s", testenv.GoroutineDump())
			}
			e.unlock()
			if n := testenv.SettleGoroutines(base, 3*time.Second); n > base {
				t.Fatalf("%d goroutines after Close, %d before Open:\n%s", n, base, testenv.GoroutineDump())
			}
			if e.mu.TryLock() {
				e.mu.Unlock()
			} else {
				t.Fatal("the block's lock is still held after the helper was let go")
			}
			s2 := openPeer(t, path)
			if _, err := s2.Agent("ann").Block("notes").Render(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A store that closes after its rebases finished leaves no goroutine.
func TestNoGoroutineAfterClose(t *testing.T) {
	base := runtime.NumGoroutine()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), &Options{CompactAfter: 3, HistoryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		label := fmt.Sprintf("b%d", b)
		if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: label, Value: notesText(0), Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for b := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 60; i++ {
				if err := s.Agent("ann").Block(fmt.Sprintf("b%d", b)).SetText(ctx, notesText(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := testenv.SettleGoroutines(base, 3*time.Second); n > base {
		t.Fatalf("%d goroutines after Close, %d before Open:\n%s", n, base, testenv.GoroutineDump())
	}
}

// Flush waits for the rebases under way when it is called, not for those
// started after: with writers that keep starting new epochs on several
// blocks, waiting for none to run would keep it waiting while they write.
func TestFlushUnderContinuousRebases(t *testing.T) {
	for _, mode := range []struct {
		name   string
		opts   Options
		blocks int
		reps   int
	}{
		{"file-epochs options, 8 blocks", Options{CompactAfter: 3, HistoryLimit: 1}, 8, 18},
	} {
		t.Run(mode.name, func(t *testing.T) { flushUnderRebases(t, mode.opts, mode.blocks, mode.reps) })
	}
}

func flushUnderRebases(t *testing.T, opts Options, blocksN, reps int) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := func(b, i int) string {
		return strings.Repeat(fmt.Sprintf("block %d rewrite %d; ", b, i), reps)
	}
	for b := range blocksN {
		if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: fmt.Sprintf("b%d", b), Value: big(b, 0), Permission: blocks.Admin, CharLimit: 100000}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu     sync.Mutex
		writes int
		max    int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for b := range blocksN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := s.Agent("ann").Block(fmt.Sprintf("b%d", b)).SetText(ctx, big(b, i)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				writes++
				mu.Unlock()
			}
		}()
	}
	// Sample how many rebases run.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			s.mu.Lock()
			if n := len(s.rebasing); n > max {
				max = n
			}
			s.mu.Unlock()
		}
	}()
	time.Sleep(time.Second)
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ferr := s.Flush(fctx)
	cancel()
	took := time.Since(start)
	close(stop)
	wg.Wait()
	var epochs int64
	s.rdb.QueryRow(`SELECT sum(epoch) FROM blocks`).Scan(&epochs)
	t.Logf("Flush took %v (err %v); %d writes, %d epochs switched, up to %d rebases at once", took, ferr, writes, epochs, max)
	if ferr != nil {
		t.Fatalf("Flush under continuous writes: %v after %v", ferr, took)
	}
}
