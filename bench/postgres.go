package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	_ "github.com/engram-go/engram/memory/postgres" // memory.Open of postgres:// URLs
	"github.com/engram-go/engram/search"
)

// benchPostgres: the PostgreSQL backend beside SQLite, on one machine.
// The server is ENGRAM_BENCH_POSTGRES (a URL whose user may create
// databases) or a throwaway cluster started here with fsync on (unix
// socket, loopback: no network in the figures). Rows: append p50 and
// 8-writer throughput against a bare INSERT on the same server, and
// Cranfield full-text p50 and nDCG@10 against engram on SQLite.
func benchPostgres(ctx context.Context, cfg config, cranDir, tmp string, r *report) error {
	const sec = "postgres"
	base, stop, err := benchServer(true)
	if err != nil {
		return err
	}
	if base == nil {
		r.add(row{Section: sec, Comparison: "PostgreSQL backend", Note: "skipped: " + stop.why})
		return nil
	}
	defer stop.fn()
	seq := 0
	newDB := func() (string, error) {
		seq++
		return pgtest.DatabaseURL(base, fmt.Sprintf("engram_bench_%d_%d", os.Getpid(), seq))
	}

	// Append: serial p50 and concurrent durable throughput.
	dsn, err := newDB()
	if err != nil {
		return err
	}
	st, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	bareDSN, err := newDB()
	if err != nil {
		return err
	}
	bare, err := sql.Open("pgx", bareDSN)
	if err != nil {
		return err
	}
	defer bare.Close()
	if _, err := bare.ExecContext(ctx, `CREATE TABLE u (block_id BIGINT, seq BIGINT, data BYTEA, PRIMARY KEY (block_id, seq))`); err != nil {
		return err
	}
	insert := func(block, seq int, data []byte) error {
		_, err := bare.ExecContext(ctx, `INSERT INTO u VALUES ($1, $2, $3)`, block, seq, data)
		return err
	}
	var eLat, bLat []latency
	blockBase := 0
	for rep := range cfg.repeats {
		p, err := newAppendPlan(fmt.Sprintf("pg%d", rep), cfg.appendOps, uint64(100+rep))
		if err != nil {
			return err
		}
		for _, l := range p.labels {
			if _, err := st.Agent("agent").CreateBlock(ctx, memory.BlockSpec{Label: l}); err != nil {
				return err
			}
		}
		ds := make([]time.Duration, len(p.ops))
		for i, op := range p.ops {
			t := time.Now()
			if err := st.Agent("agent").Block(p.labels[op.block]).Append(ctx, op.text); err != nil {
				return fmt.Errorf("engram append %d: %w", i, err)
			}
			ds[i] = time.Since(t)
		}
		eLat = append(eLat, latencyOf(ds))
		seqs := make([]int, len(p.labels))
		for i, op := range p.ops {
			seqs[op.block]++
			t := time.Now()
			if err := insert(blockBase+op.block, seqs[op.block], op.data); err != nil {
				return fmt.Errorf("bare insert %d: %w", i, err)
			}
			ds[i] = time.Since(t)
		}
		bLat = append(bLat, latencyOf(ds))
		blockBase += len(p.labels)
	}
	r.latency(sec, "PostgreSQL append p50: engram AppendToBlock vs bare INSERT (same server)", medianLatency(eLat), medianLatency(bLat),
		"unix socket, fsync on; engram: lock + row read + update insert + rendered update + commit")

	w := cfg.appendWriters
	eC, bC, err := concurrentAppends(ctx, cfg, st, "agent", "pgc", blockBase, insert)
	if err != nil {
		return err
	}
	r.compare(sec, fmt.Sprintf("PostgreSQL append durable throughput, %d writers: engram vs bare INSERT", w), median(eC), median(bC), unitOps, "higher",
		"one process, one agent's blocks; writes to different blocks run in parallel (each locks its block), as the bare inserts do")

	if err := benchPostgresBuild(ctx, cfg, newDB, tmp, r); err != nil {
		return err
	}

	// Cranfield full text: PostgreSQL vs SQLite, both through the store.
	if cranDir == "" {
		r.add(row{Section: sec, Comparison: "PostgreSQL Cranfield", Note: "skipped: collection not found"})
		return nil
	}
	c, docs, queries, qrels, err := cranfieldSet(cfg, cranDir)
	if err != nil {
		return err
	}
	pgDSN, err := newDB()
	if err != nil {
		return err
	}
	type system struct {
		lat  []time.Duration
		ndcg float64
	}
	measure := func(s *memory.Store, toDoc map[int64]string) (*system, error) {
		sys := &system{}
		runs := map[string][]string{}
		for _, q := range queries {
			rs, err := s.Agent(cranAgent).Archival().Search(ctx, q.Text, search.NewOptions().Mode(search.FTS).Limit(100))
			if err != nil && !errors.Is(err, search.ErrInvalidQuery) {
				return nil, err
			}
			for _, x := range rs {
				runs[strconv.FormatInt(q.ID, 10)] = append(runs[strconv.FormatInt(q.ID, 10)], toDoc[x.ID])
			}
		}
		sys.ndcg = eval.Evaluate(runs, qrels).NDCG10
		for range cfg.repeats {
			for _, q := range queries {
				t := time.Now()
				if _, err := s.Agent(cranAgent).Archival().Search(ctx, q.Text, search.NewOptions().Mode(search.FTS).Limit(10)); err != nil && !errors.Is(err, search.ErrInvalidQuery) {
					return nil, err
				}
				sys.lat = append(sys.lat, time.Since(t))
			}
		}
		return sys, nil
	}
	// [target][0]: ranking in SQL (TextCacheBytes -1: tsvector / FTS5);
	// [target][1]: default options, the in-process text cache (warmed).
	var systems [2][2]*system
	for i, target := range []string{pgDSN, filepath.Join(tmp, "pg-cmp.db")} {
		s, err := memory.Open(ctx, target, &memory.Options{TextCacheBytes: -1})
		if err != nil {
			return err
		}
		defer s.Close()
		entries := make([]memory.ArchivalEntry, len(docs))
		for i, d := range docs {
			entries[i] = memory.ArchivalEntry{Content: d.Title + "\n" + d.Body}
		}
		stored, err := s.Agent(cranAgent).Archival().InsertBatch(ctx, entries, nil)
		if err != nil {
			return err
		}
		toDoc := map[int64]string{}
		for i, e := range stored {
			toDoc[e.ID] = strconv.FormatInt(docs[i].ID, 10)
		}
		if systems[i][0], err = measure(s, toDoc); err != nil {
			return err
		}
		cached, err := memory.Open(ctx, target, nil)
		if err != nil {
			return err
		}
		defer cached.Close()
		if err := storeaccess.Index(cached).WarmTextCache(ctx); err != nil {
			return err
		}
		if systems[i][1], err = measure(cached, toDoc); err != nil {
			return err
		}
	}
	pg, lite := systems[0], systems[1]
	r.latency(sec, "PostgreSQL Cranfield FTS p50, limit 10, text cache (default): PostgreSQL vs SQLite", latencyOf(pg[1].lat), latencyOf(lite[1].lat),
		fmt.Sprintf("%d docs, %d queries; both ranked in process with FTS5's BM25 (PostgreSQL reads the change log in a round trip per search)", len(docs), len(queries)))
	r.compare(sec, "PostgreSQL Cranfield FTS nDCG@10, text cache: PostgreSQL vs SQLite", pg[1].ndcg, lite[1].ndcg, "", "higher", "quality at limit 100")
	r.latency(sec, "PostgreSQL Cranfield FTS p50, limit 10, ranked in SQL: PostgreSQL vs SQLite", latencyOf(pg[0].lat), latencyOf(lite[0].lat),
		fmt.Sprintf("TextCacheBytes -1: IDF-weighted ts_rank vs FTS5 BM25 (PostgreSQL's text cache: %.3f ms)", latencyOf(pg[1].lat).p50))
	r.compare(sec, "PostgreSQL Cranfield FTS nDCG@10, ranked in SQL: PostgreSQL vs SQLite", pg[0].ndcg, lite[0].ndcg, "", "higher", "quality at limit 100")
	return benchPostgresVector(ctx, cfg, c, docs, queries, newDB, r)
}

