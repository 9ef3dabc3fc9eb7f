package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// A database migrated by a newer engram is refused, not written to.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(16)})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE engram_schema SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := memory.Open(ctx, dsn, nil); !errors.Is(err, postgres.ErrNewerSchema) {
		t.Fatalf("open of a newer schema: err = %v", err)
	}
}

// Stores opening a fresh database at the same moment all open it: the
// schema table is made under the write lock, not raced for (it once failed
// with "type engram_schema already exists" in most rounds).
func TestConcurrentOpensOfFreshDatabase(t *testing.T) {
	srv := pgtest.Start(t)
	for round := range 4 {
		dsn := srv.NewDatabase(t)
		if round%2 == 1 {
			dsn = srv.NewRoleDatabase(t) // not a superuser: no pgvector, other errors
		}
		errs := make([]error, 6)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() {
				var o *memory.Options
				if i%2 == 0 {
					o = &memory.Options{Embedder: search.NewOffline(16)}
				}
				c, err := memory.Open(context.Background(), dsn, o)
				if err == nil {
					err = c.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, store %d: %v", round, i, err)
			}
		}
	}
}

// Every set-returning function of the schema says how many rows it
// returns (ROWS): taken to return 1,000, the archival neighbour functions
// had the planner hash a sequential scan of the whole archival table into
// each archival insert's trigger.
func TestSetReturningFunctionsSayTheirRows(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	rows, err := db.QueryContext(ctx, `SELECT p.oid::regprocedure::text, p.prorows FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = current_schema() AND p.proname LIKE 'engram%' AND p.proretset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name string
		var n float64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		seen++
		if n > 10 {
			t.Errorf("%s returns an estimated %v rows: say ROWS", name, n)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen < 5 {
		t.Fatalf("%d set-returning functions found, want the archival neighbour functions at least", seen)
	}
}

// Every engram PL/pgSQL function that reads or writes a table plans with
// sequential scans off (migration 0042), so that a plan it keeps, made
// while a table was small, still uses the index once the table has grown
// (TestWritesPlannedOnEmptyTablesReadNoTableWhole). A function replaced
// by CREATE OR REPLACE loses the setting unless it says it again.
func TestTableFunctionsPlanWithIndexes(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	rows, err := db.QueryContext(ctx, `SELECT p.oid::regprocedure::text, COALESCE('enable_seqscan=off' = ANY(p.proconfig), false)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace JOIN pg_language l ON l.oid = p.prolang
		WHERE n.nspname = current_schema() AND p.proname LIKE 'engram%' AND l.lanname = 'plpgsql' AND p.provolatile <> 'i'
			AND p.prosrc ~* '\m(from|update|into)\M'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name string
		var off bool
		if err := rows.Scan(&name, &off); err != nil {
			t.Fatal(err)
		}
		seen++
		if !off {
			t.Errorf("%s reads or writes a table but plans with sequential scans on: SET enable_seqscan = off", name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen < 20 {
		t.Fatalf("%d functions that read or write tables found, want the triggers' at least", seen)
	}
}
