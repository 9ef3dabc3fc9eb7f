package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/testenv"
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

// walFrames reads the WAL's frame count (mxFrame) from the wal-index.
func walFrames(t *testing.T, shm *os.File) uint32 {
	t.Helper()
	var h [20]byte
	if _, err := shm.ReadAt(h[:], 0); err != nil {
		t.Fatal(err)
	}
	return binary.NativeEndian.Uint32(h[16:])
}

// Under steady writes the WAL still starts over from its beginning: the
// background copy leaves behind what the writers added meanwhile, and
// unless that is finished off the WAL only grows, to the writer's
// backstop, and starts over only there. A checkpointer that a loaded
// machine schedules late may let the WAL reach the backstop now and then,
// so the test counts how often it started over: the backstop alone
// restarts it at most once per writerAutoCheckpoint frames written. A
// machine busy with other test binaries can starve the checkpointer for a
// whole run (half a second), and a race-detector build of another
// package beside it for three, so a run is tried six times: one that
// restarts the WAL more often than the backstop shows it works; a broken
// checkpointer fails all six.
func TestWALStartsOverUnderSteadyWrites(t *testing.T) {
	var failed []string
	for range 6 {
		why := walStartsOver(t)
		if why == "" {
			return
		}
		t.Log(why)
		failed = append(failed, why)
	}
	t.Fatalf("in each of %d runs: %s", len(failed), failed[len(failed)-1])
}

// walStartsOver is one run of TestWALStartsOverUnderSteadyWrites: what
// failed, or "".
func walStartsOver(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "c.db")
	b, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bigWrite(t, b, 100)
	shm, err := os.Open(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	// ~4 frames each: 5 times the backstop in all (2.5 under the race
	// detector, where each write costs ~8 ms).
	writes := 5000
	if testenv.Race {
		writes = 2500
	}
	var most, last, written uint32
	restarts := 0
	for range writes {
		bigWrite(t, b, 3*4096)
		n := walFrames(t, shm)
		if n < last {
			restarts++
			written += last
		}
		last, most = n, max(most, n)
	}
	written += last
	byBackstop := int(written / writerAutoCheckpoint)
	t.Logf("%d frames written; the WAL at most %d frames, started over %d times (the backstop alone: %d); %d background copies, %d finished on the writer",
		written, most, restarts, byBackstop, b.ckpt.runs.Load(), b.ckpt.finishes.Load())
	if restarts < byBackstop+2 {
		return fmt.Sprintf("the WAL started over %d times in %d frames: no more often than the backstop (%d frames) makes it", restarts, written, writerAutoCheckpoint)
	}
	if most >= 2*writerAutoCheckpoint {
		return fmt.Sprintf("the WAL grew to %d frames, twice the backstop", most)
	}
	return ""
}

// Without a wal-index to read, the checkpointer still checkpoints, every
// checkpointCommits looks.
func TestCheckpointerWithoutWALIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	b, err := open(context.Background(), path, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c := newCheckpointer(b.rdb, b.wdb, "")
	defer c.close()
	bigWrite(t, b, 100)
	for range checkpointCommits {
		c.committed()
		for len(c.kick) > 0 { // one look each
			time.Sleep(100 * time.Microsecond)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.runs.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint after %d looks without a wal-index", checkpointCommits)
		}
		time.Sleep(time.Millisecond)
	}
}
