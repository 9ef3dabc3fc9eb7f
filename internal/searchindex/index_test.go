package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

func TestMigrationAndTriggers(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	v, err := sqlite.MigratedVersion(ctx, db)
	if err != nil || v < 2 {
		t.Fatalf("version %d, %v", v, err)
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fts := search.NewOptions().Mode(search.FTS)
	find := func(q string, types search.ContentType) []string {
		t.Helper()
		rs, err := x.Search(ctx, q, search.Scope{All: true}, fts.ContentTypes(types))
		if err != nil {
			t.Fatal(err)
		}
		return keys(rs)
	}
	b := insertBlock(t, db, "alice", "persona", "I am a gardener who loves tomatoes")
	a := insertArchival(t, db, archivalRow{Agent: "alice", Content: "planted tomatoes in spring", Tags: []string{"garden"}})
	m := insertMessage(t, db, "alice", "user", "how are the tomatoes doing", time.Time{})
	if got := find("tomato", search.AllContent); len(got) != 3 {
		t.Fatalf("after insert: %v", got)
	}
	// Label and description are indexed; tags and metadata too.
	if got := find("persona", search.Blocks); len(got) != 1 {
		t.Fatalf("label search: %v", got)
	}
	if got := find("garden", search.Archival); len(got) != 1 {
		t.Fatalf("tag search: %v", got)
	}
	// Updates re-index exactly the changed text.
	for _, s := range []string{
		`UPDATE blocks SET rendered = 'I grow cucumbers now', description = 'who I am' WHERE id = ?`,
		`UPDATE archival SET content = 'planted cucumbers in summer' WHERE id = ?`,
		`UPDATE messages SET content = 'how are the cucumbers doing' WHERE id = ?`,
	} {
		id := map[string]int64{"blocks": b, "archival": a, "messages": m}[strings.Fields(s)[1]]
		if _, err := db.ExecContext(ctx, s, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := find("tomato", search.AllContent); len(got) != 0 {
		t.Fatalf("stale index after update: %v", got)
	}
	if got := find("cucumbers", search.AllContent); len(got) != 3 {
		t.Fatalf("after update: %v", got)
	}
	// Updates of other columns leave the index alone (and work).
	if _, err := db.ExecContext(ctx, `UPDATE blocks SET heads = 'x', last_seq = 5 WHERE id = ?`, b); err != nil {
		t.Fatal(err)
	}
	// A rolled-back write leaves no trace in the index.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	insertArchival(t, tx, archivalRow{Agent: "alice", Content: "rollback zucchini"})
	tx.Rollback()
	if got := find("zucchini", search.AllContent); len(got) != 0 {
		t.Fatalf("rolled-back row found: %v", got)
	}
	// Deletes remove from the index.
	for _, s := range []string{`DELETE FROM blocks WHERE id = ?`, `DELETE FROM archival WHERE id = ?`, `DELETE FROM messages WHERE id = ?`} {
		id := map[string]int64{"blocks": b, "archival": a, "messages": m}[strings.Fields(s)[2]]
		if _, err := db.ExecContext(ctx, s, id); err != nil {
			t.Fatal(err)
		}
	}
	if got := find("cucumbers", search.AllContent); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	for _, tbl := range []string{"fts_blocks", "fts_archival", "fts_messages"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO `+tbl+` (`+tbl+`) VALUES ('integrity-check')`); err != nil {
			t.Errorf("%s integrity-check: %v", tbl, err)
		}
	}
}

func TestNewIndexNeedsMigrations(t *testing.T) {
	db, err := sql.Open(sqlitedriver.Name, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, nil); err == nil {
		t.Fatal("NewIndex on an empty database succeeded")
	}
}

// isolationFixture: every row mentions "zebra"; alice searches.
type isolationFixture struct {
	db      *sql.DB
	x       *searchindex.Index
	visible map[string][]string // agent -> visible keys
	all     []string
}

func newIsolationFixture(t *testing.T, opts *searchindex.IndexOptions) *isolationFixture {
	ctx := context.Background()
	db := openDB(t)
	x, err := newIndexWarm(ctx, db, search.NewOffline(64), opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &isolationFixture{db: db, x: x, visible: map[string][]string{}}
	add := func(k string, agents ...string) {
		f.all = append(f.all, k)
		for _, a := range agents {
			f.visible[a] = append(f.visible[a], k)
		}
	}
	bk := func(id int64) string { return "blocks:" + itoa(id) }
	ak := func(id int64) string { return "archival:" + itoa(id) }
	mk := func(id int64) string { return "messages:" + itoa(id) }

	own := insertBlock(t, db, "alice", "alice-notes", "zebra stripes are alice's own")
	add(bk(own), "alice")
	shared := insertBlock(t, db, "bob", "team", "zebra herd shared by bob")
	shareBlock(t, db, shared, "alice")
	add(bk(shared), "alice", "bob")
	secret := insertBlock(t, db, "bob", "secret", "zebra secret of bob, unshared")
	add(bk(secret), "bob")
	other := insertBlock(t, db, "carol", "carol-dave", "zebra carol shares with dave")
	shareBlock(t, db, other, "dave")
	add(bk(other), "carol", "dave")

	add(ak(insertArchival(t, db, archivalRow{Agent: "alice", Content: "zebra archival alice"})), "alice")
	add(ak(insertArchival(t, db, archivalRow{Agent: "bob", Content: "zebra archival bob"})), "bob")
	add(ak(insertArchival(t, db, archivalRow{Agent: "carol", Content: "zebra archival carol"})), "carol")
	add(mk(insertMessage(t, db, "alice", "user", "zebra message alice", time.Time{})), "alice")
	add(mk(insertMessage(t, db, "bob", "user", "zebra message bob", time.Time{})), "bob")
	add(mk(insertMessage(t, db, "carol", "assistant", "zebra message carol", time.Time{})), "carol")
	indexAll(t, ctx, db, x)
	return f
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func filterKind(keys []string, t search.ContentType) []string {
	var out []string
	for _, k := range keys {
		for _, kt := range t.Kinds() {
			if strings.HasPrefix(k, kt.String()+":") {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cacheModes runs a test in SQL (FTS5 ranking, KNN in SQL), with the
// vector cache, and with both caches (the default); newIndexWarm loads the
// vector cache before the test's first search.
var cacheModes = []struct {
	name string
	opts *searchindex.IndexOptions
}{
	{"sql", &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1}},
	{"cache", &searchindex.IndexOptions{TextCacheBytes: -1}},
	{"caches", nil},
}

func TestIsolation(t *testing.T) {
	for _, cm := range cacheModes {
		t.Run(cm.name, func(t *testing.T) { testIsolation(t, cm.opts) })
	}
}

func testIsolation(t *testing.T, opts *searchindex.IndexOptions) {
	ctx := context.Background()
	f := newIsolationFixture(t, opts)
	modes := []search.Mode{search.FTS, search.Vector, search.Hybrid, search.Auto}
	types := []search.ContentType{search.Blocks, search.Archival, search.Messages, search.AllContent}
	scopes := []struct {
		name  string
		scope search.Scope
		want  []string
	}{
		{"alice", search.Scope{Agent: "alice"}, f.visible["alice"]},
		{"bob", search.Scope{Agent: "bob"}, f.visible["bob"]},
		{"dave", search.Scope{Agent: "dave"}, f.visible["dave"]},
		{"nobody", search.Scope{Agent: "mallory"}, nil},
		{"all", search.Scope{All: true}, f.all},
	}
	for _, mode := range modes {
		for _, ct := range types {
			for _, sc := range scopes {
				rs, err := f.x.Search(ctx, "zebra", sc.scope, search.NewOptions().Mode(mode).ContentTypes(ct).Limit(100))
				if err != nil {
					t.Fatalf("%v/%v/%s: %v", mode, ct, sc.name, err)
				}
				got := keys(rs)
				sort.Strings(got)
				want := filterKind(sc.want, ct)
				if !slices.Equal(got, want) {
					t.Errorf("%v/%v/%s: got %v, want %v", mode, ct, sc.name, got, want)
				}
				for _, r := range rs {
					if !sc.scope.All && r.Owner != sc.scope.Agent && r.Type != search.Blocks {
						t.Errorf("%v/%v/%s: %s owned by %s", mode, ct, sc.name, key(r), r.Owner)
					}
				}
			}
		}
	}
	// Unsharing and re-owning take effect at once, in every mode.
	if _, err := f.db.ExecContext(ctx, `DELETE FROM shares WHERE agent = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(ctx, `UPDATE blocks SET owner = 'bob' WHERE label = 'alice-notes'`); err != nil {
		t.Fatal(err)
	}
	for _, mode := range modes {
		rs, err := f.x.Search(ctx, "zebra", search.Scope{Agent: "alice"}, search.NewOptions().Mode(mode).ContentTypes(search.Blocks))
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 0 {
			t.Errorf("%v: after unshare and re-own alice still sees %v", mode, keys(rs))
		}
	}
	if _, err := f.x.Search(ctx, "zebra", search.Scope{}, nil); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("empty scope: err %v", err)
	}
}

// TestIsolationDeepPartition: another agent's much closer vectors never
// crowd out or leak into an agent's KNN.
func TestIsolationDeepPartition(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "a deep partition searched query by query")
	for _, cm := range cacheModes {
		t.Run(cm.name, func(t *testing.T) { testIsolationDeepPartition(t, cm.opts) })
	}
}

func testIsolationDeepPartition(t *testing.T, opts *searchindex.IndexOptions) {
	ctx := context.Background()
	db := openDB(t)
	x, err := newIndexWarm(ctx, db, search.NewOffline(64), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Far more of bob's closer rows than a vector leg fetches (max(4×limit,
	// 50)): 300, or 120 under the race detector unless the long tests run.
	n := 300
	if testenv.Race && !testenv.Long() {
		n = 120
	}
	for range n {
		insertArchival(t, db, archivalRow{Agent: "bob", Content: "quarterly revenue report figures"})
	}
	mine := insertArchival(t, db, archivalRow{Agent: "alice", Content: "grocery list: apples, bread"})
	indexAll(t, ctx, db, x)
	rs, err := x.Search(ctx, "quarterly revenue report figures", search.Scope{Agent: "alice"},
		search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(5))

	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ID != mine {
		t.Fatalf("alice got %v", keys(rs))
	}
}

func TestFilters(t *testing.T) {
	for _, cm := range cacheModes {
		t.Run(cm.name, func(t *testing.T) { testFilters(t, cm.opts) })
	}
}

func testFilters(t *testing.T, opts *searchindex.IndexOptions) {
	ctx := context.Background()
	db := openDB(t)
	x, err := newIndexWarm(ctx, db, search.NewOffline(64), opts)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return baseTime.AddDate(0, 0, d) }
	old := insertArchival(t, db, archivalRow{Agent: "a", Content: "deploy checklist v1", Tags: []string{"ops"}, Created: day(0)})
	cur := insertArchival(t, db, archivalRow{Agent: "a", Content: "deploy checklist v2", Tags: []string{"ops", "prod"}, Created: day(10)})
	if _, err := db.ExecContext(ctx, `UPDATE archival SET valid_to = ?, superseded_by = ? WHERE id = ?`, day(10).UnixNano(), cur, old); err != nil {
		t.Fatal(err)
	}
	other := insertArchival(t, db, archivalRow{Agent: "a", Content: "deploy notes", Tags: []string{"dev"}, Created: day(20)})
	none := insertArchival(t, db, archivalRow{Agent: "a", Content: "deploy untagged", Created: day(30)})
	msg := insertMessage(t, db, "a", "user", "deploy now please", day(5))
	blk := insertBlock(t, db, "a", "deploys", "deploy log")
	indexAll(t, ctx, db, x)
	textCache := opts == nil || opts.TextCacheBytes >= 0
	if textCache {
		if err := x.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ak := func(ids ...int64) []string {
		var out []string
		for _, id := range ids {
			out = append(out, "archival:"+itoa(id))
		}
		return out
	}
	tests := []struct {
		name string
		opts *search.Options
		want []string
	}{
		{"superseded hidden", search.NewOptions().ContentTypes(search.Archival), ak(cur, other, none)},
		{"superseded included", search.NewOptions().ContentTypes(search.Archival).IncludeSuperseded(true), ak(old, cur, other, none)},
		{"tags any", search.NewOptions().Tags("prod", "dev"), ak(cur, other)},
		{"tags any with superseded", search.NewOptions().Tags("ops").IncludeSuperseded(true), ak(old, cur)},
		{"tags all", search.NewOptions().AllTags("ops", "prod").IncludeSuperseded(true), ak(cur)},
		{"tags all none", search.NewOptions().AllTags("ops", "dev"), nil},
		{"tags any+all", search.NewOptions().Tags("prod", "dev").AllTags("ops"), ak(cur)},
		{"since", search.NewOptions().ContentTypes(search.Archival).Since(day(15)), ak(other, none)},
		{"until", search.NewOptions().ContentTypes(search.Archival).Until(day(20)).IncludeSuperseded(true), ak(old, cur)},
		{"range", search.NewOptions().Since(day(5)).Until(day(21)), append([]string{"messages:" + itoa(msg)}, ak(cur, other)...)},
		{"all types", search.NewOptions(), append(append([]string{"blocks:" + itoa(blk)}, ak(cur, other, none)...), "messages:"+itoa(msg))},
		// Bounds past what int64 nanoseconds hold (before 1678, after 2262)
		// are no bounds: UnixNano wrapped them into other dates.
		{"until far future", search.NewOptions().ContentTypes(search.Archival).Until(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)), ak(cur, other, none)},
		{"since far past", search.NewOptions().ContentTypes(search.Archival).Since(time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)), ak(cur, other, none)},
		{"since far future", search.NewOptions().ContentTypes(search.Archival).Since(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)), nil},
		{"until far past", search.NewOptions().ContentTypes(search.Archival).Until(time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)), nil},
	}
	for _, mode := range []search.Mode{search.FTS, search.Vector, search.Hybrid} {
		for _, tc := range tests {
			rs, err := x.Search(ctx, "deploy", search.Scope{Agent: "a"}, tc.opts.Mode(mode).Limit(50))
			if err != nil {
				t.Fatalf("%v/%s: %v", mode, tc.name, err)
			}
			got := keys(rs)
			sort.Strings(got)
			want := slices.Clone(tc.want)
			sort.Strings(want)
			if !slices.Equal(got, want) {
				t.Errorf("%v/%s: got %v, want %v", mode, tc.name, got, want)
			}
			for _, r := range rs {
				if r.Type == search.Archival && r.Superseded != (r.ID == old) {
					t.Errorf("%v/%s: %s Superseded = %v", mode, tc.name, key(r), r.Superseded)
				}
			}
		}
	}
	if textCache && searchindex.TextCacheFilters(x) == 0 {
		t.Error("no vector leg had its filters checked by the text cache")
	}
	// Tags and metadata come back.
	rs, err := x.Search(ctx, "deploy", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).AllTags("prod"))
	if err != nil || len(rs) != 1 || !slices.Equal(rs[0].Tags, []string{"ops", "prod"}) || len(rs[0].Metadata) != 0 {
		t.Fatalf("tags: %+v, %v", rs, err)
	}
	_ = blk
}

