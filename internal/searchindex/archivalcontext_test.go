package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/migrations"
	"github.com/engram-go/engram/search"
)

// archivalContextMigration is the migration that indexes archival
// entries in their conversation.
const archivalContextMigration = "0023_archival_conversation.sql"

// openDBBeforeArchivalContext opens a database at path migrated to the
// version before archivalContextMigration.
func openDBBeforeArchivalContext(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlitedriver.Name, "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL&_foreign_keys=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	all, err := migrations.SQLite()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		if m.Name == archivalContextMigration {
			return db
		}
		for _, q := range []string{m.SQL, fmt.Sprintf("PRAGMA user_version = %d", m.Version),
			fmt.Sprintf("PRAGMA application_id = %d", sqlite.ApplicationID)} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", m.Name, err)
			}
		}
	}
	t.Fatalf("no migration %s", archivalContextMigration)
	return nil
}

// A store whose entries name no conversation ranks after the migration
// exactly as before it: the same rows in the same order with bit-equal
// bm25 values, in SQL, and the text cache ranks as SQL. Metadata that
// names none (a number, "", an array, other keys) is among them.
func TestArchivalContextSameRankingWithoutConversations(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "43 queries ranked against the old index, one goroutine")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBBeforeArchivalContext(t, path)
	r := rand.New(rand.NewPCG(3, 4))
	vocab := strings.Fields(`wing flow boundary layer pressure heat transfer shock wave supersonic
		mach number jet nozzle buckling shell cylinder plate stress vibration flutter session conversation`)
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{}`, `{"topic": "wing"}`, `{"session": true}`, `{"session": ""}`, `{"conversation": null}`,
		`[1, 2]`, `{"session": ["s1"]}`, `{"conversation": {"id": "c1"}}`, `{"batch": "b1"}`}
	for i := range 400 {
		insertArchival(t, db, archivalRow{Agent: []string{"a", "b"}[i%2], Content: text(3 + r.IntN(30)),
			Tags: []string{vocab[r.IntN(len(vocab))]}, Metadata: metas[i%len(metas)]})
	}
	var queries []string
	for range 40 {
		queries = append(queries, text(1+r.IntN(4)))
	}
	queries = append(queries, "session", "wing flow", "b1")
	opts := func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true).Limit(40)
	}
	// The schema before conversations: its dialect names no conversation
	// key (an embedded Dialect hides the optional interfaces).
	before, err := searchindex.NewIndex(ctx, db, struct{ driver.Dialect }{sqlite.SearchDialect{}}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]search.Result{}
	for _, q := range queries {
		for _, agent := range []string{"a", "b"} {
			rs, err := before.Search(ctx, q, search.Scope{Agent: agent}, opts())
			if err != nil {
				t.Fatal(err)
			}
			want[agent+"/"+q] = rs
		}
	}
	before.Close()
	if _, _, err := sqlite.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM fts_archival_source WHERE context_before <> '' OR context_after <> ''`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d entries got context (%v), want none", n, err)
	}
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	cached, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	if err := cached.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, q := range queries {
		for _, agent := range []string{"a", "b"} {
			w := want[agent+"/"+q]
			got, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, opts())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(w) {
				t.Fatalf("%s %q: %d results after, %d before", agent, q, len(got), len(w))
			}
			for i := range w {
				if key(got[i]) != key(w[i]) || got[i].Score != w[i].Score || got[i].Source.BM25 != w[i].Source.BM25 {
					t.Fatalf("%s %q result %d: after %s %.17g, before %s %.17g", agent, q, i,
						key(got[i]), got[i].Source.BM25, key(w[i]), w[i].Source.BM25)
				}
			}
			fromCache, err := cached.Search(ctx, q, search.Scope{Agent: agent}, opts())
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRanking(got, fromCache); err != nil {
				t.Fatalf("%s %q: cache: %v", agent, q, err)
			}
			compared += len(w)
		}
	}
	if compared < 500 {
		t.Fatalf("only %d results compared", compared)
	}
}

