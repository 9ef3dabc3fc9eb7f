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

	"github.com/engram-go/engram/internal/pgtest"
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
func timeAgentSearches(ctx context.Context, cfg config, x *search.Index, n int, queries []string, opts *search.Options, all bool) (latency, error) {
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
func agentSQLRows(ctx context.Context, cfg config, db *sql.DB, d search.Dialect, n, n0 int, queries []string,
	base map[string]latency, sec, engine, note string, r *report) error {
	x, err := search.NewIndex(ctx, db, d, nil, &search.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
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

// benchAgentsPostgres: the agents section on PostgreSQL (issue 35): N
// agents, each with 20 blocks, 200 archival entries and 200 messages, in
// one database of a throwaway server (or ENGRAM_BENCH_POSTGRES); rows for
// an agent's full-text search with the text cache (the default) and in
// SQL, per agent and SearchAll, each N against N=10. No vectors: KNN on
// PostgreSQL is pgvector's, measured in the postgres section.
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
		queries, err := loadAgentsPostgres(ctx, b.DB(), n)
		if err != nil {
			b.Close()
			return fmt.Errorf("agents: postgres load N=%d: %w", n, err)
		}
		load := time.Since(start)
		var size int64
		_ = b.DB().QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&size)
		note := fmt.Sprintf("PostgreSQL, fsync off, N=%d: load %v, database %.0f MB", n, load.Round(time.Millisecond), float64(size)/(1<<20))

		// The default: the text cache, warmed first.
		x, err := search.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &search.IndexOptions{Write: b.Write})
		if err != nil {
			b.Close()
			return err
		}
		// The lazy block index runs before the first search over blocks.
		if _, err := x.Search(ctx, "warm", search.Scope{All: true}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks)); err != nil {
			x.Close()
			b.Close()
			return err
		}
		textErr := x.WarmTextCache(ctx)
		cacheNote := note
		if textErr != nil {
			cacheNote += "; text cache: over its bound (SQL)"
		}
		for _, m := range []struct {
			name string
			all  bool
		}{{"postgres fts (archival), text cache", false}, {"postgres SearchAll fts, text cache", true}} {
			opts := search.NewOptions().Mode(search.FTS).Limit(10)
			if !m.all {
				opts = opts.ContentTypes(search.Archival)
			}
			l, err := timeAgentSearches(ctx, cfg, x, n, queries, opts, m.all)
			if err != nil {
				x.Close()
				b.Close()
				return fmt.Errorf("agents: postgres N=%d %s: %w", n, m.name, err)
			}
			if n == ns[0] {
				baseLat[m.name] = l
				continue
			}
			r.latency(sec, fmt.Sprintf("%s, N=%d vs N=%d", m.name, n, ns[0]), l, baseLat[m.name], cacheNote)
		}
		x.Close()
		err = agentSQLRows(ctx, cfg, b.DB(), b.SearchDialect(), n, ns[0], queries, baseLat, sec, "postgres", note, r)
		b.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// loadAgentsPostgres writes n agents' blocks, archival entries and
// messages (one multi-row INSERT of each per agent), indexes the blocks'
// text and refreshes the planner's statistics; it returns the timed
// queries.
func loadAgentsPostgres(ctx context.Context, db *sql.DB, n int) ([]string, error) {
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
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		for _, s := range []struct {
			q    string
			args []any
		}{
			{`INSERT INTO blocks (owner, label, rendered, description, block_type, permission, schema_json, char_limit, created_at, updated_at)
				SELECT v.o, v.l, v.r, '', 'working', 'ReadWrite', '{}', 5000, 0, 0 FROM (VALUES ` + rows(20, 3) + `) AS v(o, l, r)`, bargs},
			{`INSERT INTO archival (agent, content, created_at, valid_from)
				SELECT v.a, v.c, v.t::bigint, v.t::bigint FROM (VALUES ` + rows(200, 3) + `) AS v(a, c, t)`, aargs},
			{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				SELECT v.a, 'user', v.c, 'b1', v.s::bigint, v.t::bigint FROM (VALUES ` + rows(200, 4) + `) AS v(a, c, s, t)`, margs},
		} {
			if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
				_ = tx.Rollback()
				return nil, err
			}
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
	}
	for _, q := range []string{`ANALYZE blocks`, `ANALYZE archival`, `ANALYZE messages`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return c.queries(), nil
}
