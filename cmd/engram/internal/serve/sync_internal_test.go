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
