package searchindex_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// fixedEmbedder maps known texts to precomputed vectors (the shipped
// Cranfield embeddings); unknown texts are an error.
type fixedEmbedder struct {
	name string
	dims int
	vecs map[string][]float32
}

func (f *fixedEmbedder) Name() string    { return f.name }
func (f *fixedEmbedder) Dimensions() int { return f.dims }
func (f *fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := f.vecs[t]
		if !ok {
			return nil, fmt.Errorf("%w: fixed embedder has no vector for %q", search.ErrEmbedder, t)
		}
		out[i] = v
	}
	return out, nil
}

// TestCranfieldQuality measures retrieval quality on the Cranfield
// collection (1,400 abstracts as archival entries, 225 queries) for FTS,
// Vector (the shipped 512-dim sentence embeddings) and Hybrid.
func TestCranfieldQuality(t *testing.T) {
	if raceEnabled {
		t.Skip("quality test skipped under -race (minutes of instrumented SQLite); run go test without -race")
	}
	dir := eval.FindCranfield()
	if dir == "" {
		testenv.Missing(t, "Cranfield collection not found (set ENGRAM_CRANFIELD or place it at ../shared/datasets/cranfield)")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.DocVectors == nil || c.QueryVectors == nil {
		testenv.Missing(t, "Cranfield embeddings (use_*.f32) not found")
	}
	ctx := context.Background()
	db := openDB(t)
	emb := &fixedEmbedder{name: "use-lite-fixed/512", dims: 512, vecs: map[string][]float32{}}
	for _, q := range c.Queries {
		emb.vecs[q.Text] = c.QueryVectors[q.ID]
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []searchindex.EmbeddingItem
	for _, d := range c.Docs {
		// Title + body, as the shipped embeddings were made (the body
		// repeats the title, so the title counts twice for BM25).
		insertArchival(t, tx, archivalRow{ID: d.ID, Agent: "cran", Content: d.Title + "\n" + d.Body})
		if v := c.DocVectors[d.ID]; v != nil {
			items = append(items, searchindex.EmbeddingItem{ID: d.ID, Owner: "cran", Vector: v})
		}
	}
	if err := x.PutEmbeddings(ctx, tx, search.Archival, items); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	// Floors sit just below measured figures (FTS 0.550/0.827/0.757,
	// Vector 0.274/0.489/0.511, Hybrid 0.448/0.730/0.761); the README's
	// reference FTS5 set-up is 0.548/0.816/0.759.
	evaluate(t, ctx, x, c, "", map[search.Mode]eval.Metrics{
		search.FTS:    {NDCG10: 0.545, MRR: 0.81, Recall100: 0.75},
		search.Vector: {NDCG10: 0.26, MRR: 0.47, Recall100: 0.50},
		search.Hybrid: {NDCG10: 0.43, MRR: 0.71, Recall100: 0.75},
	})

	// The offline hashing embedder on the same collection, for comparison.
	db2 := openDB(t)
	off, err := searchindex.NewIndex(ctx, db2, sqlite.SearchDialect{}, search.NewOffline(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err = db2.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var vitems []searchindex.VectorItem
	for _, d := range c.Docs {
		text := d.Title + "\n" + d.Body
		insertArchival(t, tx, archivalRow{ID: d.ID, Agent: "cran", Content: text})
		vitems = append(vitems, searchindex.VectorItem{ID: d.ID, Owner: "cran", Text: text})
	}
	if err := off.PutVectors(ctx, tx, search.Archival, vitems); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	evaluate(t, ctx, off, c, "offline ", map[search.Mode]eval.Metrics{
		search.FTS:    {NDCG10: 0.545, MRR: 0.81, Recall100: 0.75},
		search.Vector: {NDCG10: 0.30, MRR: 0.55, Recall100: 0.55},
		search.Hybrid: {NDCG10: 0.45, MRR: 0.70, Recall100: 0.70},
	})
}

func evaluate(t *testing.T, ctx context.Context, x *searchindex.Index, c *eval.Cranfield, label string, floors map[search.Mode]eval.Metrics) {
	t.Helper()
	type run struct {
		mode   search.Mode
		weight float64 // hybrid vector weight; 1 = plain RRF
	}
	var ftsNDCG float64
	for _, r := range []run{{search.FTS, 1}, {search.Vector, 1}, {search.Hybrid, 1}, {search.Hybrid, 0.2}, {search.Auto, 0}} {
		mode := r.mode
		f, ok := floors[mode]
		if mode == search.Auto {
			f, ok = eval.Metrics{}, true // checked against FTS below
		}
		if !ok {
			continue
		}
		name := mode.String()
		if r.weight != 1 && mode != search.Auto {
			name = fmt.Sprintf("%v(w=%.1f)", mode, r.weight)
			f = eval.Metrics{NDCG10: f.NDCG10 + 0.05, MRR: f.MRR, Recall100: f.Recall100} // weighting must help
		}
		runs := map[string][]string{}
		start := time.Now()
		for _, q := range c.Queries {
			opts := search.NewOptions().Mode(mode).ContentTypes(search.Archival).Limit(100)
			if mode != search.Auto {
				opts.VectorWeight(r.weight)
			}
			rs, err := x.Search(ctx, q.Text, search.Scope{Agent: "cran"}, opts)
			if err != nil {
				t.Fatalf("%v query %d: %v", mode, q.ID, err)
			}
			ids := make([]string, len(rs))
			for i, r := range rs {
				ids[i] = strconv.FormatInt(r.ID, 10)
			}
			runs[strconv.FormatInt(q.ID, 10)] = ids
		}
		per := time.Since(start) / time.Duration(len(c.Queries))
		m := eval.Evaluate(runs, c.Qrels)
		t.Logf("%s%-12s nDCG@10 %.3f (linear gain %.3f)  MRR %.3f  R@100 %.3f  (%d queries, %v/query at limit 100)",
			label, name, m.NDCG10, m.NDCG10Linear, m.MRR, m.Recall100, m.Queries, per.Round(10*time.Microsecond))
		if m.NDCG10 < f.NDCG10 || m.MRR < f.MRR || m.Recall100 < f.Recall100 {
			t.Errorf("%s%s below floor: got %+v, floor %+v", label, name, m, f)
		}
		switch mode {
		case search.FTS:
			ftsNDCG = m.NDCG10
		case search.Auto:
			// The default must never be worse than FTS alone.
			if m.NDCG10 < ftsNDCG {
				t.Errorf("%sAuto (the default) nDCG@10 %.3f is below FTS alone %.3f", label, m.NDCG10, ftsNDCG)
			}
		}
	}
}
