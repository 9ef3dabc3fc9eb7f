package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	_ "github.com/blevesearch/bleve/v2/analysis/lang/en" // registers the "en" analyzer
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/philippgille/chromem-go"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// fixedEmbedder maps known texts to precomputed vectors: the Cranfield
// collection's shipped 512-dimension sentence embeddings. Unknown texts are
// an error, so nothing is ever embedded behind the benchmark's back.
type fixedEmbedder struct {
	dims int
	vecs map[string][]float32
}

func (f *fixedEmbedder) Name() string    { return "use-lite-fixed/512" }
func (f *fixedEmbedder) Dimensions() int { return f.dims }
func (f *fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := f.vecs[t]
		if !ok {
			return nil, fmt.Errorf("%w: fixed embedder has no vector for %.40q", search.ErrEmbedder, t)
		}
		out[i] = v
	}
	return out, nil
}

const cranAgent = "cran"

// cranSystem is one retrieval system under test: it answers a query with
// ranked Cranfield document ids.
type cranSystem struct {
	name  string
	query func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error)
}

// cranfieldSet loads the collection and the documents, queries and
// relevance judgements every Cranfield row measures (cut by -quick).
func cranfieldSet(cfg config, dir string) (c *eval.Cranfield, docs []eval.CranfieldDoc, queries []eval.CranfieldQuery, qrels map[string]eval.Relevance, err error) {
	c, err = eval.LoadCranfield(dir)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if c.DocVectors == nil || c.QueryVectors == nil {
		return nil, nil, nil, nil, errors.New("cranfield: embeddings (use_*.f32) missing")
	}
	docs, queries = c.Docs, c.Queries
	if cfg.cranDocs > 0 && cfg.cranDocs < len(docs) {
		docs = docs[:cfg.cranDocs]
	}
	// A few Cranfield records have neither title nor body; the store
	// refuses empty archival entries, so every system leaves them out.
	docs = slices.DeleteFunc(slices.Clone(docs), func(d eval.CranfieldDoc) bool {
		return strings.TrimSpace(d.Title+d.Body) == "" || c.DocVectors[d.ID] == nil
	})
	if cfg.cranQueries > 0 && cfg.cranQueries < len(queries) {
		queries = queries[:cfg.cranQueries]
	}
	qrels = map[string]eval.Relevance{}
	for _, q := range queries {
		id := strconv.FormatInt(q.ID, 10)
		if rel, ok := c.Qrels[id]; ok {
			qrels[id] = rel
		}
	}
	return c, docs, queries, qrels, nil
}

