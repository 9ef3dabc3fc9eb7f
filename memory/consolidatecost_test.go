package memory_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// templated is n texts of one template (ticket, floor, error code): each
// shares most of its terms with many others, the worst case of MinHash
// bands.
func templated(from, n int) []memory.ArchivalEntry {
	out := make([]memory.ArchivalEntry, n)
	for i := range out {
		k := from + i
		out[i] = memory.ArchivalEntry{Content: fmt.Sprintf("ticket %d: the printer on floor %d reports error code %d after the nightly update", k, k%7, k%13)}
	}
	return out
}

// TestConsolidationRoundCostFollowsWindow: over an agent's 20,000
// templated entries, a round of MaxEntries 50 reads its window and the
// candidates its entries could match (the band index), not every entry:
// before any round (the unexamined entries come first), after a whole
// pass, and for new entries past it; on SQLite and PostgreSQL.
func TestConsolidationRoundCostFollowsWindow(t *testing.T) {
	n := testenv.Scale(5000, 20000)
	if testenv.Race && !testenv.Long() {
		// Under the race detector 2,000: still past the bound below, so a
		// round reading every entry fails the test.
		n = 2000
	}
	const window = 50
	// Each window entry has at most maxBucket (64) older candidates per
	// band (16 bands), and a cluster's older members are read up to
	// MaxClusterSize+1: a bound independent of the agent's size.
	const bound = window + 16*64 + 33
	for _, tg := range backfillTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			s := openDedup(t, tg.url, nil)
			arch := s.Agent("ada").Archival()
			out, err := arch.InsertBatch(ctx, templated(0, n), nil)
			if err != nil {
				t.Fatal(err)
			}
			after := out[n-window-1].ID
			c0 := cpuTime()
			rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{After: after, MaxEntries: window, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("first round, After near the end: %d examined, %d read, CPU %v", rep.Examined, rep.Live, cpuTime()-c0)
			if rep.Examined != window || rep.Live > bound {
				t.Fatalf("a round of %d entries over %d examined %d and read %d entries (want %d, at most %d)", window, n, rep.Examined, rep.Live, window, bound)
			}
			c0 = cpuTime()
			whole, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{Resume: true, MaxEntries: n, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the rest, one round: %d examined, %d read, %d clusters, %d skipped, CPU %v, %v", whole.Examined, whole.Live, len(whole.Clusters), len(whole.Skipped), cpuTime()-c0, whole.Elapsed)
			// A dry run records the members of the clusters it only
			// reported as unsettled: a resumed round examines them again
			// (and proposes them).
			if whole.Examined < n-window || whole.Examined > n {
				t.Fatalf("the resumed round examined %d entries, want the %d not examined and at most the dry run's clusters again", whole.Examined, n-window)
			}
			for _, o := range []*memory.ConsolidateOptions{
				{After: after, MaxEntries: window, DryRun: true},
				{Resume: true, MaxEntries: window, DryRun: true},
			} {
				if o.Resume {
					if _, err := arch.InsertBatch(ctx, templated(n, window), nil); err != nil {
						t.Fatal(err)
					}
				}
				c0 = cpuTime()
				rep, err := arch.Consolidate(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("round %+v: %d examined, %d read, CPU %v, %v", *o, rep.Examined, rep.Live, cpuTime()-c0, rep.Elapsed)
				if rep.Examined != window || rep.Live > bound {
					t.Fatalf("round %+v over %d entries examined %d and read %d (want %d, at most %d)", *o, n, rep.Examined, rep.Live, window, bound)
				}
			}
		})
	}
}