// TestSelectiveFilterFallsBackToExact: a filter that keeps one row out of
// thousands still finds it by vector (KNN deepening, then exact scan).
func TestSelectiveFilterFallsBackToExact(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("inserts 5,000 rows with vectors (40 s under -race)")
	}
	for _, cm := range cacheModes {
		t.Run(cm.name, func(t *testing.T) { testSelectiveFilter(t, cm.opts) })
	}
}

func testSelectiveFilter(t *testing.T, opts *searchindex.IndexOptions) {
	ctx := context.Background()
	db := openDB(t)
	x, err := newIndexWarm(ctx, db, search.NewOffline(32), opts)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.BeginTx(ctx, nil)
	for i := 0; i < 5000; i++ {
		insertArchival(t, tx, archivalRow{Agent: "a", Content: "common filler note number " + itoa(int64(i)), Created: baseTime})
	}
	rare := insertArchival(t, tx, archivalRow{Agent: "a", Content: "unrelated words entirely", Created: baseTime.Add(time.Hour)})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	indexAll(t, ctx, db, x)
	rs, err := x.Search(ctx, "common filler note", search.Scope{Agent: "a"},
		search.NewOptions().Mode(search.Vector).Since(baseTime.Add(time.Minute)))

	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ID != rare {
		t.Fatalf("got %v", keys(rs))
	}
	// A deadline that expires during the (slow) exact scan surfaces as
	// context.DeadlineExceeded.
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		dctx, cancel := context.WithTimeout(ctx, d)
		_, err := x.Search(dctx, "common filler note", search.Scope{Agent: "a"},
			search.NewOptions().Mode(search.Vector).Since(baseTime.Add(time.Minute)))

		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("deadline %v: err %v does not match DeadlineExceeded", d, err)
		}
	}
}

