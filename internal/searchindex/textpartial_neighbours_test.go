package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// followedCaches returns a whole and a forced partial text cache over db,
// loaded now, for partialLikeSQL to hold to SQL as writes from another
// pool arrive ("whole", "partial"); they close when the test ends.
func followedCaches(t *testing.T, db *sql.DB) map[string]*searchindex.Index {
	t.Helper()
	ctx := context.Background()
	followed := map[string]*searchindex.Index{}
	for _, name := range []string{"whole", "partial"} {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if name == "partial" {
			searchindex.ForceTextPartial(x)
		}
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
		followed[name] = x
	}
	return followed
}

// partialLikeSQL opens a partial text cache on db, loads each agent's
// archival partition from the rows as they are, and holds its rankings of
// queries, and those of the caches others, to SQL's (TextCacheBytes -1),
// superseded entries included and not.
func partialLikeSQL(t *testing.T, db *sql.DB, step string, agents, queries []string, others map[string]*searchindex.Index) {
	t.Helper()
	ctx := context.Background()
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	loaded, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	searchindex.ForceTextPartial(loaded)
	if err := loaded.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
	}
	passLikeSel(t, loaded, step)
	for _, agent := range agents {
		for _, q := range queries {
			for _, sup := range []bool{true, false} {
				o := func() *search.Options {
					return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(100)
				}
				want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, o())
				if err != nil {
					t.Fatal(err)
				}
				for name, x := range others {
					checkLikeSQL(t, x, name, step, agent, q, sup, want, o())
				}
				checkLikeSQL(t, loaded, "loaded", step, agent, q, sup, want, o())
			}
		}
	}
}

func checkLikeSQL(t *testing.T, x *searchindex.Index, name, step, agent, q string, sup bool, want []search.Result, o *search.Options) {
	t.Helper()
	got, err := x.Search(context.Background(), q, search.Scope{Agent: agent}, o)
	if err != nil {
		t.Fatalf("after %s, %s %q (superseded %v): %s cache: %v", step, agent, q, sup, name, err)
	}
	if len(want) != len(got) {
		t.Fatalf("after %s, %s %q (superseded %v): SQL %d results, %s cache %d\nSQL   %v\ncache %v",
			step, agent, q, sup, len(want), name, len(got), keys(want), keys(got))
	}
	if err := sameRanking(want, got); err != nil {
		t.Fatalf("after %s, %s %q (superseded %v), %s cache: %v\nSQL   %v\ncache %v", step, agent, q, sup, name, err, keys(want), keys(got))
	}
}

