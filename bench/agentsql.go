package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// agentSQLModes are the rows of the SQL full-text legs: searches with the
// text cache off (IndexOptions.TextCacheBytes < 0), as a process runs them
// while its cache is not ready, over its bound, or for a tag or metadata
// filter. FTS only: the vector legs are the agents section's rows.
var agentSQLModes = []struct {
	name  string
	types []search.ContentType
	all   bool
}{
	{"SQL fts (archival)", []search.ContentType{search.Archival}, false},
	{"SQL fts, all types", nil, false},
	{"SQL fts, SearchAll", nil, true},
}

// timeAgentSearches times each query once per repeat as one agent's
// search (agents spread over the store) or as SearchAll; the median
// repeat's p50 and p95.
func timeAgentSearches(ctx context.Context, cfg config, x *searchindex.Index, n int, queries []string, opts *search.Options, all bool) (latency, error) {
	var ls []latency
	for range cfg.repeats {
		var ds []time.Duration
		for i, q := range queries {
			scope := search.Scope{Agent: agentName((i * 7919) % n)}
			if all {
				scope = search.Scope{All: true}
			}
			t := time.Now()
			if _, err := x.Search(ctx, q, scope, opts); err != nil {
				return latency{}, err
			}
			ds = append(ds, time.Since(t))
		}
		ls = append(ls, latencyOf(ds))
	}
	return medianLatency(ls), nil
}

// agentSQLRows adds the SQL-leg rows of one store of n agents: each mode's
// latency against the same mode at the section's first N (kept in base).
func agentSQLRows(ctx context.Context, cfg config, db *sql.DB, d driver.Dialect, n, n0 int, queries []string,
	base map[string]latency, sec, engine, note string, r *report) error {
	x, err := searchindex.NewIndex(ctx, db, d, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		return fmt.Errorf("agents: %s SQL index N=%d: %w", engine, n, err)
	}
	defer x.Close()
	for _, m := range agentSQLModes {
		opts := search.NewOptions().Mode(search.FTS).Limit(10)
		if m.types != nil {
			opts = opts.ContentTypes(m.types...)
		}
		l, err := timeAgentSearches(ctx, cfg, x, n, queries, opts, m.all)
		if err != nil {
			return fmt.Errorf("agents: %s N=%d %s: %w", engine, n, m.name, err)
		}
		name := engine + " " + m.name
		if n == n0 {
			base[name] = l
			continue
		}
		r.latency(sec, fmt.Sprintf("%s, N=%d vs N=%d", name, n, n0), l, base[name], note)
	}
	return nil
}

// agentCorpus is the agents section's text: a Zipf vocabulary of 5,000
// words, entries of 12 to 41 words.
type agentCorpus struct {
	r     *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

func newAgentCorpus(n int) *agentCorpus {
	r := rand.New(rand.NewPCG(35, uint64(n)))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	return &agentCorpus{r: r, vocab: vocab, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))}
}

