package serve

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

type countingStamps struct {
	calls map[string]int
}

func (c *countingStamps) BlocksStamp(_ context.Context, agent string) (memory.BlocksStamp, error) {
	c.calls[agent]++
	return memory.BlocksStamp{Seq: int64(c.calls[agent])}, nil
}

// The /sync connections of one agent share a stamp query per period;
// another agent's is its own, and an old one is asked again.
func TestStampShare(t *testing.T) {
	ctx := context.Background()
	c := &countingStamps{calls: map[string]int{}}
	s := &stampShare{src: c, every: 50 * time.Millisecond, memo: map[string]*stampRead{}}
	for _, tc := range []struct {
		agent string
		wait  time.Duration
		calls int
	}{
		{"ada", 0, 1}, {"ada", 0, 1}, {"bob", 0, 1}, {"ada", 60 * time.Millisecond, 2}, {"ada", 0, 2},
	} {
		time.Sleep(tc.wait)
		if _, err := s.BlocksStamp(ctx, tc.agent); err != nil {
			t.Fatal(err)
		}
		if c.calls[tc.agent] != tc.calls {
			t.Errorf("%s after %v: %d queries, want %d", tc.agent, tc.wait, c.calls[tc.agent], tc.calls)
		}
	}
}

// signalledStamps is a store that signals its changes: fire closes the
// channel BlocksChanged handed out. BlocksStamp counts its calls, holds
// each until gate lets it go (when set), and fires during the read when
// fireDuring is set.
type signalledStamps struct {
	mu         sync.Mutex
	ch         chan struct{}
	calls      atomic.Int64
	gate       chan struct{}
	fireDuring atomic.Bool
}

func (s *signalledStamps) BlocksChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signalledStamps) fire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

func (s *signalledStamps) BlocksStamp(ctx context.Context, agent string) (memory.BlocksStamp, error) {
	n := s.calls.Add(1)
	if s.fireDuring.Swap(false) {
		s.fire()
	}
	if s.gate != nil {
		<-s.gate
	}
	return memory.BlocksStamp{Seq: n}, nil
}

// With a store that signals its changes, a stamp read is shared until the
// next signal, however young: after a signal (also one that lands during
// a read) the next caller reads again; the connections one signal wakes,
// 200 at once, share one read.
func TestStampShareSignal(t *testing.T) {
	ctx := context.Background()
	c := &signalledStamps{}
	s := &stampShare{src: c, every: time.Hour, memo: map[string]*stampRead{}}
	if s.BlocksChanged() == nil {
		t.Fatal("the store's signal is hidden")
	}
	read := func() memory.BlocksStamp {
		st, err := s.BlocksStamp(ctx, "ada")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	for range 2 {
		if read().Seq != 1 {
			t.Fatalf("without a signal: %d reads, want 1", c.calls.Load())
		}
	}
	c.fire()
	if got := read().Seq; got != 2 {
		t.Fatalf("after a signal: stamp of read %d, want 2 (a stale memo)", got)
	}
	// A signal during a read: that read is not shared with later callers.
	c.fire()
	c.fireDuring.Store(true)
	read()
	if got := read().Seq; got != 4 {
		t.Fatalf("after a signal during a read: stamp of read %d, want 4", got)
	}
	// One signal, 200 connections: one read.
	c.fire()
	c.gate = make(chan struct{})
	var wg sync.WaitGroup
	seqs := make([]int64, 200)
	for i := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seqs[i] = read().Seq
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(c.gate)
	wg.Wait()
	if n := c.calls.Load(); n != 5 {
		t.Errorf("200 connections after one signal: %d reads, want 1", n-4)
	}
	for _, q := range seqs {
		if q != 5 {
			t.Fatalf("a connection got stamp %d, want 5", q)
		}
	}
}

// A token's /sync connections share one budget, and closing them all and
// reconnecting does not give a fresh one until it would have refilled;
// another token's is its own; idle ones are dropped.
func TestSyncBudgetPerToken(t *testing.T) {
	h := &Handler{opts: Options{SyncOpsRate: 1000, SyncOpsBurst: 100}, syncsBy: map[int64]int{}, budgets: map[int64]*tokenBudget{}}
	h.syncsBy[1] = 2
	a, b := h.syncBudget(1), h.syncBudget(1)
	if a != b {
		t.Fatal("two connections of one token got two budgets")
	}
	if other := h.syncBudget(2); other == a {
		t.Fatal("two tokens share a budget")
	}
	h.syncsBy[1] = 0
	h.budgets[1].idleSince = time.Now()
	if again := h.syncBudget(1); again != a {
		t.Fatal("reconnecting right away gave a fresh budget")
	}
	h.syncsBy[1] = 0
	h.budgets[1].idleSince = time.Now().Add(-time.Hour)
	h.syncBudget(3)
	if _, ok := h.budgets[1]; ok {
		t.Fatal("an hour-idle budget was kept")
	}
}
