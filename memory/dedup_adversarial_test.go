package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// NFKC folds compatibility characters that carry meaning: a superscript
// digit is an exponent, not a digit of the number. "10² m²" and "102 m2"
// are two facts, and write-time deduplication must keep both.
func TestDedupKeepsCompatibilityDistinctFacts(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	ar := s.Agent("ag").Archival()
	pairs := [][2]string{
		{"The plot measures 10² m²", "The plot measures 102 m2"},
		{"The formula is x² + y²", "The formula is x2 + y2"},
		{"See footnote ¹ for the source", "See footnote 1 for the source"},
	}
	for _, p := range pairs {
		a, err := ar.Insert(ctx, memory.ArchivalEntry{Content: p[0]})
		if err != nil {
			t.Fatal(err)
		}
		b, err := ar.Insert(ctx, memory.ArchivalEntry{Content: p[1]})
		if err != nil {
			t.Fatal(err)
		}
		if b.Duplicate || b.ID == a.ID {
			t.Errorf("%q was merged into %q (entry %d): two different facts, one stored", p[1], p[0], a.ID)
		}
	}
}

// Conversation ids past 2^53 (chat platforms' snowflake ids) are two
// conversations at write time (json.Marshal of an int64 is exact), so
// consolidation, which reads the stored metadata back as float64, must
// not see them as one conversation and propose merging across them.
func TestConsolidateKeepsLargeConversationIDsApart(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	ar := s.Agent("ag").Archival()
	const base = int64(1) << 53 // base and base+1 are one float64
	for _, th := range []int64{base, base + 1} {
		e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: "Thanks, that settles the plan for Monday.",
			Metadata: map[string]any{"thread_id": th}})
		if err != nil || e.Duplicate {
			t.Fatalf("thread %d: %+v, %v", th, e, err)
		}
	}
	rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range rep.Clusters {
		t.Errorf("cluster %v (%s) merges turns of two conversations (thread_id %d and %d)", cl.Merge.Sources, cl.Merge.Kind, base, base+1)
	}
}

// A pending merge is not proposed again: calling consolidation twice (the
// MCP tool archival_consolidate without after, the CLI, a restarted
// RunConsolidation) must not queue a second identical proposal for the
// approver.
func TestConsolidateDoesNotReproposePendingMerge(t *testing.T) {
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: true})
	ar := s.Agent("ag").Archival()
	for range 2 {
		if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: "the user prefers tea over coffee in the morning"}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		if _, err := ar.Consolidate(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := s.Agent("ag").Proposals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Errorf("%d pending merge proposals of the same two entries after 5 calls, want 1", len(ps))
	}
}

// ApplyExact applies merges without approval: those must be texts that
// say the same thing. Swapped roles (who owes whom, which is preferred)
// are different facts, though their words are the same.
func TestApplyExactKeepsDifferentFacts(t *testing.T) {
	ctx := context.Background()
	pairs := [][2]string{
		{"Alice owes Bob 50 dollars for the tickets", "Bob owes Alice 50 dollars for the tickets"},
		{"The user prefers tea to coffee in the morning", "The user prefers coffee to tea in the morning"},
		{"The meeting is not on Monday morning", "The meeting is on Monday morning"},
	}
	for _, p := range pairs {
		s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
		ar := s.Agent("ag").Archival()
		for _, txt := range p {
			if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: txt}); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Applied > 0 {
			t.Errorf("%q and %q merged without approval (%s)", p[0], p[1], rep.Clusters[0].Merge.Kind)
		}
	}
}
