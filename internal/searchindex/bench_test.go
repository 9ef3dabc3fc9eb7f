package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// Benchmarks run over a synthetic archive of benchN entries (default
// 100,000; 10,000 with -short; ENGRAM_BENCH_N overrides), built once per
// process: deterministic pseudo-English text with a Zipf word distribution,
// all owned by one agent (the worst case for a per-agent query), with
// 384-dimension offline-embedder vectors.
//
//	go test -run '^$' -bench . -benchtime 200x ./internal/searchindex

const benchDims = 384

func benchN() int {
	if s := os.Getenv("ENGRAM_BENCH_N"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if testing.Short() {
		return 10_000
	}
	return 100_000
}

// synth generates deterministic text.
type synth struct {
	r     *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newSynth(seed uint64) *synth {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syl := []string{"ka", "lo", "mi", "ter", "son", "ra", "vel", "dun", "pri", "sto", "an", "el", "or", "ist", "qua", "bra", "zen", "fol", "gri", "hup"}
	seen := map[string]bool{}
	var vocab []string
	for len(vocab) < 20_000 {
		n := 2 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		w := b.String()
		if !seen[w] && !search.IsStopword(w) {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &synth{r: r, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1)), vocab: vocab}
}

func (s *synth) text() string {
	n := 12 + s.r.IntN(30)
	words := make([]string, n)
	for i := range words {
		words[i] = s.vocab[s.zipf.Uint64()]
	}
	return strings.Join(words, " ") + "."
}

// queries returns 2-3 word queries of mid-frequency words.
func (s *synth) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		k := 2 + s.r.IntN(2)
		var ws []string
		for range k {
			ws = append(ws, s.vocab[50+s.r.IntN(3000)])
		}
		out[i] = strings.Join(ws, " ")
	}
	return out
}

type benchData struct {
	dir     string
	path    string
	n       int
	queries []string
	common  []string // a frequent word and a mid-frequency one
	qvecs   map[string][]float32
	vecs    []float32 // n × benchDims, row-major, id i+1 at row i
	build   time.Duration
}

var (
	benchOnce sync.Once
	bench     *benchData
	benchErr  error
)

// memoEmbedder answers precomputed query vectors (so benchmarks time the
// search, not the embedding) and embeds anything else offline.
type memoEmbedder struct {
	*search.OfflineEmbedder
	memo map[string][]float32
}

func (m memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 1 {
		if v, ok := m.memo[texts[0]]; ok {
			return [][]float32{v}, nil
		}
	}
	return m.OfflineEmbedder.Embed(ctx, texts)
}

func benchDSN(path string) string {
	// _pragma is modernc's (mattn ignores it: no mmap there); _cache_size
	// is mattn's (modernc ignores it).
	return "file:" + path + "?_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_cache_size=-262144" +
		"&_pragma=cache_size(-262144)&_pragma=mmap_size(1073741824)"
}

func getBench(b *testing.B) *benchData {
	benchOnce.Do(func() { bench, benchErr = buildBench(benchN()) })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return bench
}

