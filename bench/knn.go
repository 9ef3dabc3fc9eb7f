package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/philippgille/chromem-go"

	"github.com/engram-go/engram/internal/searchindex"
	sqlitebackend "github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// vectorSet is n unit vectors of dims float32s, row-major, plus queries
// drawn from the same clusters (but not equal to any stored vector).
type vectorSet struct {
	n, dims int
	data    []float32 // row i is id i+1
	queries [][]float32
}

func (v *vectorSet) row(i int) []float32 { return v.data[i*v.dims : (i+1)*v.dims : (i+1)*v.dims] }

// clusteredVectors generates a fixed-seed mixture of Gaussian clusters on
// the unit sphere: sqrt(n) cluster centres, each vector its centre plus
// noise, normalised. Real embeddings are clustered like this; uniform
// random vectors would make every neighbour equally far.
func clusteredVectors(n, dims, nq int, seed uint64) *vectorSet {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	k := max(4, int(math.Sqrt(float64(n))))
	centres := make([][]float32, k)
	for i := range centres {
		c := make([]float32, dims)
		for j := range c {
			c[j] = float32(r.NormFloat64())
		}
		centres[i] = normalize(c)
	}
	const spread = 0.08 // per-dimension noise; about 1.5x the centre's norm overall
	gen := func(dst []float32) {
		c := centres[r.IntN(k)]
		for j := range dst {
			dst[j] = c[j] + float32(r.NormFloat64()*spread)
		}
		normalize(dst)
	}
	v := &vectorSet{n: n, dims: dims, data: make([]float32, n*dims)}
	for i := range n {
		gen(v.row(i))
	}
	for range nq {
		q := make([]float32, dims)
		gen(q)
		v.queries = append(v.queries, q)
	}
	return v
}

