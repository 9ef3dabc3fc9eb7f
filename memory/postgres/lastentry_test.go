package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// An append to a batch reads the batch's highest seq from the last entry
// of the (agent, batch_id, seq) index, however long the batch and
// whatever the planner guesses of it. Asked as MAX(seq) over the batch,
// the planner weighed reading the whole batch against reading its last
// entry by its estimate of the batch's size, and where it took the batch
// for a row or two (a table never analyzed; a batch among many, whose
// share of the table the planner multiplies by its agent's) every append
// read every message of the batch: 70 buffers per append at 300 messages.
func TestMessageAppendReadsOneEntryOfItsBatch(t *testing.T) {
	ctx := context.Background()
	db, dsn := migratedDSN(t)
	dbname := trackStatements(t, db)
	// A long batch written without the store: the table is never analyzed.
	const long = 2000
	for _, q := range []string{
		`INSERT INTO batches (agent, batch_id, created_at) VALUES ('agent-0', 'long', 0)`,
		fmt.Sprintf(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			SELECT 'agent-0', 'user', 'line ' || g, 'long', g, 0 FROM generate_series(1, %d) g`, long),
		`SELECT pg_stat_statements_reset()`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	const appends = 10
	for i := range appends {
		m, err := st.Agent("agent-0").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: fmt.Sprint("one more ", i), BatchID: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if want := long + 1 + i; m.Seq != want {
			t.Fatalf("append %d: seq %d, want %d", i, m.Seq, want)
		}
	}
	st.Close()
	query, calls, blocks := statementBuffers(t, db, dbname, "%FROM batches WHERE agent%")
	if calls != appends {
		t.Fatalf("%d runs of %q, want %d", calls, query, appends)
	}
	// The batch's row and the index's last entry, and the first run's
	// planning (the catalogs): a few dozen buffers, against thousands.
	if per := float64(blocks) / float64(calls); per > 40 {
		t.Errorf("%.0f buffers per append in a batch of %d, want at most 40: %s", per, long, strings.Join(strings.Fields(query), " "))
	}
}

// trackStatements has pg_stat_statements count every statement in db's
// database, nested ones and their plans included, and returns the
// database's name. A server that does not preload the extension is
// missing (the test cluster preloads it when its lib directory holds it).
func trackStatements(t *testing.T, db *sql.DB) string {
	t.Helper()
	ctx := context.Background()
	var preload string
	if err := db.QueryRowContext(ctx, `SELECT current_setting('shared_preload_libraries')`).Scan(&preload); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(preload, "pg_stat_statements") {
		testenv.Missing(t, "a server that preloads pg_stat_statements (the test cluster does when its lib directory holds it)")
	}
	var dbname string
	if err := db.QueryRowContext(ctx, `SELECT current_database()`).Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`,
		`ALTER DATABASE "` + dbname + `" SET pg_stat_statements.track = 'all'`,
		`ALTER DATABASE "` + dbname + `" SET pg_stat_statements.track_planning = on`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dbname
}

// statementBuffers returns the one top-level statement run in database
// dbname whose text (as pg_stat_statements keeps it: constants as $n) is
// LIKE like, its runs and the buffers they read. The test fails unless
// exactly one statement matches.
func statementBuffers(t *testing.T, db *sql.DB, dbname, like string) (query string, calls, blocks int64) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT s.query, s.calls, s.shared_blks_hit + s.shared_blks_read FROM pg_stat_statements s
		JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 AND s.toplevel AND s.query LIKE $2`, dbname, like)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for ; rows.Next(); n++ {
		if err := rows.Scan(&query, &calls, &blocks); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d statements like %q run, want 1", n, like)
	}
	return query, calls, blocks
}
