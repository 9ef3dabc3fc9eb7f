package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	sqlitebackend "github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// BenchAgents: one agent's search in a store of N agents, each
// with 20 blocks, 200 archival entries and 200 messages of one Zipf
// vocabulary, blocks and entries embedded offline (384 dimensions), with
// the library's default cache bounds. Each row compares N agents with 10:
// an agent's search should cost what its own rows cost, so the ratios
// should stay near 1 (SearchAll reads every agent's rows and grows).
func benchAgents(ctx context.Context, cfg config, tmp string, r *report) error {
	ns := []int{10, 100, 1000}
	switch cfg.name {
	case "smoke":
		ns = []int{10, 30}
	case "quick":
		ns = []int{10, 100}
	}
	type mode struct {
		name  string
		m     search.Mode
		types []search.ContentType
		all   bool
	}
	modes := []mode{
		{"fts", search.FTS, []search.ContentType{search.Archival}, false},
		{"vector", search.Vector, []search.ContentType{search.Archival}, false},
		{"hybrid", search.Hybrid, []search.ContentType{search.Archival}, false},
		{"default (all types)", search.Auto, nil, false},
		{"SearchAll", search.Auto, nil, true},
	}
	base := map[string]latency{}
	for _, n := range ns {
		path := filepath.Join(tmp, fmt.Sprintf("agents-%d.db", n))
		start := time.Now()
		queries, err := buildAgentStore(ctx, path, n)
		if err != nil {
			return fmt.Errorf("agents: build N=%d: %w", n, err)
		}
		build := time.Since(start)
		db, err := sql.Open(sqlitebackend.Driver, vectorDSN(path))
		if err != nil {
			return fmt.Errorf("agents: open N=%d: %w", n, err)
		}
		x, err := searchindex.NewIndex(ctx, db, sqlitebackend.SearchDialect{}, search.NewOffline(384), nil)
		if err != nil {
			db.Close()
			return fmt.Errorf("agents: index N=%d: %w", n, err)
		}
		start = time.Now()
		textErr, vecErr := x.WarmTextCache(ctx), x.WarmVectorCache(ctx)
		warm := time.Since(start)
		var size int64
		if st, err := os.Stat(path); err == nil {
			size = st.Size()
		}
		note := func(extra string) string {
			s := fmt.Sprintf("N=%d: build %v, cache warm %v, file %.0f MB, %s", n, build.Round(time.Millisecond),
				warm.Round(time.Millisecond), float64(size)/(1<<20), residentNote())
			st := x.CacheStats()
			s += "; text cache: " + cacheState(textErr, st.TextPartial, st.TextBytes)
			s += "; vector cache: " + cacheState(vecErr, st.VectorPartial, st.VectorBytes)
			if extra != "" {
				s += "; " + extra
			}
			return s
		}
		for _, m := range modes {
			opts := search.NewOptions().Mode(m.m).Limit(10)
			if m.types != nil {
				opts = opts.ContentTypes(m.types...)
			}
			scope := func(i int) search.Scope {
				if m.all {
					return search.Scope{All: true}
				}
				return search.Scope{Agent: agentName((i * 7919) % n)}
			}
			if m.m == search.Vector || m.m == search.Hybrid {
				for i := range n { // every agent once: the partial vector cache's steady state
					if _, err := x.Search(ctx, queries[0], search.Scope{Agent: agentName(i)}, opts); err != nil {
						return fmt.Errorf("agents: N=%d %s: %w", n, m.name, err)
					}
				}
			}
			var ls []latency
			var first latency // the first repeat: agents' first searches (partitions load)
			for rep := range cfg.repeats {
				var ds []time.Duration
				for i, q := range queries {
					t := time.Now()
					if _, err := x.Search(ctx, q, scope(i), opts); err != nil {
						return fmt.Errorf("agents: N=%d %s: %w", n, m.name, err)
					}
					ds = append(ds, time.Since(t))
				}
				ls = append(ls, latencyOf(ds))
				if rep == 0 {
					first = latencyOf(ds)
				}
			}
			l := medianLatency(ls)
			if n == ns[0] {
				base[m.name] = l
				continue
			}
			extra := fmt.Sprintf("first repeat p50 %.3f ms p95 %.3f ms", first.p50, first.p95)
			r.latency("agents", fmt.Sprintf("%s, N=%d vs N=%d", m.name, n, ns[0]), l, base[m.name], note(extra))
		}
		if err := agentSQLRows(ctx, cfg, db, sqlitebackend.SearchDialect{}, n, ns[0], queries, base, "agents", "sqlite", note(""), r); err != nil {
			return err
		}
		x.Close()
		db.Close()
	}
	return nil
}

