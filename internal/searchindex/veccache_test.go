package searchindex_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestVectorCacheMatchesSQL: the cache's brute-force KNN returns what SQL
// returns, and it follows writes made through another connection pool (as
// another process would).
func TestVectorCacheMatchesSQL(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/c.db"
	db := openDBAt(t, path)
	emb := search.NewOffline(48)
	plain, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cached.WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	text := func(i int) string {
		return words[i%10] + " " + words[(i*7)%10] + " " + words[(i*3+1)%10] + " note " + itoa(int64(i))
	}
	for i := 0; i < 200; i++ {
		insertArchival(t, db, archivalRow{Agent: []string{"a", "b"}[i%2], Content: text(i)})
	}
	indexAll(t, ctx, db, plain)
	same := func(label string) {
		t.Helper()
		for _, q := range []string{"alpha bravo", "golf hotel india", "note 17", "juliet"} {
			for _, scope := range []search.Scope{{Agent: "a"}, {Agent: "b"}, {All: true}} {
				opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(15)
				want, err := plain.Search(ctx, q, scope, opts)
				if err != nil {
					t.Fatal(err)
				}
				// Without these counts the test would pass with the cache
				// switched off or bypassed: SQL compared with SQL.
				before := searchindex.VectorCacheAnswers(cached)
				got, err := cached.Search(ctx, q, scope, opts)
				if err != nil {
					t.Fatal(err)
				}
				if searchindex.VectorCacheAnswers(cached) == before {
					t.Fatalf("%s %q %+v: the vector cache did not answer", label, q, scope)
				}
				if n := searchindex.VectorCacheAnswers(plain); n != 0 {
					t.Fatalf("%s: the uncached index's cache answered %d KNN runs", label, n)
				}
				if len(got) != len(want) {
					t.Fatalf("%s %q %+v: cache %d results, SQL %d", label, q, scope, len(got), len(want))
				}
				for i := range got {
					// Equal distances may order differently; compare distances
					// and the id sets.
					if math.Abs(got[i].Source.Distance-want[i].Source.Distance) > 1e-5 {
						t.Fatalf("%s %q %+v rank %d: cache %v@%.6f, SQL %v@%.6f", label, q, scope, i+1,
							got[i].ID, got[i].Source.Distance, want[i].ID, want[i].Source.Distance)
					}
				}
				// Sets agree except for ties at the cut-off distance.
				edge := want[len(want)-1].Source.Distance
				inner := func(rs []search.Result) []string {
					var out []string
					for _, r := range rs {
						if r.Source.Distance < edge-1e-5 {
							out = append(out, key(r))
						}
					}
					slices.Sort(out)
					return out
				}
				if g, w := inner(got), inner(want); !slices.Equal(g, w) {
					t.Fatalf("%s %q %+v: cache %v, SQL %v", label, q, scope, g, w)
				}
			}
		}
	}
	same("initial")

	// Writes through another pool: new rows with vectors, deletes, an
	// owner change, a re-put with new text.
	other := openDBAt(t, path)
	writer, err := searchindex.NewIndex(ctx, other, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 200; i < 230; i++ {
		id := insertArchival(t, other, archivalRow{Agent: "a", Content: text(i), Created: baseTime.Add(time.Minute)})
		if err := writer.PutVectors(ctx, other, search.Archival, []searchindex.VectorItem{{ID: id, Owner: "a", Text: text(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `UPDATE archival SET agent = 'b' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	if err := writer.PutVectors(ctx, other, search.Archival, []searchindex.VectorItem{{ID: 7, Owner: "a", Text: "juliet juliet juliet"}}); err != nil {
		t.Fatal(err)
	}
	same("after writes")
	// A vector stored under the wrong owner is still not returned to that
	// owner: the row fetch re-checks ownership (row 9 belongs to "a").
	if err := writer.PutVectors(ctx, other, search.Archival, []searchindex.VectorItem{{ID: 9, Owner: "b", Text: "kilo lima"}}); err != nil {
		t.Fatal(err)
	}
	if rs, _ := cached.Search(ctx, "kilo lima", search.Scope{Agent: "b"}, search.NewOptions().Mode(search.Vector).Limit(200)); slices.ContainsFunc(rs, func(r search.Result) bool { return r.ID == 9 }) {
		t.Fatal("mis-owned vector leaked row 9 to b")
	}
	rs, err := cached.Search(ctx, "juliet juliet juliet", search.Scope{Agent: "a"},
		search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(1))

	if err != nil || len(rs) != 1 || rs[0].ID != 7 || rs[0].Source.Distance > 1e-5 {
		t.Fatalf("re-put vector: %+v, %v", rs, err)
	}
	// Reembed elsewhere (different dims): the cached index sees the
	// mismatch rather than serving stale vectors.
	re, _ := searchindex.NewIndex(ctx, other, sqlite.SearchDialect{}, search.NewOffline(24), nil)
	if err := re.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cached.Search(ctx, "alpha", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Vector)); err == nil {
		t.Fatal("cached index searched vectors of another embedder")
	}
}

// TestVectorCacheBudget: the vector cache loads in the background (the SQL
// scan answers the first search), a database whose vectors exceed
// VectorCacheBytes is never cached, and one that outgrows it drops the
// cache; the SQL scan answers the same throughout.
func TestVectorCacheBudget(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, t.TempDir()+"/b.db")
	emb := search.NewOffline(48)
	plain, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	add := func(from, to int) {
		t.Helper()
		var items []searchindex.VectorItem
		for i := from; i < to; i++ {
			text := words[i%8] + " " + words[(i*5)%8] + " entry " + itoa(int64(i))
			id := insertArchival(t, db, archivalRow{Agent: "a", Content: text})
			items = append(items, searchindex.VectorItem{ID: id, Owner: "a", Text: text})
		}
		if err := plain.PutVectors(ctx, db, search.Archival, items); err != nil {
			t.Fatal(err)
		}
	}
	add(0, 200)
	const row = 4*48 + 96 // what one cached vector is charged
	same := func(x *searchindex.Index) {
		t.Helper()
		for _, q := range []string{"alpha bravo", "golf entry 17"} {
			opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(10)
			want, err := plain.Search(ctx, q, search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Search(ctx, q, search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%q: %d results, SQL %d", q, len(got), len(want))
			}
			for i := range got {
				if math.Abs(got[i].Source.Distance-want[i].Source.Distance) > 1e-5 {
					t.Fatalf("%q rank %d: %.6f, SQL %.6f", q, i+1, got[i].Source.Distance, want[i].Source.Distance)
				}
			}
		}
	}

	t.Run("background", func(t *testing.T) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		// The first search starts the load and asks SQL (later ones may
		// find the cache loaded already: 200 vectors load in a blink).
		opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(10)
		if rs, err := x.Search(ctx, "alpha bravo", search.Scope{Agent: "a"}, opts); err != nil || len(rs) != 10 {
			t.Fatalf("first search: %d results, %v", len(rs), err)
		}
		if n := searchindex.VectorCacheAnswers(x); n != 0 {
			t.Fatalf("the cache answered %d KNN runs before it was loaded", n)
		}
		same(x)
		if err := x.WarmVectorCache(ctx); err != nil {
			t.Fatal(err)
		}
		same(x)
		if searchindex.VectorCacheAnswers(x) == 0 || x.VectorEngine() != "in-process" {
			t.Fatalf("after loading: %d cache answers, engine %q", searchindex.VectorCacheAnswers(x), x.VectorEngine())
		}
	})

	t.Run("never fits", func(t *testing.T) {
		var logged bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: 100 * row, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if err := x.WarmVectorCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmVectorCache: %v, want searchindex.ErrCacheBudget", err)
		}
		if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), "vector cache") {
			t.Fatalf("the drop was not logged as a warning: %q", logged.String())
		}
		same(x)
		if n := searchindex.VectorCacheAnswers(x); n != 0 || x.VectorEngine() != "sqlite-vec" {
			t.Fatalf("over budget: %d cache answers, engine %q", n, x.VectorEngine())
		}
	})

	t.Run("outgrows", func(t *testing.T) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: 230 * row})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		if err := x.WarmVectorCache(ctx); err != nil {
			t.Fatal(err)
		}
		same(x)
		answers := searchindex.VectorCacheAnswers(x)
		if answers == 0 {
			t.Fatal("the cache did not answer under its budget")
		}
		add(200, 240) // past 230 rows
		same(x)
		if err := x.WarmVectorCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmVectorCache after growth: %v, want searchindex.ErrCacheBudget", err)
		}
		if n := searchindex.VectorCacheAnswers(x); n != answers || x.VectorEngine() != "sqlite-vec" {
			t.Fatalf("after outgrowing: %d more cache answers, engine %q", n-answers, x.VectorEngine())
		}
		same(x)
	})
}

// TestVectorCacheBudgetEstimate holds what the vector cache charges
// against VectorCacheBytes to the heap it really takes.
func TestVectorCacheBudgetEstimate(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures under the race detector are not the production ones")
	}
	testenv.SkipUnlessLong(t, "measures the heap of a 20k-vector cache")
	ctx := context.Background()
	db := openDBAt(t, t.TempDir()+"/e.db")
	const dims, n = 128, 20_000
	emb := search.NewOffline(dims)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := rand.New(rand.NewPCG(3, 4))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []searchindex.EmbeddingItem
	for i := range n {
		res, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES (?, 'v', 0, 0)`, []string{"a", "b", "c"}[i%3])
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		v := make([]float32, dims)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		items = append(items, searchindex.EmbeddingItem{ID: id, Owner: []string{"a", "b", "c"}[i%3], Vector: v})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := x.PutEmbeddings(ctx, db, search.Archival, items); err != nil {
		t.Fatal(err)
	}
	items = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := x.WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	est := searchindex.VectorCacheSize(x)
	t.Logf("charged %d bytes, heap grew %d bytes (%.2f×)", est, heap, float64(est)/float64(heap))
	if est < heap*2/3 || est > heap*3/2 {
		t.Fatalf("charged %d bytes, heap grew %d: the bound would be off by more than 1.5×", est, heap)
	}
}

// TestVectorCachePartial: a store whose vectors exceed VectorCacheBytes
// keeps a partial cache: each agent's partition loads on its first search,
// the least recently used go to stay within the bound, and every search
// answers as vec0 does (a search over every owner, and one whose owner is
// too large, in vec0), with no row of another agent, through writes to
// held and evicted partitions.
func TestVectorCachePartial(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, t.TempDir()+"/p.db")
	emb := search.NewOffline(48)
	plain, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	agent := func(i int) string { return "agent-" + itoa(int64(i)) }
	add := func(a string, n, seed int) {
		t.Helper()
		var items []searchindex.VectorItem
		for i := range n {
			text := words[(i+seed)%8] + " " + words[(i*5+seed)%8] + " entry " + itoa(int64(i))
			id := insertArchival(t, db, archivalRow{Agent: a, Content: text})
			items = append(items, searchindex.VectorItem{ID: id, Owner: a, Text: text})
		}
		if err := plain.PutVectors(ctx, db, search.Archival, items); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		add(agent(i), 30, i)
	}
	add("big", 200, 3)
	const row = 4*48 + 96
	const limit = 100 * row // three agents' partitions, not "big"'s
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WarmVectorCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmVectorCache: %v, want searchindex.ErrCacheBudget", err)
	}
	owners := map[int64]string{}
	same := func(scope search.Scope, q string) {
		t.Helper()
		opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(10)
		want, err := plain.Search(ctx, q, scope, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(ctx, q, scope, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%+v %q: %d results, vec0 %d", scope, q, len(got), len(want))
		}
		for i := range got {
			// Distances, not ids: equal texts tie, and the cache's float32
			// arithmetic may order a tie otherwise than vec0's.
			if math.Abs(got[i].Source.Distance-want[i].Source.Distance) > 1e-5 {
				t.Fatalf("%+v %q rank %d: %d at %.6f, vec0 %d at %.6f", scope, q, i+1,
					got[i].ID, got[i].Source.Distance, want[i].ID, want[i].Source.Distance)
			}
			if !scope.All && got[i].Owner != scope.Agent {
				t.Fatalf("%s's search returned %d of %s", scope.Agent, got[i].ID, got[i].Owner)
			}
			owners[got[i].ID] = got[i].Owner
		}
		if n := searchindex.VectorCacheSize(x); n > limit {
			t.Fatalf("the cache holds %d bytes, bound %d", n, limit)
		}
	}
	for round := range 3 {
		for i := range 12 {
			before := searchindex.VectorCacheAnswers(x)
			same(search.Scope{Agent: agent(i)}, "alpha bravo")
			same(search.Scope{Agent: agent(i)}, "golf entry 7")
			if searchindex.VectorCacheAnswers(x) != before+2 {
				t.Fatalf("round %d: %s's searches did not run over the cache", round, agent(i))
			}
		}
		// Writes to a held partition (the last agent's) and to an evicted
		// one (the first agent's) are seen.
		add(agent(11), 5, round+1)
		add(agent(0), 5, round+2)
		same(search.Scope{Agent: agent(11)}, "charlie delta")
		same(search.Scope{Agent: agent(0)}, "charlie delta")
	}
	before := searchindex.VectorCacheAnswers(x)
	same(search.Scope{Agent: "big"}, "alpha bravo")
	same(search.Scope{All: true}, "alpha bravo")
	if n := searchindex.VectorCacheAnswers(x); n != before {
		t.Fatalf("the partial cache answered %d searches it cannot hold", n-before)
	}
}