// A partition load finds each entry's neighbours among the owner's
// entries in Go; it ranks exactly as SQL, whose archival_links gives them,
// whatever the metadata names: a conversation under each of the accepted
// keys, strings and numbers that read alike ("3", 3, 3.0, "\u0033"), keys
// passed over (null, "", objects, arrays, booleans), a key named twice, a
// long key, deep metadata, two owners with the same keys; and after hand
// edits: supersessions, restorations, merged entries' places (ties,
// negative, far), places SQLite holds as a real or as text, metadata
// that is no object or is held as JSONB. A partial cache loaded before
// the edits and a whole one follow them (written from another pool) and
// rank as SQL too.
func TestTextCachePartialNeighboursLikeSQL(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "neighbours compared with SQL entry by entry")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db, other := openDBAt(t, path), openDBAt(t, path)
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	metas := []string{
		`{"conversation": "3"}`, `{"conversation": 3}`, `{"conversation": 3.0}`, `{"conversation": "\u0033"}`,
		`{"conversation_id": "3"}`, `{"session": "3"}`, `{"session_id": 3}`, `{"thread": "3"}`, `{"thread_id": "t"}`,
		`{"conversation": "", "thread": "3"}`, `{"conversation": null, "session": "3"}`,
		`{"conversation": {"id": "3"}, "session": "3"}`, `{"conversation": [3], "thread_id": "t"}`,
		`{"conversation": true}`, `{"session": "a", "session": "3"}`, `{}`, `{"topic": "3"}`,
		`{"thread": "` + strings.Repeat("k", 5000) + `"}`,
		`{"thread_id": "t", "deep": ` + strings.Repeat(`{"a": `, 200) + `"x"` + strings.Repeat(`}`, 200) + `}`,
	}
	n := 0
	for _, agent := range []string{"a", "b"} {
		for round := range 3 {
			for i, m := range metas {
				n++
				content := vocab[n%len(vocab)] + " " + vocab[(n*7+round)%len(vocab)] + " " + vocab[(i*3)%len(vocab)]
				insertArchival(t, db, archivalRow{Agent: agent, Content: content, Metadata: m})
			}
		}
	}
	queries := append([]string{}, vocab...)
	queries = append(queries, "apple fig", "mango olive thyme")
	agents := []string{"a", "b"}
	// Caches loaded now, following the edits below.
	followed := followedCaches(t, db)
	partialLikeSQL(t, db, "inserts", agents, queries, followed)
	for _, step := range []string{
		`UPDATE archival SET valid_to = created_at + 1 WHERE id % 3 = 0`,
		`UPDATE archival SET valid_to = NULL WHERE id % 6 = 0`,
		// Merged entries' places: ties with other entries' ids, before
		// every id, far past them.
		`UPDATE archival SET conversation_pos = id - 19 WHERE id % 5 = 0`,
		`UPDATE archival SET conversation_pos = -4 WHERE id % 11 = 0`,
		`UPDATE archival SET conversation_pos = 9000000000000000000 WHERE id % 13 = 0`,
		`UPDATE archival SET conversation_pos = NULL WHERE id % 13 = 0`,
		// Places a hand edit leaves SQLite holding as a real and as text:
		// SQL orders them (numbers by value, text after numbers).
		`UPDATE archival SET conversation_pos = id - 19.5 WHERE id % 7 = 0`,
		`UPDATE archival SET conversation_pos = 'x' WHERE id IN (8, 28, 47)`,
		// Metadata that is no object, and metadata SQLite holds as JSONB
		// (a blob its JSON functions read as the object it encodes).
		`UPDATE archival SET metadata_json = '[1, 2]' WHERE id % 10 = 1`,
		`UPDATE archival SET metadata_json = 5 WHERE id = 3`,
		`UPDATE archival SET metadata_json = '"3"' WHERE id = 4`,
		`UPDATE archival SET metadata_json = jsonb(metadata_json) WHERE id % 9 = 0`,
	} {
		if _, err := other.ExecContext(ctx, step); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		partialLikeSQL(t, db, step, agents, queries, followed)
	}
	var withContext int
	if err := db.QueryRow(`SELECT count(*) FROM fts_archival_source WHERE context_before <> '' OR context_after <> ''`).Scan(&withContext); err != nil || withContext < 40 {
		t.Fatalf("%d entries with context (%v): the corpus does not exercise it", withContext, err)
	}
}

// Consolidation places a merged entry at its first source's place in its
// conversation (conversation_pos): a partition load gives it, and its
// neighbours, the neighbours SQL gives them.
func TestTextCachePartialNeighboursAfterConsolidation(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	store, err := memory.Open(ctx, path, &memory.Options{KeepDuplicates: true, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	for _, agent := range []string{"a", "b"} {
		var in []memory.ArchivalEntry
		for i := range 90 {
			conv := []any{"s1", 7, "7"}[i%3]
			key := []string{"session", "conversation_id", "thread"}[i%3]
			content := fmt.Sprintf("%s %s turn %d", vocab[i%len(vocab)], vocab[(i*7)%len(vocab)], i)
			if i%5 == 4 && i >= 30 {
				j := i - 27 // an earlier turn of the same conversation, said again
				content = fmt.Sprintf("%s %s turn %d", vocab[j%len(vocab)], vocab[(j*7)%len(vocab)], j)
			}
			in = append(in, memory.ArchivalEntry{Content: content, Metadata: map[string]any{key: conv}})
		}
		if _, err := store.Agent(agent).Archival().InsertBatch(ctx, in, nil); err != nil {
			t.Fatal(err)
		}
		rep, err := store.Agent(agent).Archival().Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Applied == 0 {
			t.Fatalf("%s: consolidation merged nothing (%+v)", agent, rep)
		}
	}
	db := openDBAt(t, path)
	var placed int
	if err := db.QueryRow(`SELECT count(*) FROM archival WHERE conversation_pos IS NOT NULL`).Scan(&placed); err != nil || placed == 0 {
		t.Fatalf("%d merged entries placed (%v): the store does not exercise places", placed, err)
	}
	queries := append([]string{"turn"}, vocab...)
	partialLikeSQL(t, db, "consolidation", []string{"a", "b"}, queries, nil)
}
