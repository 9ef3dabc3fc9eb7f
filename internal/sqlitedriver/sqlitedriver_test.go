package sqlitedriver_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
)

// TestDriver: whichever driver the build chose opens files, has FTS5 and
// vec0, and its errors classify as the store expects.
func TestDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	db, err := sql.Open(sqlitedriver.Name, path+"?_busy_timeout=0&_journal_mode=WAL")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT vec_version()`).Scan(&v); err != nil || v == "" {
		t.Fatalf("vec0 missing under %s: %q %v", sqlitedriver.Module, v, err)
	}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE f USING fts5(body)`); err != nil {
		t.Fatalf("FTS5 missing under %s: %v", sqlitedriver.Module, err)
	}
	if _, err := db.Exec(`CREATE TABLE u (k TEXT PRIMARY KEY, v TEXT UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO u VALUES ('a', 'x')`); err != nil {
		t.Fatal(err)
	}
	_, pk := db.Exec(`INSERT INTO u VALUES ('a', 'y')`)
	_, uniq := db.Exec(`INSERT INTO u VALUES ('b', 'x')`)
	for name, err := range map[string]error{"primary key": pk, "unique": uniq} {
		if !sqlitedriver.IsConflict(err) || sqlitedriver.IsBusy(err) {
			t.Errorf("%s violation %v: IsConflict %v, IsBusy %v", name, err, sqlitedriver.IsConflict(err), sqlitedriver.IsBusy(err))
		}
	}

	// A second connection cannot take the write lock another one holds.
	holder, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	if _, err := holder.Exec(`INSERT INTO u VALUES ('c', 'z')`); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(sqlitedriver.Name, path+"?_busy_timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, busy := other.Exec(`INSERT INTO u VALUES ('d', 'w')`)
	if !sqlitedriver.IsBusy(busy) || sqlitedriver.IsConflict(busy) {
		t.Errorf("write while another connection holds the lock: %v: IsBusy %v", busy, sqlitedriver.IsBusy(busy))
	}
	if sqlitedriver.IsBusy(nil) || sqlitedriver.IsConflict(nil) {
		t.Error("nil classified as an error")
	}
}
