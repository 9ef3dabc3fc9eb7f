package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// textCacheCorpus fills db with archival entries for two agents (the
// Cranfield abstracts for "a" when the collection is present), messages,
// blocks and a share, and returns queries to ask.
func textCacheCorpus(t *testing.T, db *sql.DB) []string {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields(`wing flow boundary layer pressure heat transfer shock wave supersonic
		mach number jet nozzle buckling shell cylinder plate stress vibration flutter
		temperature turbulent laminar skin friction drag lift airfoil slender body cone
		café naïve Ærøskøbing 25degrees alloys engine engines engineering`)
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	var queries []string
	// Not under the race detector: there the SQL side takes minutes over
	// 1,400 abstracts, and the synthetic corpus covers the same paths.
	if eval.FindCranfield() == "" && !raceEnabled && testenv.CI() {
		t.Fatal("Cranfield collection not found: CI=true requires it")
	}
	if dir := eval.FindCranfield(); dir != "" && !raceEnabled {
		c, err := eval.LoadCranfield(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range c.Docs {
			insertArchival(t, db, archivalRow{Agent: "a", Content: d.Title + "\n" + d.Body})
		}
		// Every third query in the long run, every 25th by default:
		// nine Cranfield queries still rank thousands of rows each.
		step := testenv.Scale(25, 3)
		for i, q := range c.Queries {
			if i%step == 0 {
				queries = append(queries, q.Text)
			}
		}
	}
	for i := range 300 {
		agent := []string{"a", "b"}[i%2]
		// Two of three entries name a conversation (two per agent,
		// interleaved), so they are indexed with their neighbours.
		meta := fmt.Sprintf(`{"topic": %q}`, vocab[r.IntN(len(vocab))])
		if i%3 != 0 {
			meta = fmt.Sprintf(`{"topic": %q, "session": "s%d"}`, vocab[r.IntN(len(vocab))], i%4)
		}
		insertArchival(t, db, archivalRow{Agent: agent, Content: text(5 + r.IntN(40)),
			Tags: []string{vocab[r.IntN(len(vocab))]}, Metadata: meta,
			Created: baseTime.Add(time.Duration(i) * time.Hour)})
		insertMessage(t, db, agent, "user", text(3+r.IntN(20)), baseTime.Add(time.Duration(i)*time.Minute))
	}
	for i := range 40 {
		id := insertBlock(t, db, []string{"a", "b", "c"}[i%3], fmt.Sprintf("%s_%d", vocab[i%len(vocab)], i), text(10+r.IntN(60)))
		if i%5 == 0 {
			shareBlock(t, db, id, "a")
		}
	}
	n := 30
	if raceEnabled {
		n = 6 // the SQL side is ten times slower under the race detector
	}
	for range n {
		queries = append(queries, text(1+r.IntN(6)))
	}
	return append(queries, "engines", "engine engineering", "Cafe", "naive", "aerøskøbing", "25 degrees", "nothingmatchesthis")
}

// compareTextCache asks both indexes every query in several shapes and
// requires identical results: the same rows in the same order with the
// same bm25 values.
func compareTextCache(t *testing.T, ctx context.Context, sqlx, cached *searchindex.Index, queries []string) {
	t.Helper()
	type shape struct {
		name  string
		scope search.Scope
		opts  func() *search.Options
	}
	shapes := []shape{
		{"archival", search.Scope{Agent: "a"}, func() *search.Options { return search.NewOptions().ContentTypes(search.Archival) }},
		{"archival-100", search.Scope{Agent: "a"}, func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).Limit(100)
		}},
		{"archival-b-superseded", search.Scope{Agent: "b"}, func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).IncludeSuperseded(true).Limit(30)
		}},
		{"archival-window", search.Scope{Agent: "b"}, func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).Since(baseTime.Add(50 * time.Hour)).Until(baseTime.Add(200 * time.Hour))
		}},
		{"messages", search.Scope{Agent: "b"}, func() *search.Options { return search.NewOptions().ContentTypes(search.Messages).Limit(20) }},
		{"blocks-shared", search.Scope{Agent: "a"}, func() *search.Options { return search.NewOptions().ContentTypes(search.Blocks).Limit(20) }},
		{"all-types", search.Scope{Agent: "a"}, func() *search.Options { return search.NewOptions().Limit(25) }},
		{"system", search.Scope{All: true}, func() *search.Options { return search.NewOptions().Limit(50) }},
		{"tags (SQL)", search.Scope{Agent: "a"}, func() *search.Options { return search.NewOptions().Tags("wing", "flow") }},
	}
	compared := 0
	before, beforeRows := searchindex.TextCacheAnswers(cached), searchindex.TextCacheRows(cached)
	for _, q := range queries {
		for _, sh := range shapes {
			want, werr := sqlx.Search(ctx, q, sh.scope, sh.opts().Mode(search.FTS))
			got, gerr := cached.Search(ctx, q, sh.scope, sh.opts().Mode(search.FTS))
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%s %q: SQL error %v, cache error %v", sh.name, q, werr, gerr)
			}
			if len(want) != len(got) {
				t.Fatalf("%s %q: SQL %d results, cache %d\nSQL   %v\ncache %v", sh.name, q, len(want), len(got), keys(want), keys(got))
			}
			if err := sameRanking(want, got); err != nil {
				t.Fatalf("%s %q: %v\nSQL   %v\ncache %v", sh.name, q, err, keys(want), keys(got))
			}
			compared += len(want)
		}
	}
	if compared == 0 {
		t.Fatal("no results compared")
	}
	// Every shape but the tag filter asks the cache at least once per
	// query (the multi-type shapes once per type).
	if n := searchindex.TextCacheAnswers(cached) - before; n < int64(8*len(queries)) {
		t.Fatalf("the text cache answered %d legs of %d queries: searches fell back to SQL", n, len(queries))
	}
	// Archival and message pages take their rows from the cache (the
	// results compared whole above).
	if n := searchindex.TextCacheRows(cached) - beforeRows; n < int64(2*len(queries)) {
		t.Fatalf("the text cache supplied the rows of %d pages for %d queries: pages were read from SQL", n, len(queries))
	}
	t.Logf("%d results compared", compared)
}