// benchPostgresVector: Cranfield vector search on PostgreSQL, pgvector's
// HNSW against the in-process KNN over the same rows (two stores on one
// database), with the shipped vectors.
func benchPostgresVector(ctx context.Context, cfg config, c *eval.Cranfield, docs []eval.CranfieldDoc, queries []eval.CranfieldQuery, newDB func() (string, error), r *report) error {
	const sec = "postgres"
	emb := &fixedEmbedder{dims: 512, vecs: map[string][]float32{}}
	for _, d := range docs {
		emb.vecs[d.Title+"\n"+d.Body] = c.DocVectors[d.ID]
	}
	for _, q := range queries {
		emb.vecs[q.Text] = c.QueryVectors[q.ID]
	}
	dsn, err := newDB()
	if err != nil {
		return err
	}
	pgv, err := memory.Open(ctx, dsn, &memory.Options{Embedder: emb})
	if err != nil {
		return err
	}
	defer pgv.Close()
	if storeaccess.Index(pgv).VectorEngine() != "pgvector" {
		r.add(row{Section: sec, Comparison: "PostgreSQL Cranfield vector: pgvector vs in-process",
			Note: "skipped: " + storeaccess.Index(pgv).VectorEngineReason()})
		return nil
	}
	entries := make([]memory.ArchivalEntry, len(docs))
	for i, d := range docs {
		entries[i] = memory.ArchivalEntry{Content: d.Title + "\n" + d.Body}
	}
	if _, err := pgv.Agent(cranAgent).Archival().InsertBatch(ctx, entries, nil); err != nil {
		return err
	}
	// Planner statistics as autovacuum keeps them in a running database
	// (its first round would come up to a minute after the load).
	if _, err := storeaccess.Backend(pgv).DB().ExecContext(ctx, `ANALYZE vec_archival`); err != nil {
		return err
	}
	inproc, err := memory.Open(ctx, dsn, &memory.Options{Embedder: emb, VectorCacheBytes: 1 << 30})
	if err != nil {
		return err
	}
	defer inproc.Close()
	var lat [2][]time.Duration
	for i, st := range []*memory.Store{pgv, inproc} {
		// One untimed pass: the in-process side loads its vectors.
		for pass := 0; pass <= cfg.repeats; pass++ {
			for _, q := range queries {
				t := time.Now()
				if _, err := st.Agent(cranAgent).Archival().Search(ctx, q.Text, search.NewOptions().Mode(search.Vector).Limit(10)); err != nil {
					return err
				}
				if pass > 0 {
					lat[i] = append(lat[i], time.Since(t))
				}
			}
		}
	}
	r.latency(sec, "PostgreSQL Cranfield vector p50, limit 10: pgvector HNSW vs in-process KNN", latencyOf(lat[0]), latencyOf(lat[1]),
		fmt.Sprintf("%d docs × 512 dims, table analyzed; both fetch rows from PostgreSQL", len(docs)))
	return nil
}