func TestResultFieldsAndScores(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	b := insertBlock(t, db, "a", "project-plan", "Migrate the database to Postgres by March.")
	e := insertArchival(t, db, archivalRow{Agent: "a", Content: "The Postgres migration needs a maintenance window.",
		Tags: []string{"db"}, Metadata: `{"source":"meeting"}`})
	m := insertMessage(t, db, "a", "assistant", "I will plan the Postgres migration.", baseTime)
	indexAll(t, ctx, db, x)

	// FTS, one type: Score = -BM25, snippet highlighted.
	rs, err := x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
	if err != nil || len(rs) != 1 {
		t.Fatal(rs, err)
	}
	r := rs[0]
	if r.ID != e || r.Owner != "a" || r.Score != -r.Source.BM25 || r.Source.FTSRank != 1 || r.Source.VectorRank != 0 ||
		r.Source.Fused != 0 || r.Score <= 0 || !r.Created.Equal(baseTime) || r.Metadata["source"] != "meeting" {
		t.Errorf("fts result %+v", r)
	}
	if !strings.Contains(r.Snippet, search.HighlightStart+"Postgres"+search.HighlightEnd) ||
		!strings.Contains(r.Snippet, search.HighlightStart+"migration"+search.HighlightEnd) {
		t.Errorf("snippet %q", r.Snippet)
	}
	// Vector: Score = 1 - Distance.
	rs, err = x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector))
	if err != nil || len(rs) != 3 {
		t.Fatal(rs, err)
	}
	for i, r := range rs {
		if r.Source.VectorRank == 0 || r.Source.FTSRank != 0 || r.Score != 1-r.Source.Distance || r.Snippet == "" {
			t.Errorf("vector result %+v", r)
		}
		if i > 0 && r.Score > rs[i-1].Score {
			t.Errorf("vector results out of order")
		}
	}
	// Hybrid: Score = Fused, both sides recorded.
	rs, err = x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Hybrid))
	if err != nil || len(rs) != 3 {
		t.Fatal(rs, err)
	}
	seen := map[search.ContentType]bool{}
	for _, r := range rs {
		seen[r.Type] = true
		if r.Score != r.Source.Fused || r.Source.FTSRank == 0 || r.Source.VectorRank == 0 {
			t.Errorf("hybrid result %+v", r)
		}
		switch r.Type {
		case search.Blocks:
			if r.ID != b || r.Label != "project-plan" || r.Metadata["block_type"] != "working" {
				t.Errorf("block result %+v", r)
			}
		case search.Messages:
			if r.ID != m || r.Metadata["role"] != "assistant" {
				t.Errorf("message result %+v %s", r, r.Metadata)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("types %v", seen)
	}
	// MinScore applies to the final score.
	all, _ := x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector))
	cut := all[1].Score
	rs, err = x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector).MinScore(cut))
	if err != nil || len(rs) != 2 {
		t.Errorf("MinScore(%v): %d results, %v", cut, len(rs), err)
	}
	// Limit.
	rs, _ = x.Search(ctx, "postgres migration", search.Scope{Agent: "a"}, search.NewOptions().Limit(1))
	if len(rs) != 1 {
		t.Errorf("Limit(1): %d results", len(rs))
	}
	// Invalid queries.
	for _, q := range []string{"", "  ", "?!"} {
		if _, err := x.Search(ctx, q, search.Scope{Agent: "a"}, nil); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("Search(%q) err = %v", q, err)
		}
	}
	if _, err := x.Search(ctx, "x", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Mode(42))); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("bad mode err = %v", err)
	}
	// Cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := x.Search(cctx, "postgres", search.Scope{Agent: "a"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestNoEmbedder(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	insertArchival(t, db, archivalRow{Agent: "a", Content: "hello world"})
	rs, err := x.Search(ctx, "hello", search.Scope{Agent: "a"}, nil) // Auto = FTS
	if err != nil || len(rs) != 1 || rs[0].Source.FTSRank != 1 {
		t.Fatalf("auto without embedder: %v, %v", rs, err)
	}
	for _, m := range []search.Mode{search.Vector, search.Hybrid} {
		if _, err := x.Search(ctx, "hello", search.Scope{Agent: "a"}, search.NewOptions().Mode(m)); !errors.Is(err, search.ErrNoEmbedder) {
			t.Errorf("%v without embedder: %v", m, err)
		}
	}
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: 1, Owner: "a", Text: "x"}}); !errors.Is(err, search.ErrNoEmbedder) {
		t.Errorf("PutVectors: %v", err)
	}
	if err := x.DeleteVectors(ctx, db, search.Archival, 1); err != nil {
		t.Errorf("DeleteVectors without vec tables: %v", err)
	}
}

