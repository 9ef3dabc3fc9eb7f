package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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

// TestDumpMergeSourcesCapped: a dump's merge proposal naming more sources
// than a merge may hold, or one source twice, is refused at Import with
// an error naming the cap and the count; nothing is imported.
func TestDumpMergeSourcesCapped(t *testing.T) {
	ctx := context.Background()
	src := openDedup(t, filepath.Join(t.TempDir(), "src.db"), &memory.Options{KeepDuplicates: true})
	ada := src.Agent("ada")
	for _, s := range []string{"The meeting moved to Friday at noon.", "the meeting moved to friday, at noon"} {
		if _, err := ada.Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := ada.Archival().Consolidate(ctx, nil); err != nil || len(rep.Proposals) != 1 {
		t.Fatalf("Consolidate = %+v, %v; want one proposal", rep, err)
	}
	d, err := src.Export(ctx)
	if err != nil || len(d.Proposals) != 1 {
		t.Fatalf("Export: %d proposals, %v", len(d.Proposals), err)
	}
	var m memory.ArchivalMerge
	if err := json.Unmarshal(d.Proposals[0].Args, &m); err != nil {
		t.Fatal(err)
	}
	many := slices.Clone(m.Sources)
	for len(many) < 100000 {
		many = append(many, m.Sources...)
	}
	for name, srcs := range map[string][]int64{"100000 sources": many, "one source twice": {m.Sources[0], m.Sources[0], m.Sources[1]}} {
		mm := m
		mm.Sources = srcs
		b, _ := json.Marshal(mm)
		dd := *d
		dd.Proposals = slices.Clone(d.Proposals)
		dd.Proposals[0].Args = b
		dst := openDedup(t, filepath.Join(t.TempDir(), "dst.db"), nil)
		_, err := dst.Import(ctx, &dd)
		if !errors.Is(err, memory.ErrInvalidArgument) {
			t.Fatalf("%s: Import = %v, want ErrInvalidArgument", name, err)
		}
		if name == "100000 sources" && (!strings.Contains(err.Error(), "100000") || !strings.Contains(err.Error(), fmt.Sprint(memory.MaxMergeSources))) {
			t.Fatalf("%s: error %q names neither the count nor the cap", name, err)
		}
		if n, _ := dst.Agent("ada").Archival().List(ctx, nil); len(n) != 0 {
			t.Fatalf("%s: a refused import left %d entries", name, len(n))
		}
	}
}
