package postgres_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// TestForeignKeysIndexed: the columns of every foreign key lead an index
// of their table, so deleting a referenced row finds the rows naming it
// by an index, not by a sequential scan inside the deleting transaction
// (an archival delete once scanned every agent's entries to clear
// superseded_by).
func TestForeignKeysIndexed(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	st, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var keys int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid
		JOIN pg_namespace n ON n.oid = r.relnamespace WHERE c.contype = 'f' AND n.nspname = current_schema()`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if keys < 10 {
		t.Fatalf("found %d foreign keys: the schema was not read", keys)
	}
	rows, err := db.QueryContext(ctx, `
		SELECT r.relname, c.conname FROM pg_constraint c
		JOIN pg_class r ON r.oid = c.conrelid
		JOIN pg_namespace n ON n.oid = r.relnamespace
		WHERE c.contype = 'f' AND n.nspname = current_schema()
		AND NOT EXISTS (
			SELECT 1 FROM pg_index i WHERE i.indrelid = c.conrelid
			AND (SELECT array_agg(k ORDER BY k) FROM unnest((i.indkey::int2[])[0:cardinality(c.conkey) - 1]) k)
			  = (SELECT array_agg(k ORDER BY k) FROM unnest(c.conkey) k))
		ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, key string
		if err := rows.Scan(&table, &key); err != nil {
			t.Fatal(err)
		}
		t.Errorf("%s (%s): no index leads with the foreign key's columns", table, key)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
