package serve

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

type countingStamps struct {
	syncrepo.Store
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
	s := &stampShare{Store: c, every: 50 * time.Millisecond, memo: map[string]stampMemo{}}
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
