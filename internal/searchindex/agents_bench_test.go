package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// BenchmarkAgentsSearch measures what one agent's search costs when the
// store holds N agents: each agent owns 20 blocks, 200
// archival entries and 200 messages of the same Zipf vocabulary, blocks
// and archival entries embedded offline. A per-agent search should cost
// what the agent's own rows cost, whatever N is.
//
//	go test -run '^$' -bench 'AgentsSearch' -benchtime 200x ./internal/searchindex
//
// ENGRAM_AGENTS_N (comma-separated, default 10,100,1000; 10,100 with
// -short) picks the store sizes. A store is built once per process; with
// ENGRAM_AGENTS_DIR set it is kept in that directory and reused by later
// runs (the N=1,000 store takes minutes to build).
func BenchmarkAgentsSearch(b *testing.B) {
	for _, n := range agentsNs() {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			for _, c := range []struct {
				name  string
				mode  search.Mode
				types []search.ContentType
				all   bool
			}{
				{"fts", search.FTS, []search.ContentType{search.Archival}, false},
				{"fts-common", search.FTS, []search.ContentType{search.Archival}, false},
				{"vector", search.Vector, []search.ContentType{search.Archival}, false},
				{"hybrid", search.Hybrid, []search.ContentType{search.Archival}, false},
				{"search", search.Auto, nil, false},
				{"searchall", search.Auto, nil, true},
			} {
				b.Run(c.name, func(b *testing.B) {
					st := getAgentsStore(b, n)
					qs := st.queries
					if c.name == "fts-common" {
						qs = st.common
					}
					benchAgents(b, st, qs, c.mode, c.types, c.all)
				})
			}
		})
	}
}

