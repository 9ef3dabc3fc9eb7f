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
	seen := 0
	eachFunction(t, `p.proretset`, `p.prorows > 10`, func(name string, many bool) {
		seen++
		if many {
			t.Errorf("%s is taken to return more than 10 rows: say ROWS", name)
		}
	})
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
	seen := 0
	eachFunction(t, `p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql') AND p.provolatile <> 'i'
		AND p.prosrc ~* '\m(from|update|into)\M'`, `NOT COALESCE('enable_seqscan=off' = ANY(p.proconfig), false)`, func(name string, on bool) {
		seen++
		if on {
			t.Errorf("%s reads or writes a table but plans with sequential scans on: SET enable_seqscan = off", name)
		}
	})
	if seen < 20 {
		t.Fatalf("%d functions that read or write tables found, want the triggers' at least", seen)
	}
}

// eachFunction calls f with each engram function of a migrated database
// that where selects (over pg_proc p) and whether it is what bad says.
func eachFunction(t *testing.T, where, bad string, f func(name string, bad bool)) {
	t.Helper()
	ctx := context.Background()
	db := migratedDB(t)
	rows, err := db.QueryContext(ctx, `SELECT p.oid::regprocedure::text, `+bad+` FROM pg_proc p
		JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = current_schema() AND p.proname LIKE 'engram%' AND `+where)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var b bool
		if err := rows.Scan(&name, &b); err != nil {
			t.Fatal(err)
		}
		f(name, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