// cacheState says what a cache holds: the whole store, the partitions of
// the agents searched lately (partial), or nothing (its warm-up failed
// without going partial: searches in SQL).
func cacheState(warmErr error, partial bool, bytes int64) string {
	held := fmt.Sprintf("%.1f MB", float64(bytes)/(1<<20))
	switch {
	case partial:
		return "partial, " + held
	case warmErr != nil:
		return "none (SQL)"
	}
	return "whole, " + held
}

func agentName(i int) string { return "agent-" + strconv.Itoa(i) }

// buildAgentStore writes n agents' rows and returns the timed queries (two
// or three words, one of them frequent).
func buildAgentStore(ctx context.Context, path string, n int) ([]string, error) {
	r := rand.New(rand.NewPCG(35, uint64(n)))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	text := func() string {
		w := make([]string, 12+r.IntN(30))
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	db, err := sql.Open(sqlitebackend.Driver, vectorDSN(path))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, _, err := sqlitebackend.Migrate(ctx, db); err != nil {
		return nil, err
	}
	emb := search.NewOffline(384)
	x, err := searchindex.NewIndex(ctx, db, sqlitebackend.SearchDialect{}, emb, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		return nil, err
	}
	defer x.Close()
	for a := range n {
		agent := agentName(a)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		var blocks, arch []searchindex.EmbeddingItem
		for i := range 20 {
			label, body := "block-"+strconv.Itoa(i), text()
			res, err := tx.ExecContext(ctx, `INSERT INTO blocks
				(owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
				VALUES (?, ?, '', 'working', 'ReadWrite', '{}', 5000, ?, 0, 0)`, agent, label, body)
			if err != nil {
				tx.Rollback()
				return nil, err
			}
			id, _ := res.LastInsertId()
			blocks = append(blocks, searchindex.EmbeddingItem{ID: id, Owner: agent, Vector: emb.Vector(search.BlockText(label, "", body))})
		}
		for i := range 200 {
			body := text()
			res, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES (?, ?, ?, ?)`,
				agent, body, i, i)
			if err != nil {
				tx.Rollback()
				return nil, err
			}
			id, _ := res.LastInsertId()
			arch = append(arch, searchindex.EmbeddingItem{ID: id, Owner: agent, Vector: emb.Vector(body)})
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES (?, 'user', ?, 'b1', ?, ?)`, agent, text(), i+1, i); err != nil {
				tx.Rollback()
				return nil, err
			}
		}
		if err := x.PutEmbeddings(ctx, tx, search.Blocks, blocks); err != nil {
			tx.Rollback()
			return nil, err
		}
		if err := x.PutEmbeddings(ctx, tx, search.Archival, arch); err != nil {
			tx.Rollback()
			return nil, err
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
	}
	// The lazy block index runs before the first search over blocks.
	if _, err := x.Search(ctx, "warm", search.Scope{All: true}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks)); err != nil {
		return nil, err
	}
	var queries []string
	for i := range 60 {
		queries = append(queries, vocab[i%15]+" "+vocab[50+r.IntN(2000)])
	}
	return queries, nil
}

// residentNote is the process's resident set size (Linux; "?" elsewhere)
// split into anonymous memory and file pages (the store's pages mapped by
// vectorDSN's mmap_size, which the kernel may drop), beside the Go heap in
// use: anonymous memory beyond the Go runtime's is SQLite's (page caches,
// one per connection, cache_size in vectorDSN).
func residentNote() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	kb := map[string]int{}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if f := strings.Fields(v); ok && len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil {
					kb[k] = n
				}
			}
		}
	}
	mb := func(k string) string {
		if n, ok := kb[k]; ok {
			return fmt.Sprintf("%.0f MB", float64(n)/1024)
		}
		return "?"
	}
	return fmt.Sprintf("RSS %s (anonymous %s, file %s), Go heap in use %.0f MB of %.0f MB the Go runtime holds",
		mb("VmRSS"), mb("RssAnon"), mb("RssFile"), float64(ms.HeapInuse)/(1<<20), float64(ms.Sys-ms.HeapReleased)/(1<<20))
}
