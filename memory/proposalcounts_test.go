package memory_test

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestProposalCountsIncludeArchivalMerges: the counts a polling view
// reads (Admin.ProposalCounts) include the proposals on an agent's
// archival memory, so that a merge proposal made by consolidation moves
// them like a proposal on a block does.
func TestProposalCountsIncludeArchivalMerges(t *testing.T) {
	ctx := context.Background()
	c := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	arch := c.Agent("eve").Archival()
	for _, s := range []string{"Lunch is at one.", "lunch is at one", "Tea is at four!", "tea is at four"} {
		if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := arch.Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 2 {
		t.Fatalf("Consolidate = %+v, %v", rep, err)
	}
	if err := c.Agent("eve").RejectProposal(ctx, rep.Proposals[0], ""); err != nil {
		t.Fatal(err)
	}
	pc, err := c.Admin().ProposalCounts(ctx)
	if want := map[string]memory.ProposalCount{"eve": {All: 2, Pending: 1}}; err != nil || !maps.Equal(pc, want) {
		t.Errorf("ProposalCounts = %v, %v; want %v", pc, err, want)
	}
}
