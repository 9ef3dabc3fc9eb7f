package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/memory"
)

// distinctFacts are n facts, each stored copies times: n clusters of
// copies exact duplicates.
func distinctFacts(n, copies int) []memory.ArchivalEntry {
	w := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	word := func(i int) string { return w[i%len(w)] + fmt.Sprint(i) }
	var out []memory.ArchivalEntry
	for range copies {
		for i := range n {
			out = append(out, memory.ArchivalEntry{Content: fmt.Sprintf("%s %s %s %s likes %s", word(i), word(i+7), word(i+13), word(i+29), word(i+31))})
		}
	}
	return out
}

// TestConcurrentRoundsProposeEachMergeOnce: rounds running at once on one
// agent (two goroutines here; two processes or two serve loops alike)
// examine the same window, and each cluster still becomes one pending
// proposal, not one per round.
func TestConcurrentRoundsProposeEachMergeOnce(t *testing.T) {
	for _, tg := range backfillTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			s := openDedup(t, tg.url, &memory.Options{KeepDuplicates: true})
			ag := s.Agent("ag")
			if _, err := ag.Archival().InsertBatch(ctx, distinctFacts(100, 3), nil); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := ag.Archival().Consolidate(ctx, &memory.ConsolidateOptions{Resume: true}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if n := pendingMerges(t, s, "ag"); n != 100 {
				t.Fatalf("%d pending merges after 4 concurrent rounds, want 100 (one per cluster)", n)
			}
		})
	}
}

// TestRejectedMergeIsNotProposedAgain: a round that examines the same
// entries again (After 0: the archival_consolidate tool, the CLI without
// --resume) does not propose a merge someone rejected, nor applies it with
// ApplyExact; a cluster that gained a member is proposed.
func TestRejectedMergeIsNotProposedAgain(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: true})
	ag := s.Agent("ag")
	if _, err := ag.Archival().InsertBatch(ctx, distinctFacts(1, 2), nil); err != nil {
		t.Fatal(err)
	}
	rep, err := ag.Archival().Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 1 {
		t.Fatalf("first round: %v proposals, %v", rep.Proposals, err)
	}
	if err := ag.RejectProposal(ctx, rep.Proposals[0], "these are two events"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*memory.ConsolidateOptions{nil, {ApplyExact: true}} {
		rep, err = ag.Archival().Consolidate(ctx, o)
		if err != nil || len(rep.Proposals) != 0 || rep.Applied != 0 || len(rep.Clusters) != 1 ||
			!strings.Contains(rep.Clusters[0].Reason, "rejected") {
			t.Fatalf("round after the rejection (%+v): proposals %v, applied %d, clusters %+v, %v", o, rep.Proposals, rep.Applied, rep.Clusters, err)
		}
	}
	if n := liveCount(t, s, "ag"); n != 2 {
		t.Fatalf("%d live entries, want 2 (the rejected merge not applied)", n)
	}
	if _, err := ag.Archival().InsertBatch(ctx, distinctFacts(1, 1), nil); err != nil {
		t.Fatal(err)
	}
	rep, err = ag.Archival().Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 1 || len(rep.Clusters[0].Merge.Sources) != 3 {
		t.Fatalf("a cluster that gained a member: proposals %v, clusters %+v, %v", rep.Proposals, rep.Clusters, err)
	}
}
