package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// bigWrite stores n bytes (n/4096 WAL frames and more) in one write.
func bigWrite(t *testing.T, b *Backend, n int) {
	t.Helper()
	err := b.Write(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`CREATE TABLE IF NOT EXISTS big (v BLOB)`); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO big (v) VALUES (randomblob(?))`, n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A commit that takes the WAL past SQLite's checkpoint size returns
// without copying the WAL back itself: the writer whose commit crossed
// the line would otherwise pay for every page the others wrote.
func TestCommitDoesNotCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	b, err := open(context.Background(), path, nil, false) // no checkpointer
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before := fileSize(t, path)
	bigWrite(t, b, 3*checkpointFrames*4096) // three times the checkpoint size
	if got := fileSize(t, path); got > before+1<<20 {
		t.Fatalf("the database file grew from %d to %d bytes in the commit: the committing writer checkpointed", before, got)
	}
	var n int
	if err := b.Write(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	if n != writerAutoCheckpoint {
		t.Fatalf("writer's wal_autocheckpoint = %d, want the backstop %d", n, writerAutoCheckpoint)
	}
}

// The checkpointer copies the WAL back after a commit took it past
// checkpointFrames.
func TestCheckpointerCopiesWALBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	b, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n = 3 * checkpointFrames * 4096
	bigWrite(t, b, n)
	deadline := time.Now().Add(20 * time.Second)
	for fileSize(t, path) < n || b.ckpt.runs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("database file %d bytes after 20s, checkpoints run %d: the WAL was not copied back", fileSize(t, path), b.ckpt.runs.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A small commit does not run another: the WAL holds few frames past
	// the checkpoint.
	runs := b.ckpt.runs.Load()
	for range 10 {
		bigWrite(t, b, 100)
	}
	b.ckpt.close()
	if got := b.ckpt.runs.Load(); got != runs {
		t.Fatalf("%d checkpoints after 10 small commits, want none", got-runs)
	}
}

// walPending reads the frames past the last checkpoint as SQLite counts
// them.
func TestWALPending(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	b, err := open(context.Background(), path, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bigWrite(t, b, 200*4096)
	shm, err := os.Open(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	pending, ok := walPending(shm)
	if !ok || pending < 200 {
		t.Fatalf("walPending = %d, %v; want ≥ 200 frames", pending, ok)
	}
	var busy, log, done int
	if err := b.rdb.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	if log != int(pending) || done != log {
		t.Fatalf("walPending %d; the checkpoint found %d frames and copied %d", pending, log, done)
	}
	if pending, ok = walPending(shm); !ok || pending != 0 {
		t.Fatalf("walPending after the checkpoint = %d, %v; want 0", pending, ok)
	}
	if _, ok := walPending(nil); ok {
		t.Fatal("walPending(nil) ok")
	}
}
