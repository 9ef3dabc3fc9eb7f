package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/migrations"
)

// Migration 0049 drops archival_fts only where archival_agent_fts is a
// valid index. 0015's comment tells an operator whose server lacked
// btree_gin to make the index by hand later; on a live table that is
// CREATE INDEX CONCURRENTLY, which, cancelled or failed, leaves an
// invalid index of that name, never used by the planner. Dropping
// archival_fts beside it would leave every full-text search of archival
// entries reading the whole table. (The failed build is simulated by
// marking the index invalid.)
func TestDropKeepsFTSIndexBesideInvalidMulticolumn(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	all, err := migrations.Postgres()
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	for i, m := range all {
		if strings.HasPrefix(m.Name, "0049_") {
			n = i
		}
	}
	if n < 0 {
		t.Skip("no migration 0049")
	}
	for _, m := range all[:n] {
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	var ext bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE indexname = 'archival_agent_fts')`).Scan(&ext); err != nil {
		t.Fatal(err)
	}
	if !ext {
		t.Skip("no btree_gin: 0015 made no archival_agent_fts")
	}
	for _, q := range []string{
		migrations.PostgresVersionTable,
		fmt.Sprintf(`INSERT INTO engram_schema (version) VALUES (%d)`, n),
		// What a failed CREATE INDEX CONCURRENTLY archival_agent_fts leaves.
		`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'archival_agent_fts'::regclass`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatalf("open (migrate): %v", err)
	}
	s.Close()
	var valid []string
	rows, err := db.QueryContext(ctx, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_class t ON t.oid = i.indrelid
		WHERE t.relname = 'archival' AND i.indisvalid AND pg_get_indexdef(i.indexrelid) LIKE '%USING gin%fts%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		valid = append(valid, name)
	}
	rows.Close()
	if len(valid) == 0 {
		t.Fatal("after 0049 the archival table has no valid GIN index over fts: archival_fts was dropped beside an invalid archival_agent_fts")
	}
}
