package memory_test

import (
	"context"
	"database/sql"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
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
	// The merged entry in its first source's place (second): the two
	// entries after alpha are it and bravo, not delta.
	if got, want := finds(dst, "harbour"), []string{"alpha harbour", "bravo meadow", "the lighthouse keeper fact"}; !slices.Equal(got, want) {
		t.Errorf("harbour finds %q: want %q (the merged entry where its first source was)", got, want)
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
// the integer next to it on the entry's side (its floor for an entry
// numbered above it), a text, a blob or a real beyond int64 after every
// number (math.MaxInt64), as SQLite orders them.
func TestHandEditedPlacesMergeAndExport(t *testing.T) {
	for _, tc := range []struct {
		name, place string
		want        []memory.DumpArchivalPlace // the export, before the merge; ids from 1
	}{
		{"real", "1.5", []memory.DumpArchivalPlace{{ID: 2, Place: 1}}},
		{"text", "'x'", []memory.DumpArchivalPlace{{ID: 2, Place: math.MaxInt64}}},
		{"blob", "x'00ff'", []memory.DumpArchivalPlace{{ID: 2, Place: math.MaxInt64}}},
		{"huge real", "1e300", []memory.DumpArchivalPlace{{ID: 2, Place: math.MaxInt64}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := storePlacedByHand(t, []string{"alpha harbour", "the lighthouse keeper fact", "bravo meadow", "The lighthouse keeper FACT"}, 2, tc.place)
			ar := s.Agent("a").Archival()
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

// A hand-edited place keeps every entry's neighbours through a dump where
// the engine's order is well defined: entries 1 to 5 of one conversation,
// one of them placed by hand (an integer, a real number, a text, values
// beyond int64, a place naming a deleted entry), have the same neighbours
// (archival_links) in the store the dump is imported into as in the
// source.
func TestHandEditedPlacesKeepNeighboursThroughDump(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "a dump and an import per hand-edited place")
	for _, tc := range []struct {
		name    string
		id      int    // the entry placed by hand
		place   string // its conversation_pos, as SQL
		deleted int    // an entry deleted before the export, 0 for none
	}{
		{"integer before its id", 4, "2", 0},
		{"integer after its id", 1, "3", 0},
		{"negative", 3, "-7", 0},
		{"min int64", 4, "-9223372036854775808", 0},
		{"max int64", 2, "9223372036854775807", 0},
		{"beyond the last id", 1, "40", 0},
		{"real before its id", 4, "2.5", 0},
		{"real after its id", 1, "2.5", 0},
		{"negative real", 3, "-0.5", 0},
		{"real below int64", 3, "-1e300", 0},
		{"real beyond int64", 2, "1e300", 0},
		{"infinity", 2, "9e999", 0},
		{"minus infinity", 4, "-9e999", 0},
		{"text", 2, "'x'", 0},
		{"blob", 3, "x'00ff'", 0},
		{"a deleted entry's, after its id", 1, "3", 3},
		{"a deleted entry's, before its id", 5, "3", 3},
		{"real between deleted and live, after its id", 1, "3.5", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			src, db := storePlacedByHand(t, []string{"one alpha", "two bravo", "three charlie", "four delta", "five echo"}, tc.id, tc.place)
			ar := src.Agent("a").Archival()
			if tc.deleted != 0 {
				if err := ar.Delete(ctx, int64(tc.deleted)); err != nil {
					t.Fatal(err)
				}
			}
			d, err := src.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dpath := filepath.Join(t.TempDir(), "dst.db")
			dst := openFile(t, dpath, nil)
			if _, err := dst.Import(ctx, d); err != nil {
				t.Fatalf("import of places %+v: %v", d.ArchivalPlaces, err)
			}
			ddb, err := sql.Open(sqlitedriver.Name, dpath)
			if err != nil {
				t.Fatal(err)
			}
			defer ddb.Close()
			if want, got := conversationOrder(t, db), conversationOrder(t, ddb); !slices.Equal(want, got) {
				t.Errorf("place %s on entry %d: source's neighbours %q, imported %q (dump places %+v)", tc.place, tc.id, want, got, d.ArchivalPlaces)
			}
		})
	}
}

// conversationOrder is each archival entry's content with its neighbours'
// (archival_links), in content order.
func conversationOrder(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT a.content, COALESCE(b.content, ''), COALESCE(n.content, '') FROM archival_links l
		JOIN archival a ON a.id = l.id LEFT JOIN archival b ON b.id = l.before_id LEFT JOIN archival n ON n.id = l.after_id ORDER BY a.content`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c, b, n string
		if err := rows.Scan(&c, &b, &n); err != nil {
			t.Fatal(err)
		}
		out = append(out, b+" < "+c+" > "+n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// storePlacedByHand is a SQLite store whose agent "a" has archival
// entries texts (ids from 1) in conversation c1, entry id's place then
// set by hand to place (SQL), as an edit of the file would, and the
// connection that edited it (closed when t ends).
func storePlacedByHand(t *testing.T, texts []string, id int, place string) (*memory.Store, *sql.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openFile(t, path, &memory.Options{KeepDuplicates: true})
	for _, text := range texts {
		if _, err := s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: text, Metadata: map[string]any{"conversation": "c1"}}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`UPDATE archival SET conversation_pos = `+place+` WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	return s, db
}
