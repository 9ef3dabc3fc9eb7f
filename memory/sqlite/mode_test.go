//go:build unix

package sqlite_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// A new database file and the -wal and -shm files SQLite
// makes beside it are readable by their owner only, whatever the umask
// allows (the driver alone created them 0644).
func TestNewDatabaseFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	b, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE t (x INTEGER)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(p), err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s is %v, want -rw-------", filepath.Base(p), perm)
		}
	}
}

// A store path that is a symbolic link to a file not made yet (a dotfile
// link into a synced directory) is a new database too: createPrivate's
// O_EXCL refused the link as existing, and SQLite then created the target
// 0644 (less the umask), readable by every local user.
func TestNewDatabaseThroughDanglingLinkIsPrivate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.db")
	path := filepath.Join(dir, "store.db")
	if err := os.Symlink(real, path); err != nil {
		t.Fatal(err)
	}
	b, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("the link's target is %v, want -rw-------", perm)
	}
}

// A "file:" URI names a new database as well: createPrivate left it to
// SQLite, which created it 0644.
func TestNewDatabaseByURIIsPrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "uri.db")
	b, err := sqlite.Open(ctx, "file:"+path+"?mode=rwc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s is %v, want -rw-------", path, perm)
	}
}