// TestTextCacheRanksLikeFTS5 holds IndexOptions.TextCache to the SQL path:
// for every query and filter shape the same rows, in the same order, with
// bit-identical bm25 values and equal in every field (archival and
// message rows come from the cache's copy); then again after changes made
// through another connection pool (as another process would): inserts,
// edits of content, tags, metadata and a message's role, deletes,
// supersession, a block re-index, an owner change and a new share.
func TestTextCacheRanksLikeFTS5(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rankings compared query by query, one goroutine")
	ranksLikeFTS5(t, false)
}

// ranksLikeFTS5 is TestTextCacheRanksLikeFTS5, with a partial cache
// (per-owner partitions ranked with FTS5's own statistics) if partial.
func ranksLikeFTS5(t *testing.T, partial bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	queries := textCacheCorpus(t, db)
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if partial {
		searchindex.ForceTextPartial(cached)
		if err := cached.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
		}
	} else if err := cached.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	compareTextCache(t, ctx, sqlx, cached, queries)

	other := openDBAt(t, path)
	for _, q := range []string{
		`UPDATE archival SET content = content || ' supersonic flutter' WHERE id % 7 = 0`,
		`UPDATE archival SET valid_to = created_at WHERE id % 11 = 0`,
		`DELETE FROM archival WHERE id % 13 = 0`,
		`UPDATE archival SET metadata_json = '{"topic": "wing wing wing"}' WHERE id % 17 = 0`,
		`DELETE FROM messages WHERE id % 5 = 0`,
		`UPDATE messages SET content = 'boundary layer shock' WHERE id % 9 = 0`,
		`UPDATE messages SET role = 'tool', name = 'calc', tool_call_id = 'c1' WHERE id % 4 = 0`,
		`UPDATE archival SET tags_json = '["flutter","x"]', tags_text = 'flutter x' WHERE id % 3 = 0`,
		`UPDATE archival SET metadata_json = '[1, 2]' WHERE id % 23 = 0`,
		`UPDATE archival SET metadata_json = '{"conversation": "c9"}' WHERE id % 19 = 0`,
		`UPDATE blocks SET rendered = rendered || ' laminar laminar' WHERE id % 2 = 0`,
		`UPDATE blocks SET owner = 'a' WHERE id = 3`,
		`DELETE FROM blocks WHERE id = 4`,
		`INSERT INTO shares (block_id, agent, permission, created_at) VALUES (5, 'a', 'ReadOnly', 0)`,
	} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	insertArchival(t, other, archivalRow{Agent: "a", Content: "a new entry about wing flutter at mach number two"})
	insertMessage(t, other, "b", "user", "new message about the turbulent boundary layer", time.Time{})
	compareTextCache(t, ctx, sqlx, cached, queries)
}