func buildBench(n int) (*benchData, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "engram-search-bench-")
	if err != nil {
		return nil, err
	}
	d := &benchData{dir: dir, path: filepath.Join(dir, "bench.db"), n: n, qvecs: map[string][]float32{}}
	ctx := context.Background()
	db, err := sql.Open(sqlitedriver.Name, benchDSN(d.path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if err := migrate(ctx, db); err != nil {
		return nil, err
	}
	emb := search.NewOffline(benchDims)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
	if err != nil {
		return nil, err
	}
	s := newSynth(42)
	d.queries = s.queries(200)
	for i := range 100 { // as BenchmarkAgentsSearch's fts-common
		d.common = append(d.common, s.vocab[i%20]+" "+s.vocab[60+(i*131)%2000])
	}
	for _, q := range d.queries {
		d.qvecs[q] = emb.Vector(q)
	}
	d.vecs = make([]float32, 0, n*benchDims)
	const batch = 5000
	for lo := 0; lo < n; lo += batch {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		ins, err := tx.PrepareContext(ctx, `INSERT INTO archival (id, agent, content, created_at, valid_from) VALUES (?, 'bench', ?, ?, ?)`)
		if err != nil {
			return nil, err
		}
		var items []searchindex.EmbeddingItem
		for i := lo; i < min(lo+batch, n); i++ {
			text := s.text()
			ts := baseTime.Add(time.Duration(i) * time.Second).UnixNano()
			if _, err := ins.ExecContext(ctx, i+1, text, ts, ts); err != nil {
				return nil, err
			}
			v := emb.Vector(text)
			d.vecs = append(d.vecs, v...)
			items = append(items, searchindex.EmbeddingItem{ID: int64(i + 1), Owner: "bench", Vector: v})
		}
		ins.Close()
		if err := x.PutEmbeddings(ctx, tx, search.Archival, items); err != nil {
			return nil, err
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO fts_archival (fts_archival) VALUES ('optimize')`); err != nil {
		return nil, err
	}
	d.build = time.Since(start)
	fmt.Fprintf(os.Stderr, "search bench: built %d archival entries with %d-dim vectors in %v\n", n, benchDims, d.build.Round(time.Millisecond))
	return d, nil
}

func TestMain(m *testing.M) {
	code := pgtest.Main(m) // the PostgreSQL tests share one cluster
	if bench != nil {
		os.RemoveAll(bench.dir)
	}
	if agentsTmp != "" {
		os.RemoveAll(agentsTmp)
	}
	if migrated.dir != "" {
		os.RemoveAll(migrated.dir)
	}
	os.Exit(code)
}

func openBench(b *testing.B, d *benchData, emb search.Embedder, opts *searchindex.IndexOptions) (*sql.DB, *searchindex.Index) {
	db, err := sql.Open(sqlitedriver.Name, benchDSN(d.path))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, emb, opts)
	if err != nil {
		b.Fatal(err)
	}
	return db, x
}

// latencies records per-operation times and reports percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(l)))) - 1
		return float64(l[max(i, 0)].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
}

func benchSearch(b *testing.B, mode search.Mode, cache bool) {
	io := searchindex.IndexOptions{TextCacheBytes: -1}
	if !cache {
		io.VectorCacheBytes = -1
	}
	benchSearchWith(b, mode, io)
}

func benchSearchWith(b *testing.B, mode search.Mode, io searchindex.IndexOptions) {
	benchSearchQueries(b, mode, io, false)
}

// benchSearchQueries is benchSearchWith over the common-word queries when
// common.
func benchSearchQueries(b *testing.B, mode search.Mode, io searchindex.IndexOptions, common bool) {
	d := getBench(b)
	queries := d.queries
	if common {
		queries = d.common
	}
	cache := io.VectorCacheBytes >= 0 || io.TextCacheBytes >= 0
	_, x := openBench(b, d, memoEmbedder{search.NewOffline(benchDims), d.qvecs}, &io)
	ctx := context.Background()
	opts := search.NewOptions().Mode(mode).ContentTypes(search.Archival).Limit(10)
	scope := search.Scope{Agent: "bench"}
	var load time.Duration
	var heap uint64
	if cache {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		if err := x.WarmTextCache(ctx); err != nil {
			b.Fatal(err)
		}
		if err := x.WarmVectorCache(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := x.Search(ctx, d.queries[0], scope, opts); err != nil {
			b.Fatal(err)
		}
		load = time.Since(start)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
	}
	// Warm the page cache.
	for _, q := range queries[:20] {
		if _, err := x.Search(ctx, q, scope, opts); err != nil {
			b.Fatal(err)
		}
	}
	lat := make(latencies, 0, b.N)
	hits := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		start := time.Now()
		rs, err := x.Search(ctx, q, scope, opts)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(rs)
	}
	b.StopTimer()
	lat.report(b)
	b.ReportMetric(float64(d.n), "entries")
	if cache {
		b.ReportMetric(float64(load.Milliseconds()), "cache-load-ms")
		b.ReportMetric(float64(heap)/(1<<20), "cache-MB")
	}
	runtime.KeepAlive(x)
	b.ReportMetric(float64(hits)/float64(b.N), "results/op")
}

// BenchmarkFTS: FTS over the archive, limit 10 (budget: p50 under 5 ms at
// 100k entries).
func BenchmarkFTS(b *testing.B) {
	b.Run("fts5", func(b *testing.B) { benchSearchWith(b, search.FTS, searchindex.IndexOptions{TextCacheBytes: -1}) })
	b.Run("textcache", func(b *testing.B) { benchSearchWith(b, search.FTS, searchindex.IndexOptions{}) })
	// Queries with a word most entries hold (one agent's worst case).
	b.Run("fts5-common", func(b *testing.B) {
		benchSearchQueries(b, search.FTS, searchindex.IndexOptions{TextCacheBytes: -1}, true)
	})
	b.Run("textcache-common", func(b *testing.B) { benchSearchQueries(b, search.FTS, searchindex.IndexOptions{}, true) })
}

// BenchmarkHybrid: FTS + vector KNN fused, limit 10, query vectors
// precomputed (budget: under 20 ms at 100k entries, 384 dims), with KNN in
// SQL and with the vector cache.
func BenchmarkHybrid(b *testing.B) {
	b.Run("sql", func(b *testing.B) { benchSearch(b, search.Hybrid, false) })
	b.Run("cache", func(b *testing.B) { benchSearch(b, search.Hybrid, true) })
	b.Run("both-caches", func(b *testing.B) {
		benchSearchWith(b, search.Hybrid, searchindex.IndexOptions{})
	})
}

// BenchmarkVector: vector search through Search, limit 10.
func BenchmarkVector(b *testing.B) {
	b.Run("sql", func(b *testing.B) { benchSearch(b, search.Vector, false) })
	b.Run("cache", func(b *testing.B) { benchSearch(b, search.Vector, true) })
}

// BenchmarkVectorKNN compares the exact KNN in SQL (k = 10, 384 dims, one
// owner's rows) with an in-process brute-force cosine scan of the same
// vectors.
func BenchmarkVectorKNN(b *testing.B) {
	d := getBench(b)
	ctx := context.Background()
	b.Run("sql", func(b *testing.B) {
		db, _ := openBench(b, d, nil, nil)
		stmt, err := db.PrepareContext(ctx, `SELECT rowid, vec_distance_cosine(embedding, ?) AS d FROM vec_archival
			WHERE owner = 'bench' AND d IS NOT NULL ORDER BY d, rowid LIMIT 10`)
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		blobs := make([][]byte, len(d.queries))
		for i, q := range d.queries {
			blobs[i] = f32blob(d.qvecs[q])
		}
		lat := make(latencies, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			rows, err := stmt.QueryContext(ctx, blobs[i%len(blobs)])
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				n++
			}
			rows.Close()
			lat = append(lat, time.Since(start))
			if n != 10 {
				b.Fatalf("%d neighbours", n)
			}
		}
		b.StopTimer()
		lat.report(b)
	})
	b.Run("bruteforce", func(b *testing.B) {
		lat := make(latencies, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			q := d.qvecs[d.queries[i%len(d.queries)]]
			start := time.Now()
			top := bruteForceKNN(d.vecs, q, 10)
			lat = append(lat, time.Since(start))
			if len(top) != 10 {
				b.Fatal("short result")
			}
		}
		b.StopTimer()
		lat.report(b)
	})
}

func f32blob(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		u := math.Float32bits(f)
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return out
}

// bruteForceKNN is the baseline: cosine distance of q to every row
// (norms computed on the fly, as vec0 does), keeping the k nearest.
func bruteForceKNN(vecs, q []float32, k int) []int {
	type hit struct {
		i int
		d float32
	}
	var qn float32
	for _, f := range q {
		qn += f * f
	}
	qn = float32(math.Sqrt(float64(qn)))
	top := make([]hit, 0, k+1)
	for row := 0; row*benchDims < len(vecs); row++ {
		v := vecs[row*benchDims : (row+1)*benchDims : (row+1)*benchDims]
		var dot, vn float32
		for j, f := range v {
			dot += f * q[j]
			vn += f * f
		}
		d := 1 - dot/(qn*float32(math.Sqrt(float64(vn))))
		if len(top) < k || d < top[len(top)-1].d {
			pos := len(top)
			for pos > 0 && top[pos-1].d > d {
				pos--
			}
			top = slices.Insert(top, pos, hit{row, d})
			if len(top) > k {
				top = top[:k]
			}
		}
	}
	out := make([]int, len(top))
	for i, h := range top {
		out[i] = h.i + 1
	}
	return out
}

// BenchmarkIndexing measures insert throughput of archival entries in
// transactions of 100: FTS only (triggers), and FTS plus offline-embedder
// vectors through PutVectors.
func BenchmarkIndexing(b *testing.B) {
	for _, withEmb := range []bool{false, true} {
		name := "fts-only"
		if withEmb {
			name = "with-embedder"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			db, err := sql.Open(sqlitedriver.Name, benchDSN(filepath.Join(b.TempDir(), "i.db")))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if err := migrate(ctx, db); err != nil {
				b.Fatal(err)
			}
			var emb search.Embedder
			if withEmb {
				emb = search.NewOffline(benchDims)
			}
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, nil)
			if err != nil {
				b.Fatal(err)
			}
			s := newSynth(7)
			texts := make([]string, 1000)
			for i := range texts {
				texts[i] = s.text()
			}
			const per = 100
			b.ResetTimer()
			for i := 0; i < b.N; i += per {
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				var items []searchindex.VectorItem
				for j := i; j < min(i+per, b.N); j++ {
					text := texts[j%len(texts)]
					res, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('a', ?, 0, 0)`, text)
					if err != nil {
						b.Fatal(err)
					}
					id, _ := res.LastInsertId()
					items = append(items, searchindex.VectorItem{ID: id, Owner: "a", Text: text})
				}
				if withEmb {
					if err := x.PutVectors(ctx, tx, search.Archival, items); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