// archivalDrift is ftsMessagesDrift for fts_archival.
func archivalDrift(t *testing.T, db *sql.DB) (extra, missing []string) {
	t.Helper()
	// A row written twice (a rewrite that did not replace) would look the
	// same term by term: count the rows, and FTS5's own count.
	var rows, indexed int64
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM archival), (SELECT count(*) FROM fts_archival)`).Scan(&rows, &indexed); err != nil {
		t.Fatal(err)
	}
	if total, _, err := (sqlite.SearchDialect{}).TextTotals(context.Background(), db, "fts_archival"); err != nil || total != rows || indexed != rows {
		t.Fatalf("fts_archival holds %d rows (averages record %d, %v) for %d entries", indexed, total, err, rows)
	}
	return ftsDrift(t, db, "fts_archival", "content, tags_text, metadata_values, context_before, context_after", "fts_archival_source")
}

// An entry is found by the words of the entries before and after it in
// its conversation, scored below one holding them itself; entries of
// another conversation, another owner, or naming none lend nothing; and
// results stay the entry's own. SQL and the text cache alike.
func TestArchivalContextFindsNeighbours(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	add := func(agent, content, meta string) int64 {
		return insertArchival(t, db, archivalRow{Agent: agent, Content: content, Metadata: meta})
	}
	asked := add("a", "I have been looking into adoption agencies", `{"session": "s1"}`)
	other := add("a", "Something about lunch", `{"session": "s2"}`) // between them by id, another session
	reply := add("a", "That is great! Which ones?", `{"session": "s1"}`)
	after := add("a", "The ones near the lake", `{"session": "s1", "conversation": "c9"}`) // names c9, not s1
	plain := add("a", "Nothing in common", `{"session": 7}`)
	add("b", "adoption agencies for agent b", `{"session": "s1"}`)
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	cached, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	if err := cached.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	for name, x := range map[string]*searchindex.Index{"SQL": sqlx, "cache": cached} {
		rs, err := x.Search(ctx, "adoption agencies", search.Scope{Agent: "a"},
			search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))

		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range rs {
			ids = append(ids, r.ID)
			if r.ID == reply && r.Content != "That is great! Which ones?" {
				t.Errorf("%s: the reply's content is %q", name, r.Content)
			}
		}
		if !slices.Equal(ids, []int64{asked, reply}) {
			t.Errorf("%s: adoption agencies = %v, want the entry %d then its reply %d", name, ids, asked, reply)
		}
		for q, wantIDs := range map[string][]int64{
			"lunch": {other}, "lake": {after}, "common": {plain},
			"which": {reply, asked}, // asked holds the reply as its context_after
		} {
			rs, err := x.Search(ctx, q, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
			if err != nil {
				t.Fatal(err)
			}
			ids = ids[:0]
			for _, r := range rs {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, wantIDs) {
				t.Errorf("%s: %q = %v, want %v", name, q, ids, wantIDs)
			}
		}
	}
}

// Entries inserted out of id order, several in one statement, then
// changed by hand (metadata moving an entry to another conversation or
// out of any, content, owner, id) and deleted or superseded: after each
// step fts_archival holds exactly what fts_archival_source says, and text
// caches kept up to date through the log (writes from another pool), whole
// and partial, rank exactly as SQL.
func TestArchivalContextFollowsHandEdits(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rankings compared after hand edits, one goroutine")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	whole, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	partial, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	searchindex.ForceTextPartial(partial)
	if err := partial.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
	}
	r := rand.New(rand.NewPCG(11, 13))
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	text := func() string {
		w := make([]string, 1+r.IntN(5))
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{"session": "s1"}`, `{"session": "s2"}`, `{"conversation": "s1"}`, `{}`, `{"session": 1}`}
	ids := []int64{50, 10, 30, 20, 40, 90, 70, 80, 60, 15, 35, 25}
	for _, agent := range []string{"a", "b"} {
		for i, id := range ids {
			if agent == "b" {
				id += 1000
			}
			// 20 seconds an id apart: the entries naming no conversation
			// are a stream, neighbours in write order.
			insertArchival(t, other, archivalRow{ID: id, Agent: agent, Content: text(), Metadata: metas[i%len(metas)],
				Created: baseTime.Add(time.Duration(id%1000) * 20 * time.Second)})
		}
	}
	if _, err := other.ExecContext(ctx, `INSERT INTO archival (id, agent, content, metadata_json, created_at, valid_from) VALUES
		(5, 'a', ?, '{"session": "s1"}', 0, 0), (3, 'a', ?, '{"session": "s1"}', 0, 0), (4, 'a', ?, '{"session": "s1"}', 0, 0)`,
		text(), text(), text()); err != nil {
		t.Fatal(err)
	}
	queries := append([]string{}, vocab...)
	queries = append(queries, "apple fig", "mango olive thyme", "banana banana sage")
	check := func(step string) {
		t.Helper()
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			slices.Sort(extra)
			slices.Sort(missing)
			t.Fatalf("after %s: fts_archival holds %d entries the view does not (%v), lacks %d (%v)",
				step, len(extra), extra[:min(len(extra), 8)], len(missing), missing[:min(len(missing), 8)])
		}
		// A partial cache opened now loads each agent's partition from
		// the rows as they are (the other partial cache has been
		// following the edits).
		loaded, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer loaded.Close()
		searchindex.ForceTextPartial(loaded)
		if err := loaded.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
		}
		for _, agent := range []string{"a", "b"} {
			for _, q := range queries {
				o := func() *search.Options {
					return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true).Limit(50)
				}
				want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, o())
				if err != nil {
					t.Fatal(err)
				}
				for name, x := range map[string]*searchindex.Index{"whole": whole, "partial": partial, "loaded": loaded} {
					got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o())
					if err != nil {
						t.Fatal(err)
					}
					if len(want) != len(got) {
						t.Fatalf("after %s, %s %q: SQL %d results, %s cache %d\nSQL   %v\ncache %v", step, agent, q, len(want), name, len(got), keys(want), keys(got))
					}
					if err := sameRanking(want, got); err != nil {
						t.Fatalf("after %s, %s %q, %s cache: %v\nSQL   %v\ncache %v", step, agent, q, name, err, keys(want), keys(got))
					}
				}
			}
		}
	}
	check("inserts")
	var withContext int
	if err := db.QueryRow(`SELECT count(*) FROM fts_archival_source WHERE context_before <> '' OR context_after <> ''`).Scan(&withContext); err != nil || withContext < 10 {
		t.Fatalf("%d entries with context (%v): the corpus does not exercise it", withContext, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM fts_archival_source s JOIN archival a ON a.id = s.id
		WHERE a.conversation_key IS NULL AND (context_before <> '' OR context_after <> '')`).Scan(&withContext); err != nil || withContext < 4 {
		t.Fatalf("%d entries naming no conversation with context (%v): the corpus does not exercise the stream", withContext, err)
	}
	for _, step := range []string{
		// created_at moved by hand: out of the gap, into a burst, back.
		`UPDATE archival SET created_at = created_at + 3600000000000 WHERE id IN (20, 1040)`,
		`UPDATE archival SET created_at = created_at + 500000000 WHERE id % 9 = 0`,
		`UPDATE archival SET created_at = created_at - 3600000000000 WHERE id = 20`,
		`UPDATE archival SET content = content || ' zucchini' WHERE id % 3 = 0`,
		`UPDATE archival SET metadata_json = '{"session": "s2"}' WHERE id IN (30, 1030, 4)`,
		`UPDATE archival SET metadata_json = '{"topic": "none"}' WHERE id IN (20, 1040)`,
		// The same metadata values under a key naming no conversation.
		`UPDATE archival SET metadata_json = '{"topic": "s1"}' WHERE metadata_json = '{"session": "s1"}' AND id % 2 = 0`,
		`UPDATE archival SET metadata_json = '{"conversation": "s1", "session": "s2"}' WHERE id % 7 = 0`,
		`UPDATE archival SET valid_to = created_at + 1 WHERE id % 4 = 0`,
		// Restored, moved (a merged entry's place), moved back.
		`UPDATE archival SET valid_to = NULL WHERE id % 8 = 0`,
		`UPDATE archival SET conversation_pos = 1 WHERE id IN (70, 90, 1070)`,
		`UPDATE archival SET conversation_pos = 26 WHERE id = 80`,
		`UPDATE archival SET conversation_pos = NULL WHERE id = 90`,
		`UPDATE archival SET valid_to = 1, conversation_pos = 2 WHERE id = 15`,
		`UPDATE archival SET tags_json = '["kale"]', tags_text = 'kale' WHERE id % 5 = 0`,
		`UPDATE archival SET agent = 'b' WHERE id = 50`,
		`UPDATE archival SET id = 55 WHERE id = 60`,
		`UPDATE archival SET id = 12, content = 'apple apple', metadata_json = '{"session": "s1"}' WHERE id = 1080`,
		`DELETE FROM archival WHERE id IN (10, 35, 1025)`,
		`DELETE FROM archival WHERE agent = 'a' AND id % 2 = 1`,
	} {
		if _, err := other.ExecContext(ctx, step); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		check(step)
	}
}

// The neighbour lookups seek the owner's entries of the conversation in
// (place, id) order, live ones (a live entry's neighbours) in
// archival_live_conversation and all of them (a superseded entry's) in
// archival_conversation, rather than scan the owner's entries.
func TestArchivalContextPlan(t *testing.T) {
	db := openDB(t)
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT before_id, after_id FROM archival_links WHERE id = 10`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, "; ")
	for _, want := range []string{
		"SEARCH p USING INDEX archival_live_conversation (agent=? AND conversation_key=? AND <expr><?)",
		"SEARCH n USING INDEX archival_live_conversation (agent=? AND conversation_key=? AND <expr>>?)",
		"SEARCH p USING INDEX archival_conversation (agent=? AND conversation_key=? AND <expr><?)",
		"SEARCH n USING INDEX archival_conversation (agent=? AND conversation_key=? AND <expr>>?)",
	} {
		if !strings.Contains(joined, want) || strings.Contains(joined, "TEMP B-TREE") {
			t.Fatalf("plan %q lacks %q (or sorts)", joined, want)
		}
	}
}
