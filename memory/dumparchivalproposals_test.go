package memory_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestDumpKeepsArchivalProposals: consolidation's merge proposals (op
// merge_archival, on no block) survive Export and Import, their source
// entry ids renumbered with the entries, and can be approved in the
// target, which supersedes the imported sources.
func TestDumpKeepsArchivalProposals(t *testing.T) {
	ctx := context.Background()
	src := openDedup(t, filepath.Join(t.TempDir(), "src.db"), &memory.Options{KeepDuplicates: true})
	ada := src.Agent("ada")
	for _, s := range []string{"The meeting moved to Friday at noon.", "the meeting moved to friday, at noon", "Unrelated: ada likes tea."} {
		if _, err := ada.Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := ada.Archival().Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 1 {
		t.Fatalf("Consolidate = %+v, %v; want one proposal", rep, err)
	}
	// A decided one too.
	for _, s := range []string{"Bob's birthday is in May.", "bob's birthday is in may"} {
		if _, err := ada.Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	rep2, err := ada.Archival().Consolidate(ctx, &memory.ConsolidateOptions{After: 3})
	if err != nil || len(rep2.Proposals) != 1 {
		t.Fatalf("second Consolidate = %+v, %v; want one proposal", rep2, err)
	}
	if err := ada.RejectProposal(ctx, rep2.Proposals[0], "no"); err != nil {
		t.Fatal(err)
	}
	d, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Proposals) != 2 {
		t.Fatalf("dump holds %d proposals, want 2 (merge_archival)", len(d.Proposals))
	}
	// The target holds entries of its own: the ids move.
	dst := openDedup(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	for _, s := range []string{"zed one", "zed two", "zed three"} {
		if _, err := dst.Agent("zed").Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	ir, err := dst.Import(ctx, d)
	if err != nil || ir.Proposals != 2 {
		t.Fatalf("Import = %+v, %v; want 2 proposals", ir, err)
	}
	ps, err := dst.Agent("ada").Proposals(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Proposals = %d, %v; want 2", len(ps), err)
	}
	var pending memory.Proposal
	for _, p := range ps {
		if p.Merge == nil || p.Owner != "ada" || p.Label != "" {
			t.Fatalf("imported proposal %+v: want a merge on ada's archival memory", p)
		}
		if p.Status == "pending" {
			pending = p
		} else if p.Status != "rejected" {
			t.Fatalf("imported proposal status %q", p.Status)
		}
	}
	var contents []string
	for _, id := range pending.Merge.Sources {
		e, err := dst.Agent("ada").Archival().Get(ctx, id)
		if err != nil {
			t.Fatalf("source %d of the imported proposal: %v", id, err)
		}
		contents = append(contents, e.Content)
	}
	slices.Sort(contents)
	if want := []string{"The meeting moved to Friday at noon.", "the meeting moved to friday, at noon"}; !slices.Equal(contents, want) {
		t.Fatalf("imported sources hold %q, want %q", contents, want)
	}
	if err := dst.Agent("ada").ApproveProposal(ctx, pending.ID); err != nil {
		t.Fatalf("approve the imported merge: %v", err)
	}
	for _, id := range pending.Merge.Sources {
		e, err := dst.Agent("ada").Archival().Get(ctx, id)
		if err != nil || e.ValidTo == nil || e.SupersededBy == 0 {
			t.Fatalf("source %d after approval: %+v, %v; want superseded", id, e, err)
		}
	}
}