func (c *agentCorpus) text() string {
	w := make([]string, 12+c.r.IntN(30))
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// queries are two words, one of them frequent, as the agents section's.
func (c *agentCorpus) queries() []string {
	var qs []string
	for i := range 60 {
		qs = append(qs, c.vocab[i%15]+" "+c.vocab[50+c.r.IntN(2000)])
	}
	return qs
}

// BenchAgentsPostgres: the agents section on PostgreSQL: N
// agents, each with 20 blocks, 200 archival entries and 200 messages
// (blocks and entries embedded offline, 384 dimensions, as on SQLite), in
// one database of a throwaway server (or ENGRAM_BENCH_POSTGRES); rows for
// an agent's full-text, vector, hybrid and default (all types) search and
// SearchAll, with the text cache (the default) and without it (every
// full-text leg in SQL), each N against N=10. KNN is pgvector's when the
// server has it (the note says), else the vector cache's.
func benchAgentsPostgres(ctx context.Context, cfg config, r *report) error {
	const sec = "agents"
	ns := []int{10, 100, 1000}
	switch cfg.name {
	case "smoke":
		ns = []int{10, 30}
	case "quick":
		ns = []int{10, 100}
	}
	base, stop, err := benchServer(false)
	if err != nil {
		return err
	}
	if base == nil {
		r.add(row{Section: sec, Comparison: "PostgreSQL agents", Note: "skipped: " + stop.why})
		return nil
	}
	defer stop.fn()
	baseLat := map[string]latency{}
	emb := search.NewOffline(384)
	for _, n := range ns {
		dsn, err := pgtest.DatabaseURL(base, fmt.Sprintf("engram_agents_%d_%d", os.Getpid(), n))
		if err != nil {
			return err
		}
		b, err := pgbackend.Open(ctx, dsn, nil)
		if err != nil {
			return fmt.Errorf("agents: postgres N=%d: %w", n, err)
		}
		start := time.Now()
		queries, err := loadAgentsPostgres(ctx, b, emb, n)
		if err != nil {
			b.Close()
			return fmt.Errorf("agents: postgres load N=%d: %w", n, err)
		}
		load := time.Since(start)
		var size int64
		_ = b.DB().QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&size)
		note := fmt.Sprintf("PostgreSQL, fsync off, N=%d: load %v, database %.0f MB", n, load.Round(time.Millisecond), float64(size)/(1<<20))
		for _, c := range []struct {
			name string
			text int64
		}{{"text cache", 0}, {"text cache off", -1}} {
			x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), emb, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: c.text})
			if err != nil {
				b.Close()
				return err
			}
			cacheNote := note + "; KNN: " + x.VectorEngine()
			if c.text == 0 {
				start := time.Now()
				err := x.WarmTextCache(ctx)
				st := x.CacheStats()
				cacheNote += fmt.Sprintf("; text cache: %s, warmed in %v", cacheState(err, st.TextPartial, st.TextBytes), time.Since(start).Round(time.Millisecond))
				if st.TextPartial {
					cacheNote += fmt.Sprintf(" (%d statistics passes)", st.TextStatsPasses)
				}
			}
			err = pgAgentRows(ctx, cfg, x, n, ns[0], queries, c.name, baseLat, cacheNote, r)
			if st := x.CacheStats(); c.text == 0 && st.TextPartial && err == nil {
				// What the searches left: the partitions held, and whether
				// anything dropped the statistics (the mix writes nothing).
				r.add(row{Section: sec, Comparison: fmt.Sprintf("postgres text cache after the searches, N=%d", n),
					Note: fmt.Sprintf("partial, %.1f MB held; %d statistics passes, %d dropped", float64(st.TextBytes)/(1<<20), st.TextStatsPasses, st.TextStatsDrops)})
			}
			x.Close()
			if err != nil {
				b.Close()
				return err
			}
		}
		b.Close()
	}
	return nil
}

// pgAgentRows adds one PostgreSQL index's rows (what) at n agents.
func pgAgentRows(ctx context.Context, cfg config, x *searchindex.Index, n, n0 int, queries []string, what string,
	base map[string]latency, note string, r *report) error {
	for _, m := range []struct {
		name  string
		mode  search.Mode
		types []search.ContentType
		all   bool
	}{
		{"fts (archival)", search.FTS, []search.ContentType{search.Archival}, false},
		{"vector (archival)", search.Vector, []search.ContentType{search.Archival}, false},
		{"hybrid (archival)", search.Hybrid, []search.ContentType{search.Archival}, false},
		{"fts, all types", search.FTS, nil, false},
		{"default (all types)", search.Auto, nil, false},
		{"SearchAll fts", search.FTS, nil, true},
	} {
		opts := search.NewOptions().Mode(m.mode).Limit(10)
		if m.types != nil {
			opts = opts.ContentTypes(m.types...)
		}
		l, err := timeAgentSearches(ctx, cfg, x, n, queries, opts, m.all)
		if err != nil {
			return fmt.Errorf("agents: postgres N=%d %s, %s: %w", n, m.name, what, err)
		}
		name := "postgres " + m.name + ", " + what
		if n == n0 {
			base[name] = l
			continue
		}
		r.latency("agents", fmt.Sprintf("%s, N=%d vs N=%d", name, n, n0), l, base[name], note)
	}
	return nil
}