// benchCranfield: comparison 1, search quality and latency on Cranfield.
func benchCranfield(ctx context.Context, cfg config, dir, tmp string, r *report) error {
	const sec = "search"
	if dir == "" {
		r.add(row{Section: sec, Comparison: "Cranfield search", Note: "skipped: collection not found (set -cranfield or ENGRAM_CRANFIELD)"})
		return nil
	}
	c, docs, queries, qrels, err := cranfieldSet(cfg, dir)
	if err != nil {
		return err
	}
	// recall@100 needs 100 results: quality is measured at limit 100, and
	// latency at both 100 and 10 (what an agent asks for).
	const evalLimit = 100
	timedLimits := []int{10, evalLimit}

	// Texts as the shipped embeddings were made: title + body.
	texts := make([]string, len(docs))
	emb := &fixedEmbedder{dims: 512, vecs: map[string][]float32{}}
	for i, d := range docs {
		texts[i] = d.Title + "\n" + d.Body
		emb.vecs[texts[i]] = c.DocVectors[d.ID]
	}
	for _, q := range queries {
		emb.vecs[q.Text] = c.QueryVectors[q.ID]
	}

	// engram: a file store loaded with InsertArchivalBatch (transactions
	// of 1,000: FTS by trigger, vectors through the fixed embedder). One
	// InsertArchival per document is timed too.
	t0 := time.Now()
	st, err := memory.Open(ctx, filepath.Join(tmp, "cranfield.db"), &memory.Options{Embedder: emb})
	if err != nil {
		return err
	}
	defer st.Close()
	entries := make([]memory.ArchivalEntry, len(docs))
	for i := range docs {
		entries[i] = memory.ArchivalEntry{Content: texts[i]}
	}
	stored, err := st.Agent(cranAgent).Archival().InsertBatch(ctx, entries, nil)
	if err != nil {
		return fmt.Errorf("engram batch load: %w", err)
	}
	engramLoad := time.Since(t0)
	toDoc := map[int64]string{}
	for i, e := range stored {
		toDoc[e.ID] = strconv.FormatInt(docs[i].ID, 10)
	}
	t0 = time.Now()
	one, err := memory.Open(ctx, filepath.Join(tmp, "cranfield-one.db"), &memory.Options{Embedder: emb})
	if err != nil {
		return err
	}
	for i, d := range docs {
		if _, err := one.Agent(cranAgent).Archival().Insert(ctx, memory.ArchivalEntry{Content: texts[i]}); err != nil {
			one.Close()
			return fmt.Errorf("engram insert doc %d: %w", d.ID, err)
		}
	}
	one.Close()
	engramOneLoad := time.Since(t0)
	// The same file opened again without the (default) in-memory caches:
	// FTS5 ranks, SQL runs the KNN.
	sqlOnly, err := memory.Open(ctx, filepath.Join(tmp, "cranfield.db"),
		&memory.Options{Embedder: emb, TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		return err
	}
	defer sqlOnly.Close()
	// The caches are built in the background from the first search on
	// anyway; timed queries should not race the builds.
	if err := storeaccess.Index(st).WarmTextCache(ctx); err != nil {
		return err
	}
	if err := storeaccess.Index(st).WarmVectorCache(ctx); err != nil {
		return err
	}
	engramOn := func(st *memory.Store, name string, mode search.Mode) cranSystem {
		return cranSystem{name: name, query: func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error) {
			rs, err := st.Agent(cranAgent).Archival().Search(ctx, q.Text, search.NewOptions().Mode(mode).Limit(limit))
			if errors.Is(err, search.ErrInvalidQuery) {
				return nil, nil // no searchable terms: retrieves nothing
			}
			if err != nil {
				return nil, err
			}
			ids := make([]string, len(rs))
			for i, x := range rs {
				ids[i] = toDoc[x.ID]
			}
			return ids, nil
		}}
	}
	engram := func(name string, mode search.Mode) cranSystem { return engramOn(st, name, mode) }

	// bleve v2.6.1: scorch index, English analyzer, BM25 scoring. The
	// mapping is the one a user wanting this search would write, not
	// bleve's dynamic default, which also indexes every term a second time
	// into the composite "_all" field and keeps doc values (for sorting and
	// facets, unused here): one static text field, indexed and stored (the
	// pages-alike system fetches it), with term vectors because highlighting
	// needs their positions (engram returns snippets), queried by name.
	t0 = time.Now()
	textField := mapping.NewTextFieldMapping()
	textField.Analyzer = "en"
	textField.IncludeInAll = false
	textField.DocValues = false
	docMapping := bleve.NewDocumentStaticMapping()
	docMapping.AddFieldMappingsAt("text", textField)
	im := bleve.NewIndexMapping()
	im.DefaultMapping = docMapping
	im.DefaultAnalyzer = "en"
	im.DefaultField = "text"
	im.ScoringModel = "bm25" // index.BM25Scoring (bleve_index_api)
	bdir := filepath.Join(tmp, "bleve")
	bidx, err := bleve.New(bdir, im)
	if err != nil {
		return fmt.Errorf("bleve: %w", err)
	}
	defer func() { bidx.Close(); os.RemoveAll(bdir) }()
	batch := bidx.NewBatch()
	for i, d := range docs {
		if err := batch.Index(strconv.FormatInt(d.ID, 10), map[string]any{"text": texts[i]}); err != nil {
			return fmt.Errorf("bleve: %w", err)
		}
	}
	if err := bidx.Batch(batch); err != nil {
		return fmt.Errorf("bleve: %w", err)
	}
	bleveLoad := time.Since(t0)
	bleveSys := cranSystem{name: "bleve BM25", query: func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error) {
		mq := bleve.NewMatchQuery(q.Text)
		mq.SetField("text")
		req := bleve.NewSearchRequestOptions(mq, limit, 0, false)
		res, err := bidx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			ids[i] = h.ID
		}
		return ids, nil
	}}

	// The same bleve query asked for what engram returns: each hit's stored
	// text and highlighted fragments (bleve's default HTML highlighter).
	blevePageSys := cranSystem{name: "bleve BM25 + text + highlights", query: func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error) {
		mq := bleve.NewMatchQuery(q.Text)
		mq.SetField("text")
		req := bleve.NewSearchRequestOptions(mq, limit, 0, false)
		req.Fields = []string{"text"}
		req.Highlight = bleve.NewHighlight()
		res, err := bidx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			if _, ok := h.Fields["text"]; !ok && limit > 0 {
				return nil, fmt.Errorf("bleve: hit %s without its stored text", h.ID)
			}
			ids[i] = h.ID
		}
		return ids, nil
	}}

	// chromem-go v0.7.0: in memory, the same vectors.
	cdb := chromem.NewDB()
	col, err := cdb.CreateCollection("cran", nil, func(context.Context, string) ([]float32, error) {
		return nil, errors.New("chromem: no embedding function in the benchmark")
	})
	if err != nil {
		return err
	}
	cdocs := make([]chromem.Document, len(docs))
	for i, d := range docs {
		cdocs[i] = chromem.Document{ID: strconv.FormatInt(d.ID, 10), Content: texts[i], Embedding: slices.Clone(c.DocVectors[d.ID])}
	}
	if err := col.AddDocuments(ctx, cdocs, 1); err != nil {
		return fmt.Errorf("chromem: %w", err)
	}
	chromemSys := cranSystem{name: "chromem-go", query: func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error) {
		res, err := col.QueryEmbedding(ctx, slices.Clone(c.QueryVectors[q.ID]), min(limit, col.Count()), nil, nil)
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(res))
		for i, x := range res {
			ids[i] = x.ID
		}
		return ids, nil
	}}

	// Diagnostic: the bare FTS5 query engram's FTS mode is built on (the
	// same MATCH expression and bm25 weights, ids only, no row fetch, no
	// snippets), on the store's read pool. Its rowids are owner ranges
	// (SQLite migration 0019): the entry's id is the low 40 bits.
	rawStmt, err := storeaccess.Backend(st).DB().PrepareContext(ctx, `SELECT rowid & 1099511627775 FROM fts_archival WHERE fts_archival MATCH ?
		ORDER BY bm25(fts_archival, 1.0, 2.0, 0.5) LIMIT ?`)
	if err != nil {
		return err
	}
	defer rawStmt.Close()
	rawSys := cranSystem{name: "raw FTS5", query: func(ctx context.Context, q eval.CranfieldQuery, limit int) ([]string, error) {
		expr, err := search.MatchExpression(q.Text)
		if err != nil {
			return nil, nil
		}
		rows, err := rawStmt.QueryContext(ctx, expr, limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids = append(ids, toDoc[id])
		}
		return ids, rows.Err()
	}}

	systems := []cranSystem{engram("engram FTS", search.FTS), engram("engram Vector", search.Vector),
		engram("engram Hybrid", search.Hybrid), bleveSys, blevePageSys, chromemSys, rawSys,
		engramOn(sqlOnly, "engram FTS, FTS5 ranking", search.FTS), engramOn(sqlOnly, "engram Vector, SQL scan", search.Vector),
		engramOn(sqlOnly, "engram Hybrid, SQL legs", search.Hybrid)}
	metrics := map[string]eval.Metrics{}
	lats := map[string][]latency{} // by system name + "@" + limit
	// Warm-up pass (page cache, bleve segment readers), which also gives
	// the quality figures: every system is deterministic.
	for _, s := range systems {
		runs := map[string][]string{}
		for _, q := range queries {
			ids, err := s.query(ctx, q, evalLimit)
			if err != nil {
				return fmt.Errorf("%s query %d: %w", s.name, q.ID, err)
			}
			runs[strconv.FormatInt(q.ID, 10)] = ids
		}
		metrics[s.name] = eval.Evaluate(runs, qrels)
	}
	// Latency over every query, or an even sample of them (-quick).
	timed := queries
	if cfg.cranTimedQueries > 0 && cfg.cranTimedQueries < len(queries) {
		timed = nil
		step := float64(len(queries)) / float64(cfg.cranTimedQueries)
		for i := range cfg.cranTimedQueries {
			timed = append(timed, queries[int(float64(i)*step)])
		}
	}
	for range cfg.repeats {
		for _, limit := range timedLimits {
			for _, s := range systems {
				ds := make([]time.Duration, 0, len(timed))
				for _, q := range timed {
					t := time.Now()
					if _, err := s.query(ctx, q, limit); err != nil {
						return err
					}
					ds = append(ds, time.Since(t))
				}
				key := fmt.Sprintf("%s@%d", s.name, limit)
				lats[key] = append(lats[key], latencyOf(ds))
			}
		}
	}

	nq := fmt.Sprintf("%d docs, %d queries (%d timed)", len(docs), len(queries), len(timed))
	quality := func(sys, base, label, note string) {
		e, b := metrics[sys], metrics[base]
		r.compare(sec, label+" nDCG@10 vs "+base, e.NDCG10, b.NDCG10, unitScore, "higher", note)
		r.compare(sec, label+" MRR vs "+base, e.MRR, b.MRR, unitScore, "higher", "")
		r.compare(sec, label+" recall@100 vs "+base, e.Recall100, b.Recall100, unitScore, "higher", "")
	}
	timing := func(sys, base, label, note string) {
		for _, limit := range timedLimits {
			e := medianLatency(lats[fmt.Sprintf("%s@%d", sys, limit)])
			b := medianLatency(lats[fmt.Sprintf("%s@%d", base, limit)])
			n := ""
			if limit == evalLimit {
				n = note
			}
			r.latency(sec, fmt.Sprintf("%s query p50, limit %d, vs %s", label, limit, base), e, b, n)
		}
	}
	quality("engram FTS", "bleve BM25", "Cranfield FTS", nq+"; default options: FTS5's bm25 over the in-memory text cache, KNN over the in-memory vectors")
	timing("engram FTS", "bleve BM25", "Cranfield FTS", "engram returns full rows + snippets, bleve ids only")
	timing("engram FTS", "bleve BM25 + text + highlights", "Cranfield FTS (pages alike)",
		"bleve asked for each hit's stored text and highlighted fragments too, as engram returns rows + snippets")
	quality("engram FTS, FTS5 ranking", "bleve BM25", "Cranfield FTS, FTS5 ranking", "TextCacheBytes -1: FTS5 ranks in SQLite")
	timing("engram FTS, FTS5 ranking", "bleve BM25", "Cranfield FTS, FTS5 ranking", "")
	timing("engram FTS, FTS5 ranking", "raw FTS5", "Cranfield FTS, FTS5 ranking (diagnostic)", "raw = the same MATCH + bm25 ORDER BY, ids only: the rest is engram's row fetch, filters, snippets")
	quality("engram Vector", "chromem-go", "Cranfield Vector", "shipped 512-dim USE-lite vectors in both")
	timing("engram Vector", "chromem-go", "Cranfield Vector", "in-process KNN over the vector cache + row fetch vs chromem's in-memory scan")
	timing("engram Vector, SQL scan", "chromem-go", "Cranfield Vector, SQL scan", "VectorCacheBytes -1: exact KNN in SQLite (vec_distance_cosine) + row fetch")
	quality("engram Hybrid", "bleve BM25", "Cranfield Hybrid", "RRF of FTS and the weak shipped vectors")
	timing("engram Hybrid", "bleve BM25", "Cranfield Hybrid", "both caches + fusion, each side max(4×limit, 50) deep")
	timing("engram Hybrid, SQL legs", "bleve BM25", "Cranfield Hybrid, SQL legs", "FTS5 + KNN in SQL + fusion")
	r.time(sec, "Cranfield load vs bleve batch", ms(engramLoad), ms(bleveLoad),
		fmt.Sprintf("engram: InsertArchivalBatch of %d (FTS + vectors, durable per 1,000); bleve: one batch", len(docs)))
	r.time(sec, "Cranfield load, one InsertArchival per doc vs bleve batch", ms(engramOneLoad), ms(bleveLoad),
		"engram: a durable transaction per document")
	return nil
}
