package postgres

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// A session keeps the plans of the statements it runs again and again
// (PL/pgSQL's, prepared ones') until a table they read is next analyzed,
// and a plan made while the table was empty can read all of it (or all of
// an agent's rows, by the wrong index) on every run. Autovacuum analyzes
// a table once its changes pass a tenth of its size, but only when it
// comes round (a minute or more in a database that has just been made and
// is written fast), so the growth analyzer fills that gap: while the
// process writes, and for analyzeAfter after its last write (the
// server's counts of a table's rows lag its writes by up to 10 s), at most
// every analyzeEvery it analyzes each of engram's tables that its role
// owns and that holds more than half as many rows again as it held when
// last analyzed (plus analyzeMin), which every session's plans then
// follow. A table is so analyzed each time it grows by half (about 20
// times on its way to a million rows), not as it is updated; one
// process at a time does it (lockAnalyze), on a connection of its own
// made on first need.
const (
	analyzeEvery = 2 * time.Second
	analyzeAfter = 15 * time.Second
	analyzeMin   = 100
)

// analyzedTables are the tables whose plans follow their size.
var analyzedTables = []string{"archival", "messages", "blocks", "block_updates", "batches", "agent_usage", "search_text_log", "search_vec_log"}

type growthAnalyzer struct {
	cfg    *pgx.ConnConfig
	log    *slog.Logger
	wrote  atomic.Int64       // when the last write committed (Unix ns)
	cancel context.CancelFunc // stops it
	done   chan struct{}
}

func startGrowthAnalyzer(cfg *pgx.ConnConfig, log *slog.Logger) *growthAnalyzer {
	cfg = cfg.Copy()
	cfg.Tracer = nil // not one of the pool's statements
	ctx, cancel := context.WithCancel(context.Background())
	g := &growthAnalyzer{cfg: cfg, log: log, cancel: cancel, done: make(chan struct{})}
	go g.run(ctx)
	return g
}

// noteWrite notes a committed write (none before the analyzer starts:
// the migrations').
func (g *growthAnalyzer) noteWrite() {
	if g != nil {
		g.wrote.Store(time.Now().UnixNano())
	}
}

// close stops the analyzer, an ANALYZE under way included, and waits for
// it (again: at once).
func (g *growthAnalyzer) close() {
	g.cancel()
	<-g.done
}

func (g *growthAnalyzer) run(ctx context.Context) {
	defer close(g.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	t := time.NewTicker(analyzeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, g.wrote.Load())) > analyzeAfter {
			continue
		}
		if conn == nil {
			c, err := pgx.ConnectConfig(ctx, g.cfg)
			if err != nil {
				g.log.Debug("postgres: growth analyzer: connect", "err", err)
				continue
			}
			conn = c
		}
		if err := analyzeGrown(ctx, conn); err != nil {
			g.log.Debug("postgres: growth analyzer", "err", err)
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// analyzeGrown analyzes the tables of analyzedTables its role owns (an
// ANALYZE of another's table is skipped with a warning, every time) that
// hold half as many rows again as when last analyzed (plus analyzeMin),
// each in a transaction of its own, unless another process is at it.
func analyzeGrown(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
		WHERE s.schemaname = current_schema() AND s.relname = ANY($1) AND pg_has_role(c.relowner, 'USAGE')
			AND s.n_live_tup >= 1.5 * GREATEST(c.reltuples, 0) + $2`, analyzedTables, analyzeMin)
	if err != nil {
		return err
	}
	grown, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range grown {
		if err := analyzeOne(ctx, conn, t); err != nil {
			return err
		}
	}
	return nil
}

// analyzeOne analyzes table t unless another process is analyzing.
func analyzeOne(ctx context.Context, conn *pgx.Conn, t string) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, int64(lockAnalyze)).Scan(&mine); err != nil || !mine {
		return err
	}
	if _, err := tx.Exec(ctx, "ANALYZE "+pgx.Identifier{t}.Sanitize()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