func TestVectorMaintenance(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	emb := search.NewOffline(32)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM vec_archival`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Inside the caller's transaction: rollback drops the vectors too.
	tx, _ := db.BeginTx(ctx, nil)
	id := insertArchival(t, tx, archivalRow{Agent: "a", Content: "first"})
	if err := x.PutVectors(ctx, tx, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	if n := count(); n != 0 {
		t.Fatalf("rolled back vectors: %d", n)
	}
	id = insertArchival(t, db, archivalRow{Agent: "a", Content: "first"})
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	// Re-putting replaces (also with a new owner); blank text deletes.
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "b", Text: "second"}}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Fatalf("after replace: %d", n)
	}
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "b", Text: "  "}}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after blank: %d", n)
	}
	// Precomputed vectors: wrong dimensions and zero vectors are refused.
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: id, Owner: "a", Vector: make([]float32, 31)}}); err == nil {
		t.Fatal("31-dim vector accepted")
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: id, Owner: "a", Vector: make([]float32, 32)}}); err == nil {
		t.Fatal("zero vector accepted")
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival|search.Blocks, nil); !errors.Is(err, search.ErrInvalidQuery) {
		t.Fatalf("compound kind: %v", err)
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: id, Owner: "a", Vector: emb.Vector("first")}}); err != nil {
		t.Fatal(err)
	}
	// New skips the delete a replacement needs; under an id that still has
	// a vector it fails instead of keeping two.
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: id, Owner: "a", Vector: emb.Vector("again"), New: true}}); err == nil || count() != 1 {
		t.Fatalf("New over an existing vector: %v, %d vectors", err, count())
	}
	if err := x.DeleteVectors(ctx, db, search.Archival, id, 12345); err != nil || count() != 0 {
		t.Fatalf("DeleteVectors: %v, %d", err, count())
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: id, Owner: "a", Vector: emb.Vector("first"), New: true}}); err != nil || count() != 1 {
		t.Fatalf("New on a row without a vector: %v, %d vectors", err, count())
	}
	if err := x.DeleteVectors(ctx, db, search.Archival, id); err != nil || count() != 0 {
		t.Fatalf("DeleteVectors: %v, %d", err, count())
	}
	// Deleting the row drops its vector by trigger.
	if err := x.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Fatalf("after row delete: %d", n)
	}
}

func TestEmbedderMismatchAndReembed(t *testing.T) {
	for _, cm := range cacheModes {
		t.Run(cm.name, func(t *testing.T) { testEmbedderMismatchAndReembed(t, cm.opts) })
	}
}

func testEmbedderMismatchAndReembed(t *testing.T, opts *searchindex.IndexOptions) {
	ctx := context.Background()
	path := t.TempDir() + "/e.db"
	db := openDBAt(t, path)
	small := search.NewOffline(32)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, small, nil)
	if err != nil {
		t.Fatal(err)
	}
	name, dims, err := searchindex.RecordedEmbedder(ctx, db)
	if err != nil || name != "offline-hash-v1/32" || dims != 32 {
		t.Fatalf("recorded %q %d %v", name, dims, err)
	}
	for i, s := range []string{"solar panels on the roof", "wind turbines offshore", "battery storage at home"} {
		insertArchival(t, db, archivalRow{Agent: "a", Content: s})
		insertMessage(t, db, "a", "user", s+" question", time.Time{})
		insertBlock(t, db, "a", "b"+itoa(int64(i)), s+" block")
	}
	insertMessage(t, db, "a", "assistant", "", time.Time{}) // blank: no vector
	indexAll(t, ctx, db, x)

	// Same embedder again: fine. A different one: mismatch, but usable.
	if _, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(32), nil); err != nil {
		t.Fatal(err)
	}
	big := search.NewOffline(48)
	y, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, big, opts)
	if !errors.Is(err, search.ErrEmbedderMismatch) || y == nil {
		t.Fatalf("NewIndex with other embedder: %v, %v", y, err)
	}
	if err := y.Mismatch(ctx); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Fatalf("Mismatch() = %v", err)
	}
	for _, m := range []search.Mode{search.Vector, search.Hybrid} {
		if _, err := y.Search(ctx, "solar", search.Scope{Agent: "a"}, search.NewOptions().Mode(m)); !errors.Is(err, search.ErrEmbedderMismatch) {
			t.Errorf("%v with mismatched embedder: %v", m, err)
		}
	}
	if rs, err := y.Search(ctx, "solar", search.Scope{Agent: "a"}, nil); err != nil || len(rs) == 0 || rs[0].Source.VectorRank != 0 {
		t.Errorf("Auto with mismatched embedder should fall back to FTS: %v, %v", rs, err)
	}
	if err := y.PutVectors(ctx, db, search.Archival, []searchindex.VectorItem{{ID: 1, Owner: "a", Text: "x"}}); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Errorf("PutVectors with mismatched embedder: %v", err)
	}

	// Reembed switches over; a row changed between the phases is handled by
	// re-checking its text hash (simulated by changing it via progress).
	var calls, last int
	changed := false
	err = y.Reembed(ctx, func(done, total int) {
		calls++
		last = done
		if total != 10 {
			t.Errorf("total = %d, want 10", total)
		}
		if done == total && !changed {
			changed = true
			if _, err := db.ExecContext(ctx, `UPDATE archival SET content = 'geothermal heat pump' WHERE id = 1`); err != nil {
				t.Error(err)
			}
			insertArchival(t, db, archivalRow{Agent: "a", Content: "tidal energy barrage"})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 2 || last != 10 {
		t.Errorf("progress calls %d, last %d", calls, last)
	}
	if err := y.Mismatch(ctx); err != nil {
		t.Fatalf("after Reembed: %v", err)
	}
	if err := x.Mismatch(ctx); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Fatalf("old index after Reembed: %v", err)
	}
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM vec_archival`).Scan(&n)
	if n != 4 {
		t.Errorf("vec_archival rows %d, want 4", n)
	}
	db.QueryRowContext(ctx, `SELECT count(*) FROM vec_messages`).Scan(&n)
	if n != 3 {
		t.Errorf("vec_messages rows %d, want 3 (blank skipped)", n)
	}
	for q, want := range map[string]int64{"geothermal heat pump": 1, "tidal energy barrage": 4} {
		rs, err := y.Search(ctx, q, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(1))
		if err != nil || len(rs) != 1 || rs[0].ID != want || rs[0].Source.Distance > 0.01 {
			t.Errorf("after Reembed %q: %+v, %v", q, rs, err)
		}
	}
	// The vectors are the new embedder's.
	var blob []byte
	if err := db.QueryRowContext(ctx, `SELECT embedding FROM vec_archival WHERE rowid = 2`).Scan(&blob); err != nil || len(blob) != 48*4 {
		t.Errorf("vector blob %d bytes, %v", len(blob), err)
	}
	// A reopened index with the new embedder works without error.
	if _, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(48), nil); err != nil {
		t.Fatal(err)
	}
	// A cancelled Reembed changes nothing.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := x.Reembed(cctx, nil); err == nil {
		t.Fatal("cancelled Reembed succeeded")
	}
	if name, _, _ := searchindex.RecordedEmbedder(ctx, db); name != big.Name() {
		t.Fatalf("record after cancelled Reembed: %q", name)
	}
}