// near reports whether two bm25 scores agree up to the rounding of log():
// FTS5 takes log() from the C library, the cache from package math.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// sameRanking requires got to rank as want: position by position scores
// that agree (near), and the same rows in the same order, except that rows
// whose scores tie (near) may come in either order, and a tie running into
// the end of the list may be cut at different rows. Rows present in both
// must agree in every other field.
func sameRanking(want, got []search.Result) error {
	byKey := map[string]search.Result{}
	for _, g := range got {
		byKey[key(g)] = g
	}
	for i := 0; i < len(want); {
		j := i + 1
		for j < len(want) && near(want[j].Score, want[i].Score) {
			j++
		}
		wantSet := map[string]bool{}
		for k := i; k < j; k++ {
			if !near(want[k].Score, got[k].Score) || !near(want[k].Source.BM25, got[k].Source.BM25) {
				return fmt.Errorf("result %d: SQL score %.17g, cache %.17g", k, want[k].Score, got[k].Score)
			}
			wantSet[key(want[k])] = true
		}
		if j < len(want) { // not the last run: the same rows
			for k := i; k < j; k++ {
				if !wantSet[key(got[k])] {
					return fmt.Errorf("result %d: SQL has %s, cache %s", k, key(want[k]), key(got[k]))
				}
			}
		}
		for k := i; k < j; k++ {
			w := want[k]
			g, ok := byKey[key(w)]
			if !ok {
				continue
			}
			w.Score, g.Score, w.Source.BM25, g.Source.BM25 = 0, 0, 0, 0
			w.Source.FTSRank, g.Source.FTSRank, w.Source.Fused, g.Source.Fused = 0, 0, 0, 0
			// FTSNorm is a score too (Score, when types are fused; compared above).
			w.Source.FTSNorm, g.Source.FTSNorm = 0, 0
			if !reflect.DeepEqual(w, g) {
				return fmt.Errorf("%s differs:\nSQL   %+v\ncache %+v", key(w), w, g)
			}
		}
		i = j
	}
	return nil
}

