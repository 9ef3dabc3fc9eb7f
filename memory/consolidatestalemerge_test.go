package memory_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestMergeOfADeletedEntryNeverSupersedesItsSuccessorID: a pending merge
// names entry ids; when one of them is deleted, the merge is withdrawn, so
// an entry that later takes the same id (SQLite reuses the highest id once
// its row is gone) is never superseded by approving it: the approval fails
// and changes nothing.
func TestMergeOfADeletedEntryNeverSupersedesItsSuccessorID(t *testing.T) {
	for _, tg := range backfillTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			s := openDedup(t, tg.url, &memory.Options{KeepDuplicates: true})
			ag := s.Agent("ag")
			in, err := ag.Archival().InsertBatch(ctx, distinctFacts(1, 2), nil)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ag.Archival().Consolidate(ctx, nil)
			if err != nil || len(rep.Proposals) != 1 {
				t.Fatalf("proposals %v, %v", rep.Proposals, err)
			}
			if err := ag.Archival().Delete(ctx, in[1].ID); err != nil {
				t.Fatal(err)
			}
			other, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: "an unrelated fact about the weather in Lisbon"})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("deleted %d, new entry %d", in[1].ID, other.ID)
			if err := ag.ApproveProposal(ctx, rep.Proposals[0]); err == nil {
				t.Fatalf("approving a merge of deleted entry %d succeeded", in[1].ID)
			}
			got, err := ag.Archival().Get(ctx, other.ID)
			if err != nil || got.ValidTo != nil {
				t.Fatalf("entry %d after the approval: %+v, %v (want live, untouched)", other.ID, got, err)
			}
			if n := liveCount(t, s, "ag"); n != 2 {
				t.Fatalf("%d live entries, want 2", n)
			}
		})
	}
}
