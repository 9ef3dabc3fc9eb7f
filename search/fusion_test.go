package search_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestFusionAcrossTypesByScore: a block matching one query word whose
// table holds it in every row (idf ≈ 0) must rank below an archival entry
// matching both words, whether the legs rank in SQL or in the text cache,
// in FTS and in Hybrid mode. Fused by per-type rank alone, the two tie
// (both rank 1 in their list) and the block came first.
func TestFusionAcrossTypesByScore(t *testing.T) {
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
			opts := &search.IndexOptions{TextCacheBytes: -1}
			if tc.cache {
				opts.TextCacheBytes = 0
			}
			x, err := search.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), opts)
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
			if tc.cache && search.TextCacheAnswers(x) == 0 {
				t.Error("the text cache answered no leg")
			}
		})
	}
}

// plainDialect hides SQLite's FullTextScale.
type plainDialect struct{ search.Dialect }

// TestFusionScaleSQLMatchesCache: the SQL legs' scale (the dialect's
// FullTextMax over FTS5's statistics) is the text cache's, so both fuse
// to the same order and scores; a dialect without FullTextScale fuses by
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
	sqlX, err := search.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &search.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cacheX, err := search.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cacheX.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	rankX, err := search.NewIndex(ctx, db, plainDialect{sqlite.SearchDialect{}}, nil, &search.IndexOptions{TextCacheBytes: -1})
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
}