// TestTextCacheSeesEveryCommittedWrite runs writers (each on its own
// connection pool, as separate processes would be) beside searchers on
// one cached index: a search started after a write committed finds it.
func TestTextCacheSeesEveryCommittedWrite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	before := searchindex.TextCacheAnswers(x)
	const writers, each = 3, 25
	errs := make(chan error, writers)
	for w := range writers {
		wdb := openDBAt(t, path)
		go func() {
			for i := range each {
				word := fmt.Sprintf("marker%dx%d", w, i)
				if _, err := wdb.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from)
					VALUES ('a', ?, 0, 0)`, "note "+word); err != nil {
					errs <- err
					return
				}
				rs, err := x.Search(ctx, word, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
				if err == nil && (len(rs) != 1 || !strings.Contains(rs[0].Content, word)) {
					err = fmt.Errorf("search for %s right after its insert: %v", word, keys(rs))
				}
				if err == nil {
					rs, err = x.Search(ctx, word, search.Scope{Agent: "b"}, search.NewOptions().Mode(search.FTS))
					if err == nil && len(rs) != 0 {
						err = fmt.Errorf("agent b sees a's entry %s", word)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	rs, err := x.Search(ctx, "note", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).Limit(1000))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != writers*each {
		t.Fatalf("%d notes found, want %d", len(rs), writers*each)
	}
	if n := searchindex.TextCacheAnswers(x) - before; n < 2*writers*each {
		t.Fatalf("the text cache answered %d of %d searches", n, 2*writers*each+1)
	}
}

// TestTextCacheUnderShortDeadlines: searches whose contexts end (cancel
// right after each) before the cache is built still succeed (in SQL) while
// it builds in the background, the build outlives them, and the cache is
// then used.
func TestTextCacheUnderShortDeadlines(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, raceRows(2_000))
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The build is held until every search below has ended, however fast
	// the machine: one bound to a search's context would be cancelled (and
	// fail, and WarmTextCache report it) before it could finish.
	release := make(chan struct{})
	searchindex.SetTextCatchUpHook(x, func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	for range 5 {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		// One content type: one full-text leg, so the first search has
		// exactly one chance to meet the cache.
		rs, err := x.Search(sctx, "flutter 42", search.Scope{Agent: "a"},
			search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))

		cancel()
		if err != nil || len(rs) != 10 {
			t.Fatalf("search while the cache builds: %d results, %v", len(rs), err)
		}
		if searchindex.TextCacheAnswers(x) != 0 {
			t.Fatal("a search waited for the cache instead of ranking in SQL")
		}
	}
	close(release)
	// A caller that gives up does not stop the build.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if err := x.WarmTextCache(gone); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	before := searchindex.TextCacheAnswers(x)
	rs, err := x.Search(ctx, "flutter 42", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
	if err != nil || len(rs) != 10 || searchindex.TextCacheAnswers(x) != before+1 {
		t.Fatalf("after warming: %d results, %v, cache answered %d", len(rs), err, searchindex.TextCacheAnswers(x)-before)
	}
}

// BenchmarkCranfieldFTS times Cranfield queries (archival, limit 10 and
// 100) through FTS5 and through the text cache.
func BenchmarkCranfieldFTS(b *testing.B) {
	dir := eval.FindCranfield()
	if dir == "" {
		b.Skip("Cranfield collection not found")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db := openDB(b)
	for _, d := range c.Docs {
		insertArchival(b, db, archivalRow{Agent: "a", Content: d.Title + "\n" + d.Body})
	}
	for _, cache := range []bool{false, true} {
		opts := &searchindex.IndexOptions{}
		if !cache {
			opts.TextCacheBytes = -1
		}
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, opts)
		if err != nil {
			b.Fatal(err)
		}
		if err := x.WarmTextCache(ctx); err != nil {
			b.Fatal(err)
		}
		for _, limit := range []int{10, 100} {
			b.Run(fmt.Sprintf("cache=%v/limit=%d", cache, limit), func(b *testing.B) {
				cranfieldQueries(b, x, c.Queries, search.FTS, limit)
			})
		}
	}
}

// cranfieldQueries runs the queries in turn as agent "a" over archival
// entries, one per benchmark iteration.
func cranfieldQueries(b *testing.B, x *searchindex.Index, queries []eval.CranfieldQuery, mode search.Mode, limit int) {
	ctx := context.Background()
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		if _, err := x.Search(ctx, q.Text, search.Scope{Agent: "a"},
			search.NewOptions().Mode(mode).ContentTypes(search.Archival).Limit(limit)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCranfieldHybrid times Cranfield hybrid queries (archival) with
// both in-process caches.
func BenchmarkCranfieldHybrid(b *testing.B) {
	dir := eval.FindCranfield()
	if dir == "" {
		b.Skip("Cranfield collection not found")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		b.Fatal(err)
	}
	if c.DocVectors == nil {
		b.Skip("Cranfield embeddings not found")
	}
	ctx := context.Background()
	db := openDB(b)
	emb := &fixedEmbedder{name: "use-lite-fixed/512", dims: 512, vecs: map[string][]float32{}}
	for _, q := range c.Queries {
		emb.vecs[q.Text] = c.QueryVectors[q.ID]
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		b.Fatal(err)
	}
	var items []searchindex.EmbeddingItem
	for _, d := range c.Docs {
		id := insertArchival(b, db, archivalRow{Agent: "a", Content: d.Title + "\n" + d.Body})
		items = append(items, searchindex.EmbeddingItem{ID: id, Owner: "a", Vector: c.DocVectors[d.ID]})
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival, items); err != nil {
		b.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		b.Fatal(err)
	}
	if err := x.WarmVectorCache(ctx); err != nil {
		b.Fatal(err)
	}
	for _, limit := range []int{10, 100} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			cranfieldQueries(b, x, c.Queries, search.Hybrid, limit)
		})
	}
}

// TestPageLosesARowBetweenRankAndFetch deletes and supersedes ranked rows
// between ranking and the page fetch: the page never shows them and is
// still full when enough rows match.
func TestPageLosesARowBetweenRankAndFetch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	var ids []int64
	for i := range 6 {
		ids = append(ids, insertArchival(t, db, archivalRow{Agent: "a",
			Content: strings.Repeat("alpha ", 6-i) + fmt.Sprintf("entry %d", i)}))
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	step := 0
	searchindex.SetBeforeFill(x, func() {
		step++
		switch step {
		case 1: // the best match goes
			_, err = other.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, ids[0])
		case 2: // the next is superseded
			_, err = other.ExecContext(ctx, `UPDATE archival SET valid_to = created_at WHERE id = ?`, ids[1])
		}
		if err != nil {
			t.Error(err)
		}
	})
	rs, err := x.Search(ctx, "alpha", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).Limit(3))
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{ids[2], ids[3], ids[4]}
	if len(rs) != 3 || rs[0].ID != want[0] || rs[1].ID != want[1] || rs[2].ID != want[2] {
		t.Fatalf("got %v, want archival %v", keys(rs), want)
	}
	if step < 3 {
		t.Fatalf("ranked %d times, want a re-rank per lost row", step)
	}
}

// countingEmbedder counts Embed calls.
type countingEmbedder struct {
	search.Embedder
	calls atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	return c.Embedder.Embed(ctx, texts)
}

// TestRerankEmbedsOnce: a page ranked again after losing a row does not
// embed the query again.
func TestRerankEmbedsOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	emb := &countingEmbedder{Embedder: search.NewOffline(32)}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for i := range 4 {
		ids = append(ids, insertArchival(t, db, archivalRow{Agent: "a", Content: strings.Repeat("gamma ", 4-i) + "note"}))
	}
	indexAll(t, ctx, db, x)
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := x.WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := false
	searchindex.SetBeforeFill(x, func() {
		if !deleted {
			deleted = true
			if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, ids[0]); err != nil {
				t.Error(err)
			}
		}
	})
	emb.calls.Store(0)
	rs, err := x.Search(ctx, "gamma", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Hybrid).Limit(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || slices.ContainsFunc(rs, func(r search.Result) bool { return r.ID == ids[0] }) {
		t.Fatalf("got %v", keys(rs))
	}
	if n := emb.calls.Load(); n != 1 {
		t.Fatalf("query embedded %d times", n)
	}
}

// bulkArchival inserts n entries for agent "a" in one transaction.
// raceRows is n, or 200 under the race detector unless the long tests
// run: for tests whose builds are held by hooks, where the rows only give
// the searches something to find (ten results a page).
func raceRows(n int) int {
	if testenv.Race && !testenv.Long() {
		return min(n, 200)
	}
	return n
}

func bulkArchival(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('a', ?, 0, 0)`,
			fmt.Sprintf("entry %d about wing flutter and boundary layer number %d", i, i%97)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestTextCacheBuildStopsAtClose: Index.Close stops a build in progress
// and waits for it; nothing runs on the database afterwards.
func TestTextCacheBuildStopsAtClose(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, raceRows(2_000))
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The build waits until Close ends its context: Close meets it running
	// however fast the machine. (A Close that did not end it would leave it
	// waiting: after a minute it gives up, and the test fails below.)
	var cancelled atomic.Bool
	searchindex.SetTextCatchUpHook(x, func(ctx context.Context) {
		select {
		case <-ctx.Done():
			cancelled.Store(true)
		case <-time.After(time.Minute):
		}
	})
	if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
		t.Fatal(err)
	}
	if !searchindex.TextFlightRunning(x) {
		t.Fatal("the search started no build")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if searchindex.TextFlightRunning(x) || !cancelled.Load() {
		t.Fatal("Close did not stop the running build")
	}
	if searchindex.TextCacheLoaded(x) {
		t.Fatal("a build stopped by Close was applied")
	}
	// Searches still work, in SQL; no new build starts.
	rs, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
	if err != nil || len(rs) != 10 || searchindex.TextFlightRunning(x) {
		t.Fatalf("after Close: %d results, %v, building %v", len(rs), err, searchindex.TextFlightRunning(x))
	}
	if err := x.WarmTextCache(ctx); err == nil {
		t.Fatal("WarmTextCache after Close succeeded")
	}
}

// TestTextCacheFailedBuildBacksOff: a build that fails is not retried by
// every search (each would read the whole corpus again); searches rank in
// SQL and WarmTextCache reports why.
func TestTextCacheFailedBuildBacksOff(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, raceRows(2_000))
	// A row the cache cannot read; the SQL path does not read it for
	// this query.
	bad, err := db.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('b', 'unrelated', 0, 0)`)
	if err != nil {
		t.Fatal(err)
	}
	badID, _ := bad.LastInsertId()
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	searchindex.SetTextScanFault(x, func(id int64) error {
		if id == badID {
			return errUnreadable
		}
		return nil
	})
	// A back-off longer than the test: every search after the first
	// falls inside it however slow the machine. Each failed build moves
	// the retry time on, so an unchanged one means no build ran.
	searchindex.SetTextBackoff(x, 10*time.Minute)
	var retryAt time.Time
	for i := range 5 {
		rs, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
		if err != nil || len(rs) != 10 {
			t.Fatalf("%d results, %v", len(rs), err)
		}
		for searchindex.TextFlightRunning(x) {
			time.Sleep(time.Millisecond)
		}
		after := searchindex.TextCacheRetryAt(x)
		switch {
		case after.IsZero():
			t.Fatal("no build ran, or the build did not fail")
		case i > 0 && !after.Equal(retryAt):
			t.Fatalf("search %d started a build during the back-off", i)
		}
		retryAt = after
	}
	if err := x.WarmTextCache(ctx); !errors.Is(err, errUnreadable) {
		t.Fatalf("WarmTextCache: %v, want the scan error", err)
	}
}

var errUnreadable = errors.New("unreadable row")

// TestTextCacheFailedCatchUpKeepsState: a catch-up of a loaded cache that
// fails (here: a row it cannot scan) changes nothing; searches rank in SQL
// meanwhile, and once the row is fixed a later catch-up (after the
// back-off) brings the cache back.
func TestTextCacheFailedCatchUpKeepsState(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, 200)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival) }
	var unreadable atomic.Int64
	searchindex.SetTextScanFault(x, func(id int64) error {
		if id == unreadable.Load() {
			return errUnreadable
		}
		return nil
	})
	const badID = 1_000_000
	unreadable.Store(badID)
	if _, err := db.ExecContext(ctx, `INSERT INTO archival (id, agent, content, created_at, valid_from) VALUES (?, 'a', 'zebra crossing', 0, 0)`, badID); err != nil {
		t.Fatal(err)
	}
	before := searchindex.TextCacheAnswers(x)
	rs, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts())
	if err != nil || len(rs) != 10 {
		t.Fatalf("search during a failing catch-up: %d results, %v", len(rs), err)
	}
	if searchindex.TextCacheAnswers(x) != before {
		t.Fatal("the cache answered although its catch-up failed")
	}
	if err := x.WarmTextCache(ctx); !errors.Is(err, errUnreadable) {
		t.Fatalf("WarmTextCache: %v, want the scan error", err)
	}
	if !searchindex.TextCacheLoaded(x) {
		t.Fatal("a failed catch-up dropped the loaded cache")
	}
	unreadable.Store(0) // the row fixed
	deadline := time.Now().Add(10 * time.Second)
	for x.WarmTextCache(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the cache never recovered after the row was fixed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	before = searchindex.TextCacheAnswers(x)
	rs, err = x.Search(ctx, "zebra", search.Scope{Agent: "a"}, opts())
	if err != nil || len(rs) != 1 || rs[0].ID != badID || searchindex.TextCacheAnswers(x) != before+1 {
		t.Fatalf("after recovery: %v, %v, cache answered %d", keys(rs), err, searchindex.TextCacheAnswers(x)-before)
	}
}

// zipfArchival inserts n archival entries of 20-60 words drawn from a
// Zipf-distributed vocabulary of 20,000 words, for agent a: a corpus whose
// term statistics look like notes, not like one repeated sentence.
func zipfArchival(t *testing.T, db *sql.DB, n int, seed uint64) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 7))
	z := rand.NewZipf(r, 1.1, 4, 19_999)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for range n {
		b.Reset()
		for j := range 20 + r.IntN(41) {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%dx", z.Uint64())
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('a', ?, 0, 0)`, b.String()); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestTextCacheBudgetEstimate holds the text cache's size estimate (what
// TextCacheBytes is compared with) to the heap the cache really takes.
func TestTextCacheBudgetEstimate(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures under the race detector are not the production ones")
	}
	testenv.SkipUnlessLong(t, "measures the heap of a 25k-note cache")
	ctx := context.Background()
	db := openDB(t)
	zipfArchival(t, db, 20_000, 1)
	bulkArchival(t, db, 5_000)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	est := searchindex.TextCacheSize(x)
	t.Logf("estimate %d bytes, heap grew %d bytes (%.2f×)", est, heap, float64(est)/float64(heap))
	if est < heap*2/3 || est > heap*3/2 {
		t.Fatalf("estimate %d bytes, heap grew %d: the budget would be off by more than 1.5×", est, heap)
	}
}

