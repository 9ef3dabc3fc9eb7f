package searchindex_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestFusionAcrossTypesByScore: a block matching one query word whose
// table holds it in every row (idf ≈ 0) must rank below an archival entry
// matching both words, whether the legs rank in SQL or in the text cache,
// in FTS and in Hybrid mode. Fused by per-type rank alone, the two tie
// (both rank 1 in their list) and the block came first.
func TestFusionAcrossTypesByScore(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "fused rankings compared, one goroutine")
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		cache bool
		mode  search.Mode
	}{
		{"sql/fts", false, search.FTS},
		{"cache/fts", true, search.FTS},
		{"sql/hybrid", false, search.Hybrid},
		{"cache/hybrid", true, search.Hybrid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			opts := &searchindex.IndexOptions{TextCacheBytes: -1}
			if tc.cache {
				opts.TextCacheBytes = 0
			}
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), opts)
			if err != nil {
				t.Fatal(err)
			}
			insertBlock(t, db, "a", "persona", "I am an analytical assistant.")
			insertArchival(t, db, archivalRow{Agent: "a", Content: "Babbage designed the Analytical Engine in 1837."})
			for _, c := range []string{"Lovelace wrote the first program.", "The difference engine computed tables.",
				"Jacquard looms used punched cards.", "Steam powered the mills of Manchester."} {
				insertArchival(t, db, archivalRow{Agent: "a", Content: c})
			}
			indexAll(t, ctx, db, x)
			if tc.cache {
				if err := x.WarmTextCache(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := x.Search(ctx, "analytical engine", search.Scope{Agent: "a"}, search.NewOptions().Mode(tc.mode))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) == 0 || rs[0].Type != search.Archival || rs[0].Content != "Babbage designed the Analytical Engine in 1837." {
				t.Fatalf("first result %v, want the archival entry matching both words", keys(rs))
			}
			for i, r := range rs {
				if r.Type == search.Blocks && i < 1 {
					t.Errorf("block ranked %d", i+1)
				}
				if tc.mode == search.FTS && r.Source.FTSNorm <= 0 {
					t.Errorf("%s: FTSNorm %v, want > 0", key(r), r.Source.FTSNorm)
				}
				if i > 0 && r.Score > rs[i-1].Score {
					t.Errorf("results out of score order: %v", keys(rs))
				}
			}
			if tc.cache && searchindex.TextCacheAnswers(x) == 0 {
				t.Error("the text cache answered no leg")
			}
		})
	}
}

// TestFusionOneWordKeepsRarity: for a one-word query, a row's share of
// its own table's best score does not depend on the word's idf (it is in
// the numerator and the denominator alike), so a block whose table holds
// the word in every row scored as high as an archival entry holding a word
// rare among entries, and came first. Over one common scale the rare match
// wins, in SQL and in the text cache.
func TestFusionOneWordKeepsRarity(t *testing.T) {
	ctx := context.Background()
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			db := openDB(t)
			opts := &searchindex.IndexOptions{TextCacheBytes: -1}
			if cache {
				opts.TextCacheBytes = 0
			}
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			insertBlock(t, db, "a", "persona", "I am an analytical assistant.")
			insertBlock(t, db, "a", "human", "The user is analytical and terse.")
			const entry = "Babbage designed the Analytical Engine in 1837."
			insertArchival(t, db, archivalRow{Agent: "a", Content: entry})
			for _, c := range []string{"Lovelace wrote the first program.", "The difference engine computed tables.",
				"Jacquard looms used punched cards.", "Steam powered the mills of Manchester."} {
				insertArchival(t, db, archivalRow{Agent: "a", Content: c})
			}
			indexAll(t, ctx, db, x)
			if cache {
				if err := x.WarmTextCache(ctx); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := x.Search(ctx, "analytical", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 3 || rs[0].Content != entry {
				t.Fatalf("results %v, want the archival entry first", keys(rs))
			}
			for _, r := range rs {
				if !(r.Source.FTSNorm > 0 && r.Source.FTSNorm <= 1) {
					t.Errorf("%s: FTSNorm %v, want in (0, 1]", key(r), r.Source.FTSNorm)
				}
			}
			if cache && searchindex.TextCacheAnswers(x) == 0 {
				t.Error("the text cache answered no leg")
			}
		})
	}
}

// plainDialect hides SQLite's driver.FullTextScale.
type plainDialect struct{ driver.Dialect }

