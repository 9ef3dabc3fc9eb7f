package memory_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/memory"
)

// A cluster that a round found but did not propose (a dry run: the
// archival_consolidate tool's, the CLI's --dry-run; or the agent at its
// pending-proposal cap) is proposed by the next round that resumes (the
// background loop), not passed over as examined.
func TestResumedRoundProposesWhatEarlierRoundsLeftUnproposed(t *testing.T) {
	ctx := context.Background()
	for _, tg := range backfillTargets(t) {
		t.Run(tg.name+"/dry run", func(t *testing.T) {
			s := openDedup(t, tg.url+dbSuffix(tg.name, "dry"), &memory.Options{KeepDuplicates: true})
			arch := s.Agent("ag-dry").Archival()
			if _, err := arch.InsertBatch(ctx, distinctFacts(3, 2), nil); err != nil {
				t.Fatal(err)
			}
			rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{DryRun: true})
			if err != nil || len(rep.Clusters) != 3 {
				t.Fatalf("dry run: %d clusters, %v", len(rep.Clusters), err)
			}
			rep, err = arch.Consolidate(ctx, &memory.ConsolidateOptions{Resume: true})
			if err != nil || len(rep.Proposals) != 3 {
				t.Fatalf("resumed round after a dry run: %d proposals (examined %d), %v; want 3", len(rep.Proposals), rep.Examined, err)
			}
			rep, err = arch.Consolidate(ctx, &memory.ConsolidateOptions{Resume: true})
			if err != nil || len(rep.Proposals) != 0 || rep.Examined != 0 {
				t.Fatalf("a second resumed round: %d proposals, %d examined, %v; want nothing left", len(rep.Proposals), rep.Examined, err)
			}
		})
		t.Run(tg.name+"/pending cap", func(t *testing.T) {
			s := openDedup(t, tg.url+dbSuffix(tg.name, "cap"), &memory.Options{KeepDuplicates: true, MaxPendingProposals: 1})
			ag := s.Agent("ag-cap")
			if _, err := ag.Archival().InsertBatch(ctx, distinctFacts(2, 2), nil); err != nil {
				t.Fatal(err)
			}
			rep, err := ag.Archival().Consolidate(ctx, &memory.ConsolidateOptions{Resume: true})
			if err != nil || len(rep.Proposals) != 1 || len(rep.Clusters) != 2 {
				t.Fatalf("round at the cap: %d proposals of %d clusters, %v", len(rep.Proposals), len(rep.Clusters), err)
			}
			if err := ag.ApproveProposal(ctx, rep.Proposals[0]); err != nil {
				t.Fatal(err)
			}
			rep, err = ag.Archival().Consolidate(ctx, &memory.ConsolidateOptions{Resume: true})
			if err != nil || len(rep.Proposals) != 1 {
				t.Fatalf("resumed round once below the cap: %d proposals (examined %d), %v; want 1", len(rep.Proposals), rep.Examined, err)
			}
		})
	}
}

// dbSuffix keeps two subtests' SQLite files apart (a PostgreSQL target is
// one database per test, shared by its subtests: agents differ there).
func dbSuffix(engine, name string) string {
	if engine == "sqlite" {
		return "." + name
	}
	return ""
}