// TestTextCacheBudget: a corpus whose text cache would outgrow
// TextCacheBytes is never cached, one that outgrows it later drops the
// cache, and searches answer as SQL does throughout.
func TestTextCacheBudget(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "2,000 rows ranked against SQL at several bounds, one goroutine")
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, 2_000)
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	full, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := full.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	size, index := searchindex.TextCacheSize(full), searchindex.TextCacheIndexSize(full)
	if !searchindex.TextCacheHoldsRows(full) || index >= size {
		t.Fatalf("the full cache holds no rows (%d bytes, %d without)", size, index)
	}
	opts := func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(30)
	}
	same := func(x *searchindex.Index, q string) {
		t.Helper()
		want, err := sqlx.Search(ctx, q, search.Scope{Agent: "a"}, opts())
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(ctx, q, search.Scope{Agent: "a"}, opts())
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRanking(want, got); err != nil || len(got) == 0 {
			t.Fatalf("%q: %d results, %v", q, len(got), err)
		}
	}

	t.Run("rows go first", func(t *testing.T) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: (index + size) / 2})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if err := x.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
		if !searchindex.TextCacheLoaded(x) || searchindex.TextCacheHoldsRows(x) {
			t.Fatalf("loaded %v, holds rows %v: want the index without the rows", searchindex.TextCacheLoaded(x), searchindex.TextCacheHoldsRows(x))
		}
		for _, q := range []string{"flutter", "boundary layer 42", "entry 1999"} {
			same(x, q)
		}
		if searchindex.TextCacheAnswers(x) == 0 || searchindex.TextCacheRows(x) != 0 {
			t.Fatalf("%d legs ranked by the cache, %d pages from it: want ranking in it, rows from SQL",
				searchindex.TextCacheAnswers(x), searchindex.TextCacheRows(x))
		}
	})

	t.Run("never fits", func(t *testing.T) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: index / 2})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget", err)
		}
		for _, q := range []string{"flutter", "boundary layer 42", "entry 1999"} {
			same(x, q)
			if searchindex.TextFlightRunning(x) {
				t.Fatal("a search over budget started another build")
			}
		}
		if searchindex.TextCacheAnswers(x) != 0 || searchindex.TextCacheLoaded(x) {
			t.Fatal("the cache answered over its budget")
		}
	})

	t.Run("outgrows", func(t *testing.T) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: size + size/10})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if err := x.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
		same(x, "flutter")
		if searchindex.TextCacheAnswers(x) != 1 || !searchindex.TextCacheHoldsRows(x) {
			t.Fatal("the cache did not answer, rows included, under its budget")
		}
		// Growth drops the rows' bodies first, then, the index alone past
		// the bound, the cache.
		droppedRows := false
		for seed := uint64(2); ; seed++ {
			if seed > 400 {
				t.Fatal("the cache never outgrew its bound")
			}
			zipfArchival(t, db, 50, seed)
			same(x, "flutter")
			err := x.WarmTextCache(ctx)
			if err == nil {
				droppedRows = droppedRows || !searchindex.TextCacheHoldsRows(x)
				continue
			}
			if !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatalf("WarmTextCache after growth: %v, want searchindex.ErrCacheBudget", err)
			}
			break
		}
		if !droppedRows {
			t.Fatal("the cache went whole, without dropping the rows' bodies first")
		}
		if searchindex.TextCacheLoaded(x) {
			t.Fatal("the cache kept its copy over budget")
		}
		answers := searchindex.TextCacheAnswers(x)
		same(x, "wing flutter")
		same(x, "w5x w9x")
		if searchindex.TextCacheAnswers(x) != answers {
			t.Fatal("the cache answered after it was dropped")
		}
	})
}