// benchPostgresBuild: warm build (20 blocks + 500 messages) and cold open +
// first build (cfg.buildColdBlocks blocks), PostgreSQL against SQLite.
func benchPostgresBuild(ctx context.Context, cfg config, newDB func() (string, error), tmp string, r *report) error {
	const sec = "postgres"
	pgWarm, err := newDB()
	if err != nil {
		return err
	}
	pgCold, err := newDB()
	if err != nil {
		return err
	}
	targets := [2][2]string{{pgWarm, pgCold}, {filepath.Join(tmp, "pgcmp-warm.db"), filepath.Join(tmp, "pgcmp-cold.db")}}
	var warm, cold [2]float64
	for i, tg := range targets {
		st, err := memory.Open(ctx, tg[0], nil)
		if err != nil {
			return err
		}
		if err := fillBuildStore(ctx, st, 20); err != nil {
			st.Close()
			return err
		}
		b := newBuilder(st, builder.NewCache(), true)
		if _, err := b.Build(ctx); err != nil {
			st.Close()
			return err
		}
		var ts []float64
		for range cfg.repeats {
			t0 := time.Now()
			n := max(1, cfg.buildIters/10)
			for range n {
				if _, err := b.Build(ctx); err != nil {
					st.Close()
					return err
				}
			}
			ts = append(ts, ms(time.Since(t0))/float64(n))
		}
		st.Close()
		warm[i] = median(ts)

		cst, err := memory.Open(ctx, tg[1], nil)
		if err != nil {
			return err
		}
		if err := fillBuildStore(ctx, cst, cfg.buildColdBlocks); err != nil {
			cst.Close()
			return err
		}
		cst.Close()
		ts = ts[:0]
		for range cfg.repeats {
			t0 := time.Now()
			st, err := memory.Open(ctx, tg[1], nil)
			if err != nil {
				return err
			}
			_, err = newBuilder(st, builder.NewCache(), false).Build(ctx)
			st.Close()
			if err != nil {
				return err
			}
			ts = append(ts, ms(time.Since(t0)))
		}
		cold[i] = median(ts)
	}
	r.time(sec, "PostgreSQL warm build, 20 blocks + 500 msgs: PostgreSQL vs SQLite", warm[0], warm[1],
		"cache hits need no query on PostgreSQL (LISTEN/NOTIFY); listings and messages are queries on both")
	r.time(sec, fmt.Sprintf("PostgreSQL cold open + first build, %s blocks: PostgreSQL vs SQLite", humanCount(cfg.buildColdBlocks)), cold[0], cold[1],
		"PostgreSQL's open includes connecting, the migration check and starting the listener")
	return nil
}

// serverStop stops a throwaway server (fn), or says why there is none.
type serverStop struct {
	fn  func()
	why string
}

// benchServer is the PostgreSQL server a section measures on:
// ENGRAM_BENCH_POSTGRES (a URL whose user may create databases), or a
// throwaway cluster started here (fsync as asked). A nil URL and no error
// mean neither is there (stop.why says so); the section is skipped.
func benchServer(fsync bool) (*url.URL, serverStop, error) {
	if dsn := os.Getenv("ENGRAM_BENCH_POSTGRES"); dsn != "" {
		u, err := url.Parse(dsn)
		return u, serverStop{fn: func() {}}, err
	}
	u, stop, err := pgtest.Launch(fsync)
	if err != nil {
		return nil, serverStop{why: "no server (set ENGRAM_BENCH_POSTGRES or install PostgreSQL): " + err.Error()}, nil
	}
	return u, serverStop{fn: stop}, nil
}