func normalize(v []float32) []float32 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// bruteForce is the in-process limit: one goroutine, a dot product per
// stored unit vector, a sorted top-k kept by insertion. Returns ids.
func bruteForce(v *vectorSet, q []float32, k int) []int64 {
	type hit struct {
		id  int64
		sim float32
	}
	top := make([]hit, 0, k+1)
	d := v.dims
	q = q[:d:d]
	for i := 0; i < v.n; i++ {
		row := v.data[i*d : (i+1)*d : (i+1)*d]
		var s0, s1, s2, s3 float32
		j := 0
		for ; j+4 <= d; j += 4 {
			s0 += row[j] * q[j]
			s1 += row[j+1] * q[j+1]
			s2 += row[j+2] * q[j+2]
			s3 += row[j+3] * q[j+3]
		}
		for ; j < d; j++ {
			s0 += row[j] * q[j]
		}
		s := s0 + s1 + s2 + s3
		if len(top) < k || s > top[len(top)-1].sim {
			pos := len(top)
			for pos > 0 && top[pos-1].sim < s {
				pos--
			}
			top = slices.Insert(top, pos, hit{int64(i + 1), s})
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	ids := make([]int64, len(top))
	for i, h := range top {
		ids[i] = h.id
	}
	return ids
}

func recallAt(got, truth []int64) float64 {
	if len(truth) == 0 {
		return 0
	}
	n := 0
	for _, id := range got {
		if slices.Contains(truth, id) {
			n++
		}
	}
	return float64(n) / float64(len(truth))
}

// memoEmbedder answers the benchmark's query texts with their vectors.
type memoEmbedder struct {
	dims int
	memo map[string][]float32
}

func (m *memoEmbedder) Name() string    { return "bench-clustered/" + strconv.Itoa(m.dims) }
func (m *memoEmbedder) Dimensions() int { return m.dims }
func (m *memoEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := m.memo[t]
		if !ok {
			return nil, fmt.Errorf("%w: no vector for %q", search.ErrEmbedder, t)
		}
		out[i] = v
	}
	return out, nil
}

// vectorDSN is the set-up the search engine (internal/searchindex)
// recommends for vector-heavy use: WAL, synchronous=NORMAL, a 256 MB page cache and 1 GB mmap.
func vectorDSN(path string) string {
	// The _pragma keys are modernc's and _cache_size mattn's; each driver
	// ignores the other's (mattn has no mmap setting in its DSN).
	return "file:" + path + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1&_cache_size=-262144" +
		"&_pragma=cache_size(-262144)&_pragma=mmap_size(1073741824)"
}

// loadEngramVectors writes n archival rows of one agent with their vectors
// (Index.PutEmbeddings) in transactions of 5,000, the rows in
// 100-row INSERTs as memory.InsertArchivalBatch writes them (one row per
// statement makes FTS5 flush a segment per row).
func loadEngramVectors(ctx context.Context, path string, v *vectorSet, emb search.Embedder) error {
	db, err := sql.Open(sqlitebackend.Driver, vectorDSN(path))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, _, err := sqlitebackend.Migrate(ctx, db); err != nil {
		return err
	}
	x, err := searchindex.NewIndex(ctx, db, sqlitebackend.SearchDialect{}, emb, nil)
	if err != nil {
		return err
	}
	const batch = 5000
	for lo := 0; lo < v.n; lo += batch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var items []searchindex.EmbeddingItem
		hi := min(lo+batch, v.n)
		// As InsertArchivalBatch does, the 100-row INSERT is parsed once
		// per transaction.
		insert := func(n int) string {
			return `INSERT INTO archival (id, agent, content, created_at, valid_from) VALUES ` +
				strings.TrimSuffix(strings.Repeat(`(?, 'knn', ?, 0, 0), `, n), ", ")
		}
		full, err := tx.PrepareContext(ctx, insert(100))
		if err != nil {
			tx.Rollback()
			return err
		}
		for c := lo; c < hi; c += 100 {
			var args []any
			for i := c; i < min(c+100, hi); i++ {
				args = append(args, i+1, "vector "+strconv.Itoa(i+1))
				items = append(items, searchindex.EmbeddingItem{ID: int64(i + 1), Owner: "knn", Vector: v.row(i), New: true})
			}
			if n := len(args) / 2; n == 100 {
				_, err = full.ExecContext(ctx, args...)
			} else {
				_, err = tx.ExecContext(ctx, insert(n), args...)
			}
			if err != nil {
				full.Close()
				tx.Rollback()
				return err
			}
		}
		full.Close()
		if err := x.PutEmbeddings(ctx, tx, search.Archival, items); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// benchKNN: comparison 2, exact k=10 vector search over clustered vectors.
func benchKNN(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "knn"
	const k = 10
	for si, n := range cfg.knnSizes {
		v := clusteredVectors(n, cfg.knnDims, cfg.knnQueries, uint64(42+si))
		size := fmt.Sprintf("%s×%d", humanCount(n), cfg.knnDims)
		texts := make([]string, len(v.queries))
		emb := &memoEmbedder{dims: cfg.knnDims, memo: map[string][]float32{}}
		for i, q := range v.queries {
			texts[i] = "query " + strconv.Itoa(i)
			emb.memo[texts[i]] = q
		}
		truth := make([][]int64, len(v.queries))
		for i, q := range v.queries {
			truth[i] = bruteForce(v, q, k)
		}

		// engram: archival rows + vectors, searched through searchindex.Index
		// (scope = the one agent, i.e. its partition); once by the exact
		// scan in SQL (VectorCacheBytes -1), once over the (default) vector
		// cache.
		path := filepath.Join(tmp, fmt.Sprintf("knn-%d.db", n))
		t0 := time.Now()
		if err := loadEngramVectors(ctx, path, v, emb); err != nil {
			return fmt.Errorf("engram load %d vectors: %w", n, err)
		}
		engramLoad := time.Since(t0)
		db, err := sql.Open(sqlitebackend.Driver, vectorDSN(path))
		if err != nil {
			return err
		}
		defer db.Close()
		xVec, err := searchindex.NewIndex(ctx, db, sqlitebackend.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1})
		if err != nil {
			return err
		}
		xCache, err := searchindex.NewIndex(ctx, db, sqlitebackend.SearchDialect{}, emb, nil) // the default: vector cache
		if err != nil {
			return err
		}
		opts := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(k)
		scope := search.Scope{Agent: "knn"}
		engramQuery := func(x *searchindex.Index) func(i int) ([]int64, error) {
			return func(i int) ([]int64, error) {
				rs, err := x.Search(ctx, texts[i], scope, opts)
				if err != nil {
					return nil, err
				}
				ids := make([]int64, len(rs))
				for j, res := range rs {
					ids[j] = res.ID
				}
				return ids, nil
			}
		}
		t0 = time.Now()
		if err := xCache.WarmVectorCache(ctx); err != nil {
			return err
		}
		cacheLoad := time.Since(t0)

		// chromem-go: in-memory collection of the same vectors.
		t0 = time.Now()
		cdb := chromem.NewDB()
		col, err := cdb.CreateCollection("knn", nil, func(context.Context, string) ([]float32, error) {
			return nil, errors.New("chromem: no embedding function in the benchmark")
		})
		if err != nil {
			return err
		}
		ids := make([]string, n)
		vecs := make([][]float32, n)
		for i := range n {
			ids[i] = strconv.Itoa(i + 1)
			vecs[i] = slices.Clone(v.row(i))
		}
		if err := col.Add(ctx, ids, vecs, nil, nil); err != nil {
			return fmt.Errorf("chromem add: %w", err)
		}
		chromemLoad := time.Since(t0)
		chromemQuery := func(i int) ([]int64, error) {
			res, err := col.QueryEmbedding(ctx, v.queries[i], k, nil, nil)
			if err != nil {
				return nil, err
			}
			out := make([]int64, len(res))
			for j, x := range res {
				out[j], _ = strconv.ParseInt(x.ID, 10, 64)
			}
			return out, nil
		}
		bruteQuery := func(i int) ([]int64, error) { return bruteForce(v, v.queries[i], k), nil }

		type sys struct {
			name string
			q    func(i int) ([]int64, error)
		}
		systems := []sys{
			{"engram SQL scan", engramQuery(xVec)},
			{"engram vector cache", engramQuery(xCache)},
			{"chromem-go", chromemQuery},
			{"brute force", bruteQuery},
		}
		recall := map[string]float64{}
		for _, s := range systems { // warm-up + recall
			var sum float64
			for i := range v.queries {
				got, err := s.q(i)
				if err != nil {
					return fmt.Errorf("%s: %w", s.name, err)
				}
				sum += recallAt(got, truth[i])
			}
			recall[s.name] = sum / float64(len(v.queries))
		}
		lats := map[string][]latency{}
		for range cfg.repeats {
			for _, s := range systems {
				ds := make([]time.Duration, 0, len(v.queries))
				for i := range v.queries {
					t := time.Now()
					if _, err := s.q(i); err != nil {
						return err
					}
					ds = append(ds, time.Since(t))
				}
				lats[s.name] = append(lats[s.name], latencyOf(ds))
			}
		}
		lat := func(name string) latency { return medianLatency(lats[name]) }
		pair := func(e, b, note string) {
			le, lb := lat(e), lat(b)
			r.latency(sec, fmt.Sprintf("KNN %s k=10 p50: %s vs %s", size, e, b), le, lb, note)
		}
		pair("engram SQL scan", "chromem-go", "chromem scans on all cores")
		pair("engram SQL scan", "brute force", "")
		pair("engram vector cache", "chromem-go", "")
		pair("engram vector cache", "brute force", fmt.Sprintf("cache load %s (in the background: SQL answers meanwhile); the cache splits big scans over GOMAXPROCS goroutines, brute force is one goroutine",
			formatValue(ms(cacheLoad), unitMS)))
		r.compare(sec, fmt.Sprintf("KNN %s recall@10: engram SQL scan vs brute force", size), recall["engram SQL scan"], recall["brute force"], unitScore, "higher", "")
		r.compare(sec, fmt.Sprintf("KNN %s recall@10: engram vector cache vs brute force", size), recall["engram vector cache"], recall["brute force"], unitScore, "higher", "")
		r.compare(sec, fmt.Sprintf("KNN %s recall@10: chromem-go vs brute force", size), recall["chromem-go"], recall["brute force"], unitScore, "higher", "reference (not engram)")
		r.time(sec, fmt.Sprintf("KNN %s load: engram vs chromem-go", size), ms(engramLoad), ms(chromemLoad),
			"engram: archival rows + vectors on disk, 100 rows (64 vectors) per INSERT in 5k-row transactions, as InsertArchivalBatch writes; chromem: in-memory map")
		xCache = nil
		db.Close()
	}
	return nil
}

func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1_000 && n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}