// TestTextCacheSkipsTheLogWhileNothingCommits: with IndexOptions.
// DataVersion (here SQLite's data_version on a connection of its own that
// never writes), searches read the change log only after something was
// committed, and still see every commit.
func TestTextCacheSkipsTheLogWhileNothingCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v.db")
	db := openDBAt(t, path)
	bulkArchival(t, db, 200)
	vdb := openDBAt(t, path)
	vdb.SetMaxOpenConns(1)
	version := func(ctx context.Context) (int64, bool, error) {
		var v int64
		err := vdb.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v)
		return v, err == nil, err
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{DataVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival) }
	if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts()); err != nil {
		t.Fatal(err)
	}
	reads := searchindex.TextLogReads(x)
	for range 5 {
		if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts()); err != nil {
			t.Fatal(err)
		}
	}
	if n := searchindex.TextLogReads(x) - reads; n != 0 {
		t.Fatalf("%d searches read the log with nothing committed", n)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('a', 'zeppelin mooring', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	rs, err := x.Search(ctx, "zeppelin", search.Scope{Agent: "a"}, opts())
	if err != nil || len(rs) != 1 {
		t.Fatalf("after a commit: %d results, %v", len(rs), err)
	}
	if searchindex.TextLogReads(x) == reads {
		t.Fatal("the search after a commit did not read the log")
	}
}

// flatReranker scores every candidate alike: the fused order stays.
type flatReranker struct{}

func (flatReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	return make([]float64, len(docs)), nil
}

// TestRerankedPageLosesARow: with a Reranker, a candidate whose row went
// between ranking and the reranker's fetch is dropped like one lost at
// the page's fetch: a page left short is ranked again.
func TestRerankedPageLosesARow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	var ids []int64
	for i := range searchindex.DefaultRerankDepth + 5 {
		ids = append(ids, insertArchival(t, db, archivalRow{Agent: "a",
			Content: strings.Repeat("alpha ", 40-i) + fmt.Sprintf("entry %d", i)}))
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{Reranker: flatReranker{}})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	step := 0
	searchindex.SetBeforeFill(x, func() {
		if step++; step == 1 {
			if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, ids[0]); err != nil {
				t.Error(err)
			}
		}
	})
	rs, err := x.Search(ctx, "alpha", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).Limit(searchindex.DefaultRerankDepth))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != searchindex.DefaultRerankDepth || rs[0].ID != ids[1] {
		t.Fatalf("got %d results (first %v), want %d from archival %d", len(rs), keys(rs[:min(1, len(rs))]), searchindex.DefaultRerankDepth, ids[1])
	}
	if step < 2 {
		t.Fatalf("ranked %d times, want a re-rank for the lost row", step)
	}
}