// TestConcurrentUse searches from several goroutines while another writes
// rows and vectors through its own transactions.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(32), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		insertArchival(t, db, archivalRow{Agent: "a", Content: "seed note about apples " + itoa(int64(i))})
	}
	indexAll(t, ctx, db, x)
	done := make(chan struct{})
	errs := make(chan error, 8)
	go func() {
		defer close(done)
		for i := 0; i < 30; i++ {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('a', ?, 0, 0)`, "apples and pears "+itoa(int64(i)))
			if err != nil {
				tx.Rollback()
				errs <- err
				return
			}
			id, _ := res.LastInsertId()
			if err := x.PutVectors(ctx, tx, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: "apples and pears"}}); err != nil {
				tx.Rollback()
				errs <- err
				return
			}
			if err := tx.Commit(); err != nil {
				errs <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := x.Search(ctx, "apples", search.Scope{Agent: "a"}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rs, err := x.Search(ctx, "pears", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).Limit(100))
	if err != nil || len(rs) != 30 {
		t.Fatalf("%d results, %v", len(rs), err)
	}
}

// driver.Vectors put in several INSERTs of vecInsertRows rows (the full ones
// through one prepared statement, then a shorter last one; a replacement
// among new rows makes its chunk an upsert) are each stored under their
// own row, inside the caller's transaction.
func TestPutEmbeddingsManyChunks(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "many chunks of vectors written and read back, one goroutine")
	ctx := context.Background()
	db := openDB(t)
	emb := search.NewOffline(32)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	// Closed before the database (cleanups run last first): a cache load
	// still holding a connection when the database closes releases it
	// later, and SQLite's last close then writes in the directory the
	// test's TempDir is removing ("directory not empty").
	t.Cleanup(func() { x.Close() })
	const n = 150 // 64 + 64 + 22
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("row %d", i)})
	}
	// Row 100 already has a vector: its chunk must replace it, not fail.
	if err := x.PutEmbeddings(ctx, db, search.Archival, []searchindex.EmbeddingItem{{ID: ids[100], Owner: "a", Vector: emb.Vector("stale")}}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]searchindex.EmbeddingItem, n)
	for i, id := range ids {
		items[i] = searchindex.EmbeddingItem{ID: id, Owner: "a", Vector: emb.Vector(fmt.Sprintf("text %d", i)), New: i != 100}
	}
	if err := x.PutEmbeddings(ctx, tx, search.Archival, items); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var stored int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM vec_archival`).Scan(&stored); err != nil || stored != n {
		t.Fatalf("%d vectors stored (%v), want %d", stored, err, n)
	}
	opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(1)
	for _, i := range []int{0, 63, 64, 100, 127, 128, 149} {
		rs, err := x.Search(ctx, fmt.Sprintf("text %d", i), search.Scope{Agent: "a"}, opts)
		if err != nil || len(rs) != 1 || rs[0].ID != ids[i] || rs[0].Source.Distance > 1e-5 {
			t.Fatalf("nearest to row %d's vector: %+v, %v", i, rs, err)
		}
	}
}