func agentsNs() []int {
	s := os.Getenv("ENGRAM_AGENTS_N")
	if s == "" {
		if testing.Short() {
			return []int{10, 100}
		}
		return []int{10, 100, 1000}
	}
	var out []int
	for _, f := range splitComma(s) {
		if n, err := strconv.Atoi(f); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

const (
	agentsBlocks   = 20
	agentsArchival = 200
	agentsMessages = 200
)

type agentsStore struct {
	path    string
	n       int
	queries []string
	common  []string
	x       *searchindex.Index // shared by the store's sub-benchmarks
	load    time.Duration      // the first warm of the caches
}

var (
	agentsMu     sync.Mutex
	agentsStores = map[int]*agentsStore{}
	agentsTmp    string
)

func agentsName(i int) string { return fmt.Sprintf("agent-%04d", i) }

func getAgentsStore(b *testing.B, n int) *agentsStore {
	agentsMu.Lock()
	defer agentsMu.Unlock()
	if st := agentsStores[n]; st != nil {
		return st
	}
	dir := os.Getenv("ENGRAM_AGENTS_DIR")
	if dir == "" {
		if agentsTmp == "" {
			d, err := os.MkdirTemp("", "engram-agents-bench-")
			if err != nil {
				b.Fatal(err)
			}
			agentsTmp = d
		}
		dir = agentsTmp
	}
	st := &agentsStore{path: filepath.Join(dir, fmt.Sprintf("agents-%d.db", n)), n: n}
	s := newSynth(7)
	st.queries = s.queries(200)
	// Queries with a word most entries hold: a ranking that walks every
	// agent's matches pays most for these.
	for i := range 100 {
		st.common = append(st.common, s.vocab[i%20]+" "+s.vocab[60+(i*131)%2000])
	}
	if _, err := os.Stat(st.path); err != nil {
		start := time.Now()
		if err := buildAgents(st, s); err != nil {
			os.Remove(st.path)
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "agents bench: built N=%d in %v\n", n, time.Since(start).Round(time.Millisecond))
	}
	db, err := sql.Open(sqlitedriver.Name, benchDSN(st.path))
	if err != nil {
		b.Fatal(err)
	}
	// ENGRAM_AGENTS_TEXTCACHE and ENGRAM_AGENTS_VECCACHE set the caches'
	// bounds (bytes; default the library's).
	var io searchindex.IndexOptions
	if v, err := strconv.ParseInt(os.Getenv("ENGRAM_AGENTS_TEXTCACHE"), 10, 64); err == nil {
		io.TextCacheBytes = v
	}
	if v, err := strconv.ParseInt(os.Getenv("ENGRAM_AGENTS_VECCACHE"), 10, 64); err == nil {
		io.VectorCacheBytes = v
	}
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, search.NewOffline(benchDims), &io)
	if err != nil {
		b.Fatal(err)
	}
	st.x = x
	agentsStores[n] = st
	return st
}

func buildAgents(st *agentsStore, s *synth) error {
	ctx := context.Background()
	tmp := st.path + ".tmp"
	os.Remove(tmp)
	db, err := sql.Open(sqlitedriver.Name, benchDSN(tmp))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrate(ctx, db); err != nil {
		return err
	}
	emb := search.NewOffline(benchDims)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		return err
	}
	defer x.Close()
	ts := baseTime.UnixNano()
	for a := range st.n {
		agent := agentsName(a)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		var blocks, arch []searchindex.EmbeddingItem
		for i := range agentsBlocks {
			text := s.text()
			res, err := tx.ExecContext(ctx, `INSERT INTO blocks
				(owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
				VALUES (?, ?, '', 'working', 'ReadWrite', '{}', 5000, ?, ?, ?)`,
				agent, fmt.Sprintf("block-%d", i), text, ts, ts)
			if err != nil {
				return fmt.Errorf("insert block: %w", err)
			}
			id, _ := res.LastInsertId()
			blocks = append(blocks, searchindex.EmbeddingItem{ID: id, Owner: agent,
				Vector: emb.Vector(search.BlockText(fmt.Sprintf("block-%d", i), "", text))})
		}
		for range agentsArchival {
			ts++
			text := s.text()
			res, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES (?, ?, ?, ?)`,
				agent, text, ts, ts)
			if err != nil {
				return fmt.Errorf("insert archival: %w", err)
			}
			id, _ := res.LastInsertId()
			arch = append(arch, searchindex.EmbeddingItem{ID: id, Owner: agent, Vector: emb.Vector(text)})
		}
		for i := range agentsMessages {
			ts++
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES (?, 'user', ?, 'b1', ?, ?)`, agent, s.text(), i+1, ts); err != nil {
				return fmt.Errorf("insert message: %w", err)
			}
		}
		if err := x.PutEmbeddings(ctx, tx, search.Blocks, blocks); err != nil {
			return err
		}
		if err := x.PutEmbeddings(ctx, tx, search.Archival, arch); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	// Index the blocks' text (the lazy index runs before a search over
	// blocks), so no timed search pays for it.
	if _, err := x.Search(ctx, "warm", search.Scope{All: true}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks)); err != nil {
		return err
	}
	for _, t := range []string{"fts_archival", "fts_messages", "fts_blocks"} {
		if _, err := db.ExecContext(ctx, `INSERT INTO `+t+` (`+t+`) VALUES ('optimize')`); err != nil {
			return fmt.Errorf("optimize %s: %w", t, err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return err
	}
	x.Close()
	db.Close()
	return os.Rename(tmp, st.path)
}

func benchAgents(b *testing.B, st *agentsStore, queries []string, mode search.Mode, types []search.ContentType, all bool) {
	ctx := context.Background()
	x := st.x
	opts := search.NewOptions().Mode(mode).Limit(10)
	if types != nil {
		opts = opts.ContentTypes(types...)
	}
	if st.load == 0 {
		// The first warm: what a process pays before its caches answer
		// (a cache that gives up leaves searches in SQL).
		start := time.Now()
		_ = x.WarmTextCache(ctx)
		_ = x.WarmVectorCache(ctx)
		st.load = time.Since(start)
	}
	scope := func(i int) search.Scope {
		if all {
			return search.Scope{All: true}
		}
		return search.Scope{Agent: agentsName((i * 7919) % st.n)}
	}
	if mode == search.Vector || mode == search.Hybrid {
		// One search per agent first: a vector cache over its bound holds
		// the partitions of the agents searched lately (the steady state of
		// agents that search repeatedly, not each one's first search).
		for i := range st.n {
			a := search.Scope{Agent: agentsName(i)}
			if _, err := x.Search(ctx, queries[0], a, opts); err != nil {
				b.Fatal(err)
			}
		}
	}
	for i, q := range queries[:20] {
		if _, err := x.Search(ctx, q, scope(i), opts); err != nil {
			b.Fatal(err)
		}
	}
	lat := make(latencies, 0, b.N)
	hits := 0
	before := x.CacheStats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := queries[i%len(queries)]
		start := time.Now()
		rs, err := x.Search(ctx, q, scope(i), opts)
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		hits += len(rs)
	}
	b.StopTimer()
	lat.report(b)
	after := x.CacheStats()
	b.ReportMetric(float64(after.TextLegs-before.TextLegs)/float64(b.N), "textcache-legs/op")
	b.ReportMetric(float64(after.VectorLegs-before.VectorLegs)/float64(b.N), "veccache-legs/op")
	b.ReportMetric(float64(st.load.Milliseconds()), "warm-ms")
	b.ReportMetric(float64(searchindex.TextCacheSize(x))/(1<<20), "textcache-MB")
	b.ReportMetric(float64(searchindex.VectorCacheSize(x))/(1<<20), "veccache-MB")
	b.ReportMetric(float64(hits)/float64(b.N), "results/op")
}
