package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestCLIProposalsListsArchivalMerges: `engram proposals list` names a
// consolidation proposal as a merge on the agent's archival memory and,
// with --diff, shows its sources (-) and the merged text (+); approve
// applies it.
func TestCLIProposalsListsArchivalMerges(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	ctx := context.Background()
	s, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"The build runs on Fridays.", "the build runs on fridays"} {
		if _, err := s.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := s.Agent("ada").Archival().Consolidate(ctx, nil)
	if err != nil || len(rep.Proposals) != 1 {
		t.Fatalf("Consolidate = %+v, %v", rep, err)
	}
	s.Close()
	out := ok(t, db, "proposals", "list", "--diff")
	for _, want := range []string{"ada (archival)", "merge_archival 2 entries (near-exact)", "- #1 The build runs on Fridays.", "- #2 the build runs on fridays", "+ The build runs on Fridays."} {
		if !strings.Contains(out, want) {
			t.Errorf("proposals list --diff lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ada/") || strings.Contains(out, "not found") {
		t.Errorf("proposals list --diff treats the merge as a block edit:\n%s", out)
	}
	if out := ok(t, db, "proposals", "approve", "1"); !strings.Contains(out, "proposal 1 approved") {
		t.Fatalf("approve:\n%s", out)
	}
}
