package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// longText is about size bytes of distinct words (seed apart).
func longText(size, seed int) string {
	var b strings.Builder
	for j := 0; b.Len() < size; j++ {
		fmt.Fprintf(&b, "w%dx%d ", j, seed)
	}
	return b.String()
}

// TestConsolidationRoundBoundsLongEntries: a round over entries near the
// content cap (1 MiB) reads a bounded number of bytes (the window ends
// early, Next says where to go on) and does not sign their terms, so one
// archival_consolidate call cannot make the process hold gigabytes; long
// exact duplicates are still found, long texts that differ are not
// clustered, and rounds resumed with Next examine every entry.
func TestConsolidationRoundBoundsLongEntries(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rounds over 24 entries of 1 MiB")
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: true})
	arch := s.Agent("ag").Archival()
	const n = 24 // past the 16 MiB window budget
	for i := range n {
		// Entries 0 and 1 are equal; the others differ from each other.
		seed := max(i, 1)
		if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: longText(1<<20-64, seed)}); err != nil {
			t.Fatal(err)
		}
	}
	c0 := cpuTime()
	rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{MaxEntries: 2000, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpuTime() - c0
	t.Logf("first round: %d examined, %d read, next %d, CPU %v", rep.Examined, rep.Live, rep.Next, cpu)
	if rep.Examined >= n || rep.Next == 0 {
		t.Fatalf("a round over %d entries of 1 MiB examined %d (next %d): want it cut short by its byte budget", n, rep.Examined, rep.Next)
	}
	if len(rep.Clusters) != 1 || len(rep.Clusters[0].Merge.Sources) != 2 || rep.Clusters[0].Merge.Kind != memory.MergeExact {
		for _, c := range rep.Clusters {
			t.Log(c.Merge.Sources, c.Merge.Kind, c.Merge.Similarity)
		}
		t.Fatalf("clusters %d (want the one exact pair)", len(rep.Clusters))
	}
	examined := rep.Examined
	for after := rep.Next; after != 0; {
		rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{After: after, MaxEntries: 2000, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Clusters) != 0 {
			t.Fatalf("round after %d: %d clusters of differing long texts", after, len(rep.Clusters))
		}
		examined += rep.Examined
		after = rep.Next
	}
	if examined != n {
		t.Fatalf("rounds resumed by Next examined %d entries, want %d", examined, n)
	}
}

// TestConsolidationCandidatesWithinBudget: the older entries a round
// reads as candidates stop at the round's candidate budget. The store
// here has 80 copies of one text whose cluster's leader was deleted, so
// every copy leads its own cluster and a new copy's buckets name the
// latest 64 of them; a round reads those whose bytes fit the budget,
// and the new copy still joins one.
func TestConsolidationCandidatesWithinBudget(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rounds over 81 copies of 32 KiB")
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		budget   int // 0: the default
		maxRead  int
		minRead  int
		clusters int
	}{
		// Every leading copy the new copy's buckets name (51 here).
		{"default budget reads every bucket's candidates", 0, 1 + 64, 1 + 40, 1},
		{"a 200 KiB budget reads what fits", 200 << 10, 1 + 7, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: true})
			memory.SetConsolidateCandidateBytes(s, tc.budget)
			arch := s.Agent("ag").Archival()
			text := longText(32<<10, 7)
			var first int64
			for i := range 80 {
				e, err := arch.Insert(ctx, memory.ArchivalEntry{Content: text})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = e.ID
				}
			}
			if _, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{DryRun: true}); err != nil {
				t.Fatal(err)
			}
			if err := arch.Delete(ctx, first); err != nil {
				t.Fatal(err)
			}
			last, err := arch.Insert(ctx, memory.ArchivalEntry{Content: text})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{After: last.ID - 1, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("examined %d, read %d, %d clusters", rep.Examined, rep.Live, len(rep.Clusters))
			if rep.Examined != 1 || rep.Live < tc.minRead || rep.Live > tc.maxRead {
				t.Errorf("examined %d, read %d entries; want 1 and %d–%d", rep.Examined, rep.Live, tc.minRead, tc.maxRead)
			}
			if len(rep.Clusters) != tc.clusters {
				t.Fatalf("%d clusters, want %d", len(rep.Clusters), tc.clusters)
			}
			if srcs := rep.Clusters[0].Merge.Sources; srcs[len(srcs)-1] != last.ID {
				t.Errorf("cluster %v lacks the new copy %d", srcs, last.ID)
			}
		})
	}
}

// TestConsolidationOlderMembersWithinBudget: the members an older
// cluster had before the round are read within the round's candidate
// budget too. Six older clusters of 20 members each (one text, the
// members long near-copies of it with a large metadata) each gain a new
// entry; with a budget that holds about two clusters' members, a round
// reads those and leaves the other new entries unsettled, and rounds
// resumed after it cluster every new entry with its whole cluster.
func TestConsolidationOlderMembersWithinBudget(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rounds over 120 long near-copies")
	ctx := context.Background()
	s := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	const clusters, members = 6, 20
	memberBytes := 0
	arch := s.Agent("ag").Archival()
	pad := strings.Repeat("p", 16<<10)
	for i := range clusters {
		terms := fmt.Sprintf("alpha%d bravo%d charlie%d delta%d echo%d", i, i, i, i, i)
		if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: terms}); err != nil {
			t.Fatal(err)
		}
		for j := range members {
			// The same terms (Jaccard 1), another content each.
			c := strings.Repeat(terms+" ", (16<<10)/len(terms)) + strings.Repeat(".", j+1)
			if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: c, Metadata: map[string]any{"pad": pad}}); err != nil {
				t.Fatal(err)
			}
			memberBytes += len(c) + len(pad)
		}
	}
	// Proposed: settled, each member led by its cluster's first entry.
	if rep, err := arch.Consolidate(ctx, nil); err != nil || len(rep.Proposals) != clusters {
		t.Fatalf("first round: %v", err)
	}
	for i := range clusters {
		terms := fmt.Sprintf("echo%d delta%d charlie%d bravo%d alpha%d", i, i, i, i, i)
		if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: terms}); err != nil {
			t.Fatal(err)
		}
	}
	budget := 2 * memberBytes / clusters
	memory.SetConsolidateCandidateBytes(s, budget)
	found := 0
	for round := 0; found < clusters; round++ {
		if round == clusters {
			t.Fatalf("%d rounds clustered %d of %d new entries", round, found, clusters)
		}
		rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{Resume: true})
		if err != nil {
			t.Fatal(err)
		}
		// What the round read besides its window: candidates (at most
		// one per new entry) and the older members.
		if read := rep.Live - rep.Examined; read > clusters+3*members {
			t.Fatalf("round %d read %d older entries, want the members of at most 3 clusters (budget %d bytes, %d per cluster)", round, read, budget, memberBytes/clusters)
		}
		for _, cl := range rep.Clusters {
			if len(cl.Merge.Sources) != members+2 {
				t.Fatalf("round %d: a cluster of %d entries, want %d", round, len(cl.Merge.Sources), members+2)
			}
		}
		found += len(rep.Clusters)
	}
}