// TestFusionScaleSQLMatchesCache: the SQL legs' scale (the dialect's
// FullTextMax over FTS5's statistics) is the text cache's, so both fuse
// to the same order and scores; a dialect without driver.FullTextScale fuses by
// rank (Fused set, FTSNorm not).
func TestFusionScaleSQLMatchesCache(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	words := []string{"engine", "analytical", "steam", "loom", "card", "program", "table", "mill", "gear", "lever"}
	for i := range 40 {
		text := words[i%len(words)] + " " + words[(i*3+1)%len(words)] + " " + words[(i*7+2)%len(words)]
		switch i % 3 {
		case 0:
			insertBlock(t, db, "a", fmt.Sprintf("b%d", i), text)
		case 1:
			insertArchival(t, db, archivalRow{Agent: "a", Content: text + " " + text})
		default:
			insertMessage(t, db, "a", "user", text, baseTime)
		}
	}
	sqlX, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cacheX, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cacheX.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	rankX, err := searchindex.NewIndex(ctx, db, plainDialect{sqlite.SearchDialect{}}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"analytical engine", "steam", "loom card program", "gear lever nothing", "unknownword engine"} {
		opts := search.NewOptions().Mode(search.FTS).Limit(30)
		a, err := sqlX.Search(ctx, q, search.Scope{Agent: "a"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := cacheX.Search(ctx, q, search.Scope{Agent: "a"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("%q: sql %v, cache %v", q, keys(a), keys(b))
		}
		for i := range a {
			if d := a[i].Source.FTSNorm - b[i].Source.FTSNorm; d > 1e-9 || d < -1e-9 || a[i].Source.FTSNorm <= 0 || a[i].Source.FTSNorm > 1 {
				t.Errorf("%q #%d: sql %s %v, cache %s %v", q, i+1, key(a[i]), a[i].Source.FTSNorm, key(b[i]), b[i].Source.FTSNorm)
			}
		}
		c, err := rankX.Search(ctx, q, search.Scope{Agent: "a"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c {
			if r.Source.FTSNorm != 0 || r.Source.Fused == 0 || r.Score != r.Source.Fused {
				t.Errorf("%q: without a scale, %s has FTSNorm %v, Fused %v", q, key(r), r.Source.FTSNorm, r.Source.Fused)
			}
		}
	}
	// Else both sides ranked in SQL and agreed by construction.
	if searchindex.TextCacheAnswers(cacheX) == 0 || searchindex.TextCacheAnswers(sqlX) != 0 {
		t.Errorf("text cache answered %d legs of the cached index, %d of the SQL one", searchindex.TextCacheAnswers(cacheX), searchindex.TextCacheAnswers(sqlX))
	}
}

// halfScale knows the full-text scale of every table but messages'.
type halfScale struct{ sqlite.SearchDialect }

func (d halfScale) FullTextMax(ctx context.Context, q driver.Execer, p *driver.FullTextParams) (float64, error) {
	if strings.Contains(p.Table, "messages") {
		return 0, nil
	}
	return d.SearchDialect.FullTextMax(ctx, q, p)
}

// TestFusionUnknownScaleLeavesNoShare: when one leg's scale is unknown the
// legs are fused by rank, and no result may carry an FTSNorm (which says
// the result was ordered by its share): the legs before the unknown one
// kept theirs, so the CLI printed norm= and the UI explained a share for a
// search fused by rank.
func TestFusionUnknownScaleLeavesNoShare(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	insertArchival(t, db, archivalRow{Agent: "a", Content: "steam engine"})
	insertArchival(t, db, archivalRow{Agent: "a", Content: "water mill"})
	insertMessage(t, db, "a", "user", "the steam rose", baseTime)
	insertMessage(t, db, "a", "user", "gears and levers", baseTime)
	x, err := searchindex.NewIndex(ctx, db, halfScale{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rs, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 2 {
		t.Fatalf("results %v", keys(rs))
	}
	for _, r := range rs {
		if r.Source.FTSNorm != 0 || r.Source.Fused == 0 || r.Score != r.Source.Fused {
			t.Errorf("%s: FTSNorm %v, Fused %v, Score %v: want fused by rank only", key(r), r.Source.FTSNorm, r.Source.Fused, r.Score)
		}
	}
}

// TestHybridFusedAddsUp: a Hybrid result's Fused is Σ weight/(RRFK+rank)
// over the ranks its Source reports, as ScoreSource and the UI's
// explanation say. Over several content types the fusion ranks in the one
// full-text list merged by share and the one vector list merged by
// distance, while Source kept each row's rank in its own type's lists: a
// result shown as full-text rank 1 and vector rank 1 had a Fused that
// neither rank gives.
func TestHybridFusedAddsUp(t *testing.T) {
	ctx := context.Background()
	for _, cache := range []bool{false, true} {
		db := openDB(t)
		opts := &searchindex.IndexOptions{TextCacheBytes: -1}
		if cache {
			opts.TextCacheBytes = 0
		}
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), opts)
		if err != nil {
			t.Fatal(err)
		}
		insertBlock(t, db, "a", "persona", "I am an analytical assistant.")
		insertBlock(t, db, "a", "notes", "The engine room is below deck.")
		for _, c := range []string{"Babbage designed the Analytical Engine in 1837.", "The difference engine computed tables.",
			"Steam powered the mills of Manchester."} {
			insertArchival(t, db, archivalRow{Agent: "a", Content: c})
		}
		insertMessage(t, db, "a", "user", "tell me about the analytical engine", baseTime)
		indexAll(t, ctx, db, x)
		if cache {
			if err := x.WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
		}
		const w = 0.5
		rs, err := x.Search(ctx, "analytical engine", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.Hybrid).VectorWeight(w))
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) < 4 {
			t.Fatalf("results %v", keys(rs))
		}
		for _, r := range rs {
			var want float64
			if r.Source.FTSRank > 0 {
				want += 1 / float64(search.RRFK+r.Source.FTSRank)
			}
			if r.Source.VectorRank > 0 {
				want += w / float64(search.RRFK+r.Source.VectorRank)
			}
			if d := r.Source.Fused - want; d > 1e-12 || d < -1e-12 {
				t.Errorf("cache %v: %s: Fused %v, ranks fts %d vector %d give %v", cache, key(r), r.Source.Fused, r.Source.FTSRank, r.Source.VectorRank, want)
			}
		}
		x.Close()
	}
}