// loadAgentsPostgres writes n agents' blocks, archival entries and
// messages (one multi-row INSERT of each per agent) and the vectors of
// the blocks and entries, indexes the blocks' text and refreshes the
// planner's statistics; it returns the timed queries.
func loadAgentsPostgres(ctx context.Context, b *pgbackend.Backend, emb *search.OfflineEmbedder, n int) ([]string, error) {
	db := b.DB()
	x, err := searchindex.NewIndex(ctx, db, b.SearchDialect(), emb, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		return nil, err
	}
	defer x.Close()
	// HNSW inserts one row at a time grew the load of 1,000 agents past
	// half an hour: the indexes are built once, after the rows.
	var hnsw []string
	if rs, err := db.QueryContext(ctx, `SELECT indexname FROM pg_indexes
		WHERE indexname IN ('vec_blocks_emb', 'vec_archival_emb') AND schemaname = current_schema()`); err == nil {
		for rs.Next() {
			var name string
			if err := rs.Scan(&name); err == nil {
				hnsw = append(hnsw, name)
			}
		}
		rs.Close()
	}
	for _, name := range hnsw {
		if _, err := db.ExecContext(ctx, `DROP INDEX `+name); err != nil {
			return nil, err
		}
	}
	c := newAgentCorpus(n)
	rows := func(k, cols int) string {
		one := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
		return strings.TrimSuffix(strings.Repeat(one+", ", k), ", ")
	}
	for a := range n {
		agent := agentName(a)
		var bargs, aargs, margs []any
		for i := range 20 {
			bargs = append(bargs, agent, "block-"+strconv.Itoa(i), c.text())
		}
		for i := range 200 {
			// Text, cast in the statement: VALUES rows of parameters are
			// typed text.
			aargs = append(aargs, agent, c.text(), strconv.Itoa(i))
			margs = append(margs, agent, c.text(), strconv.Itoa(i+1), strconv.Itoa(i))
		}
		err := b.Write(ctx, func(tx *sql.Tx) error {
			// Each INSERT returns its ids with the key of the row (a
			// block's label, an entry's created_at: its index), for the
			// vectors.
			var items [2][]searchindex.EmbeddingItem
			for i, s := range []struct {
				q    string
				args []any
				text int // the argument holding a row's embedded text; -1: none
			}{
				{`INSERT INTO blocks (owner, label, rendered, description, block_type, permission, schema_json, char_limit, created_at, updated_at)
					SELECT v.o, v.l, v.r, '', 'working', 'ReadWrite', '{}', 5000, 0, 0 FROM (VALUES ` + rows(20, 3) + `) AS v(o, l, r)
					RETURNING id, label`, bargs, 2},
				{`INSERT INTO archival (agent, content, created_at, valid_from)
					SELECT v.a, v.c, v.t::bigint, v.t::bigint FROM (VALUES ` + rows(200, 3) + `) AS v(a, c, t)
					RETURNING id, created_at::text`, aargs, 1},
				{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					SELECT v.a, 'user', v.c, 'b1', v.s::bigint, v.t::bigint FROM (VALUES ` + rows(200, 4) + `) AS v(a, c, s, t)`, margs, -1},
			} {
				if s.text < 0 {
					if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
						return err
					}
					continue
				}
				rs, err := tx.QueryContext(ctx, s.q, s.args...)
				if err != nil {
					return err
				}
				per := 3
				for rs.Next() {
					var id int64
					var key string
					if err := rs.Scan(&id, &key); err != nil {
						rs.Close()
						return err
					}
					j, err := strconv.Atoi(strings.TrimPrefix(key, "block-"))
					if err != nil {
						rs.Close()
						return err
					}
					text := s.args[j*per+s.text].(string)
					if i == 0 {
						text = search.BlockText(s.args[j*per+1].(string), "", text)
					}
					items[i] = append(items[i], searchindex.EmbeddingItem{ID: id, Owner: agent, Vector: emb.Vector(text)})
				}
				if err := rs.Close(); err != nil {
					return err
				}
			}
			if err := x.PutEmbeddings(ctx, tx, search.Blocks, items[0]); err != nil {
				return err
			}
			return x.PutEmbeddings(ctx, tx, search.Archival, items[1])
		})
		if err != nil {
			return nil, err
		}
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stmts := []string{`SET maintenance_work_mem = '1GB'`}
	for _, name := range hnsw {
		// The index memory/postgres makes (vectors.Create).
		stmts = append(stmts, fmt.Sprintf(`CREATE INDEX %s ON %s USING hnsw (emb vector_cosine_ops)`, name, strings.TrimSuffix(name, "_emb")))
	}
	stmts = append(stmts, `ANALYZE blocks`, `ANALYZE archival`, `ANALYZE messages`, `ANALYZE vec_blocks`, `ANALYZE vec_archival`)
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return c.queries(), nil
}
