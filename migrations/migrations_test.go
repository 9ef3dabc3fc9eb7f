package migrations_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/migrations"
)

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open(sqlitedriver.Name, "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestApplyFreshAndIdempotent(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	from, to, err := migrations.Apply(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if from != 0 || to != migrations.Latest() || to == 0 {
		t.Fatalf("Apply = %d..%d, want 0..%d", from, to, migrations.Latest())
	}
	from, to, err = migrations.Apply(ctx, db)
	if err != nil || from != to || to != migrations.Latest() {
		t.Fatalf("second Apply = %d..%d, %v", from, to, err)
	}
	var app int64
	if err := db.QueryRow("PRAGMA application_id").Scan(&app); err != nil || app != migrations.ApplicationID {
		t.Fatalf("application_id = %#x, %v", app, err)
	}
	for _, table := range []string{"blocks", "block_updates", "shares", "archival", "messages", "batches", "summaries", "proposals"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = ?", table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s missing (%d, %v)", table, n, err)
		}
	}
}

func TestApplyConcurrentOpeners(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	// Switching a new file to WAL needs an exclusive lock that SQLite does not
	// wait for; do it once up front as memory.Open does before migrating.
	if err := openDB(t, path).Ping(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := sql.Open(sqlitedriver.Name, "file:"+path+"?_busy_timeout=10000&_journal_mode=WAL")
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			_, _, err = migrations.Apply(ctx, db)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	v, err := migrations.Version(ctx, openDB(t, path))
	if err != nil || v != migrations.Latest() {
		t.Fatalf("version %d, %v", v, err)
	}
}

func TestRefusesNewerDatabase(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	_, _, err := migrations.Apply(ctx, db)
	if !errors.Is(err, migrations.ErrTooNew) {
		t.Fatalf("err = %v, want ErrTooNew", err)
	}
}

func TestRefusesForeignFile(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, err := db.Exec("PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := migrations.Apply(ctx, db); !errors.Is(err, migrations.ErrForeign) {
		t.Fatalf("err = %v, want ErrForeign", err)
	}
}
