package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory/sqlite"
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

// latest is the version Migrate brings a database to.
func latest(t *testing.T) int {
	t.Helper()
	all, err := migrations.SQLite()
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}

func TestMigrateFreshAndIdempotent(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	from, to, err := sqlite.Migrate(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if from != 0 || to != latest(t) || to == 0 {
		t.Fatalf("Migrate = %d..%d, want 0..%d", from, to, latest(t))
	}
	from, to, err = sqlite.Migrate(ctx, db)
	if err != nil || from != to || to != latest(t) {
		t.Fatalf("second Migrate = %d..%d, %v", from, to, err)
	}
	var app int64
	if err := db.QueryRow("PRAGMA application_id").Scan(&app); err != nil || app != sqlite.ApplicationID {
		t.Fatalf("application_id = %#x, %v", app, err)
	}
	for _, table := range []string{"blocks", "block_updates", "shares", "archival", "messages", "batches", "summaries", "proposals"} {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = ?", table).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s missing (%d, %v)", table, n, err)
		}
	}
}

func TestMigrateConcurrentOpeners(t *testing.T) {
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
			_, _, err = sqlite.Migrate(ctx, db)
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
	v, err := sqlite.MigratedVersion(ctx, openDB(t, path))
	if err != nil || v != latest(t) {
		t.Fatalf("version %d, %v", v, err)
	}
}

func TestRefusesNewerDatabase(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	_, _, err := sqlite.Migrate(ctx, db)
	if !errors.Is(err, sqlite.ErrTooNew) {
		t.Fatalf("err = %v, want ErrTooNew", err)
	}
}

func TestRefusesForeignFile(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, err := db.Exec("PRAGMA application_id = 42"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sqlite.Migrate(ctx, db); !errors.Is(err, sqlite.ErrForeign) {
		t.Fatalf("err = %v, want ErrForeign", err)
	}
}

// Most SQLite files leave application_id at 0, so it alone does not tell
// another application's database from a new one: a file with tables of its
// own at user_version 0, or at a user_version another application keeps
// for its migrations, is not engram's (engram sets application_id with its
// first migration, always has). Such a file used to get engram's tables
// added to it (or, at user_version 3, migrations 0004 on applied to tables
// that were never there) and its application_id overwritten.
func TestRefusesAnotherApplicationsFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
	}{
		{"own tables", []string{"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)", "INSERT INTO users (name) VALUES ('x')"}},
		{"own tables named like engram's", []string{"CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT)"}},
		{"own user_version", []string{"CREATE TABLE users (id INTEGER PRIMARY KEY)", "PRAGMA user_version = 3"}},
		{"user_version alone", []string{"PRAGMA user_version = 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "other.db")
			db := openDB(t, path)
			for _, q := range tc.setup {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := sqlite.Migrate(ctx, db); !errors.Is(err, sqlite.ErrForeign) {
				t.Fatalf("Migrate: %v, want ErrForeign", err)
			}
			var app, n int
			if err := db.QueryRow("PRAGMA application_id").Scan(&app); err != nil || app != 0 {
				t.Fatalf("application_id = %#x, %v; want the file's 0", app, err)
			}
			if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'blocks'").Scan(&n); err != nil || n != 0 {
				t.Fatalf("engram's blocks table was added (%d, %v)", n, err)
			}
		})
	}
	// A new, empty file is engram's to make.
	db := openDB(t, filepath.Join(t.TempDir(), "new.db"))
	if _, to, err := sqlite.Migrate(context.Background(), db); err != nil || to != latest(t) {
		t.Fatalf("empty file: Migrate = %d, %v", to, err)
	}
}
