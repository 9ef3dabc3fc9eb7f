package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// A session keeps the plans of the statements it runs again and again
// (the triggers' and engram's prepared statements), and in a new database
// its first writes plan on empty tables: a plan that reads the whole
// table, or the whole of an agent's rows by the wrong index, then runs on
// every write until the table is analyzed. 8,000 archival inserts into a
// new database ran at 147/s instead of 2,000/s. Here every plan is
// generic (plan_cache_mode on the store's connections) and made on empty
// tables, and autovacuum is off: the triggers' own functions must plan
// with the index, and the store's growth analyzer must analyze the
// tables once they have grown, so that the plans made again follow. A
// write must then read a bounded number of rows of the tables it writes
// (seq_tup_read + idx_tup_fetch), not a number that grows with them.
func TestWritesPlannedOnEmptyTablesReadNoTableWhole(t *testing.T) {
	ctx := context.Background()
	db, dsn := migratedDSN(t)
	tables := []string{"archival", "messages", "blocks", "block_updates"}
	for _, tb := range tables {
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+tb+` SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("plan_cache_mode", "force_generic_plan")
	u.RawQuery = q.Encode()
	st, err := memory.Open(ctx, u.String(), &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const agents = 2
	ids := make([][]int64, agents) // each agent's stream entries
	write := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			for a := range agents {
				ag := st.Agent(fmt.Sprint("agent-", a))
				if i == 0 {
					if _, err := ag.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
						t.Fatal(err)
					}
				}
				line := fmt.Sprintf("note %d of agent %d: the tide turned at the harbour", i, a)
				e, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: line})
				if err != nil {
					t.Fatal(err)
				}
				ids[a] = append(ids[a], e.ID)
				if _, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: line, Metadata: map[string]any{"conversation": "c1"}}); err != nil {
					t.Fatal(err)
				}
				if _, err := ag.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: line, BatchID: "session"}); err != nil {
					t.Fatal(err)
				}
				if err := ag.Block("notes").Append(ctx, line+"\n"); err != nil {
					t.Fatal(err)
				}
				if i%4 == 3 { // and the entry before, rewritten or deleted
					id := ids[a][len(ids[a])-2]
					if i%8 == 3 {
						_, err = ag.Archival().Supersede(ctx, id, memory.ArchivalEntry{Content: fmt.Sprint("rewritten ", line)})
					} else {
						err = ag.Archival().Delete(ctx, id)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	// The plans are made on empty tables; the tables grow, and the
	// analyzer analyzes the two that grow most after the writes stop.
	write(0, 120)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname IN ('archival', 'messages') AND last_analyze IS NOT NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("archival and messages not analyzed within 30 s of growing from empty")
		}
		time.Sleep(100 * time.Millisecond) // (no write: the analyzer looks again after the last)
	}
	write(120, 900)
	st.Close()
	awaitCountsReported(t, db)
	for _, tb := range tables {
		var read, written int64
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0), n_tup_ins + n_tup_upd + n_tup_del
			FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1`, tb).Scan(&read, &written); err != nil {
			t.Fatalf("%s: %v", tb, err)
		}
		t.Logf("%s: %d rows written, %d read", tb, written, read)
		// An append writes three message rows (its own, and the two
		// before it re-indexed) and reads about 53: 18 a row written
		// here, against 750 and growing with plans kept from empty
		// tables.
		bound := int64(40)
		if tb == "messages" {
			bound = 80
		}
		if read > bound*written {
			t.Errorf("%s: %d rows read for %d written: writes read more as the table grows", tb, read, written)
		}
	}
}

// A message's tsvector holds its neighbours' texts, found in its batch by
// place. The planner takes an (agent, batch) pair to hold a row or two
// (the agent's share of the table times the batch's, as if a batch could
// belong to any agent), and so, finding the neighbours by the pair and
// seq IN (four places), scanned the pair's range rather than probing the
// unique index four times: each append read its whole batch five times
// over (6,998 rows an append to a batch of 1,100). Appends to a long
// batch among many short ones must read a few rows each, however long
// the batch (the places' range bounds the scan).
func TestMessageAppendReadsNotItsWholeBatch(t *testing.T) {
	ctx := context.Background()
	db, dsn := migratedDSN(t)
	writer, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { writer.Close() }() // the last one opened
	for _, q := range []string{
		// 20 agents' 600 batches of 10, one batch of 1,000, analyzed.
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			SELECT 'agent-' || (g % 20), 'user', 'note ' || g, 's' || (g % 600), g, g FROM generate_series(1, 6000) g`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			SELECT 'agent-3', 'user', 'long ' || g, 'long', g, g FROM generate_series(1, 1000) g`,
		`ANALYZE messages`,
	} {
		if _, err := writer.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// Rows of messages read, and inserted (that the counts are kept).
	read := func() (n, inserted int64) {
		t.Helper()
		writer.Close()
		awaitCountsReported(t, db)
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0), n_tup_ins
			FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'messages'`).Scan(&n, &inserted); err != nil {
			t.Fatal(err)
		}
		if writer, err = sql.Open("pgx", dsn); err != nil {
			t.Fatal(err)
		}
		return n, inserted
	}
	for _, tc := range []struct{ name, agent, batch string }{
		{"the long batch", "agent-3", "long"},
		{"a new batch", "agent-5", "new"},
	} {
		before, had := read()
		const appends = 100
		for i := range appends {
			if _, err := writer.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES ($1, 'user', $2, $3, $4, 0)`, tc.agent, fmt.Sprint("appended ", i), tc.batch, 2000+i); err != nil {
				t.Fatal(err)
			}
		}
		after, has := read()
		if has-had != appends {
			t.Fatalf("%s: the server counted %d rows inserted, not %d: its counts say nothing", tc.name, has-had, appends)
		}
		per := (after - before) / appends
		t.Logf("%s: %d rows read an append", tc.name, per)
		if per > 60 {
			t.Errorf("%s: an append read %d rows of messages: its batch, not its neighbours", tc.name, per)
		}
	}
}

// awaitCountsReported waits until db's connection is the only one to its
// database: a backend's counters reach the shared statistics when it
// exits, so the writers' connections must be closed first.
func awaitCountsReported(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var others int
		if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends still connected 30 s after their store closed", others)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
