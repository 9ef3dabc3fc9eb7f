package memory_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// A merged archival entry keeps its place in its conversation through a
// dump, also when the source whose place it took was deleted since: the
// imported entry has the same neighbours. A version 4 dump (no places)
// still imports.
func TestDumpKeepsArchivalPlaces(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), &memory.Options{KeepDuplicates: true})
	ar := src.Agent("a").Archival()
	var ids []int64
	for _, text := range []string{"alpha harbour", "the lighthouse keeper fact", "bravo meadow", "The lighthouse keeper FACT", "delta canyon"} {
		e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: text, Metadata: map[string]any{"conversation": "c1"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true}); err != nil || rep.Applied != 1 {
		t.Fatalf("consolidate: %+v, %v", rep, err)
	}
	if err := ar.Delete(ctx, ids[1]); err != nil { // the source whose place the merged entry took
		t.Fatal(err)
	}
	d, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.ArchivalPlaces) != 1 {
		t.Fatalf("dump places %+v, want the merged entry's", d.ArchivalPlaces)
	}
	// finds is the contents a search of s for q finds.
	finds := func(s *memory.Store, q string) []string {
		t.Helper()
		res, err := s.Agent("a").Archival().Search(ctx, q, search.NewOptions().Mode(search.FTS))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range res {
			out = append(out, r.Content)
		}
		slices.Sort(out)
		return out
	}
	queries := []string{"harbour", "meadow", "canyon", "lighthouse"}
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	if _, err := dst.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if want, got := finds(src, q), finds(dst, q); !slices.Equal(want, got) {
			t.Errorf("%q: source finds %q, imported %q", q, want, got)
		}
	}
	if got := finds(dst, "canyon"); len(got) != 2 {
		t.Errorf("canyon finds %q: want delta canyon and its live neighbour, not the merged entry", got)
	}
	d.Version, d.ArchivalPlaces = 4, nil
	old := openFile(t, filepath.Join(t.TempDir(), "v4.db"), nil)
	if rep, err := old.Import(ctx, d); err != nil || rep.Archival != 5 {
		t.Fatalf("version 4 dump: %+v, %v", rep, err)
	}
}

// A place edited by hand into something other than an integer (SQLite's
// INTEGER column keeps a real number or a text as given) fails neither a
// merge reading it nor an export of the agent: a real number stands at
// its floor, anything else as if unplaced.
func TestHandEditedPlacesMergeAndExport(t *testing.T) {
	for _, tc := range []struct {
		name, place string
		want        []memory.DumpArchivalPlace // the export, before the merge; ids from 1
	}{
		{"real", "1.5", []memory.DumpArchivalPlace{{ID: 2, Place: 1}}},
		{"text", "'x'", nil},
		{"blob", "x'00ff'", nil},
		{"huge real", "1e300", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			s := openFile(t, path, &memory.Options{KeepDuplicates: true})
			ar := s.Agent("a").Archival()
			for _, text := range []string{"alpha harbour", "the lighthouse keeper fact", "bravo meadow", "The lighthouse keeper FACT"} {
				if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: text, Metadata: map[string]any{"conversation": "c1"}}); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sql.Open(sqlitedriver.Name, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`UPDATE archival SET conversation_pos = ` + tc.place + ` WHERE id = 2`); err != nil {
				t.Fatal(err)
			}
			d, err := s.Export(ctx)
			if err != nil {
				t.Fatalf("export with a place of %s: %v", tc.place, err)
			}
			if !slices.Equal(d.ArchivalPlaces, tc.want) {
				t.Errorf("exported places %+v, want %+v", d.ArchivalPlaces, tc.want)
			}
			if rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true}); err != nil || rep.Applied != 1 {
				t.Fatalf("merge of an entry placed at %s: %+v, %v", tc.place, rep, err)
			}
			if _, err := s.Export(ctx); err != nil {
				t.Fatalf("export after the merge: %v", err)
			}
		})
	}
}
