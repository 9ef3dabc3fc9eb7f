package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/storetest"
	"github.com/engram-go/engram/search"
)

// TestConformance runs the store conformance suite on PostgreSQL: plain,
// with a cache of one document (every other access a cold load), and with
// an embedder (vector and hybrid searches run for real: in pgvector when
// the server has it, and with in-process KNN).
func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	srv.HasPGVector(t) // required under ENGRAM_TEST_PGVECTOR=1
	runConformance(t, srv)
}

// conformanceModes are the stores TestConformance runs the suite on.
var conformanceModes = []string{"plain", "cache1", "embedder", "embedder-in-process", "caches", "sql", "epochs"}

// runConformance runs the store conformance suite on srv's databases, in
// every mode of conformanceModes.
func runConformance(t *testing.T, srv *pgtest.Server) {
	for _, mode := range conformanceModes {
		t.Run(mode, func(t *testing.T) {
			storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) *memory.Store {
				opts := &memory.Options{Approver: approver}
				switch mode {
				case "cache1":
					opts.CacheSize = 1
				case "embedder":
					opts.Embedder = search.NewOffline(64)
				case "embedder-in-process":
					opts.Embedder = search.NewOffline(64)
					opts.VectorCacheBytes = 1 << 30
				case "caches":
					// Both in-process caches, loaded (empty) now and caught
					// up by every search: the cache paths answer from the
					// first search on.
					opts.Embedder = search.NewOffline(64)
					opts.VectorCacheBytes = 1 << 30
				case "sql":
					// Every full-text leg ranked by the tsvector query.
					opts.TextCacheBytes = -1
				case "epochs":
					opts.CompactAfter, opts.HistoryLimit = 3, 1 // a new epoch every few writes
				}
				c, err := memory.Open(context.Background(), srv.NewDatabase(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "caches" {
					if err := storeaccess.Index(c).WarmVectorCache(context.Background()); err != nil {
						t.Fatal(err)
					}
					if err := storeaccess.Index(c).WarmTextCache(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				return c
			})
		})
	}
}

// TestArchivalNeighbours runs the archival neighbour suite on
// PostgreSQL: full-text legs ranked by the tsvector query and by a text
// cache loaded before the writes.
func TestArchivalNeighbours(t *testing.T) {
	srv := pgtest.Start(t)
	for _, mode := range []string{"sql", "caches"} {
		t.Run(mode, func(t *testing.T) {
			storetest.RunNeighbourTests(t, func(t *testing.T, o *memory.Options) *memory.Store {
				if o == nil {
					o = &memory.Options{}
				}
				if mode == "sql" {
					o.TextCacheBytes = -1
				}
				c, err := memory.Open(context.Background(), srv.NewDatabase(t), o)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "caches" {
					if err := storeaccess.Index(c).WarmTextCache(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				return c
			})
		})
	}
}

// TestLimits runs the per-entry caps and quota suite on PostgreSQL.
func TestLimits(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunLimitTests(t, func(t *testing.T, o *memory.Options) *memory.Store {
		c, err := memory.Open(context.Background(), srv.NewDatabase(t), o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// Write transactions run in parallel unless they lock the same thing: a
// write to another block commits while one holds its block; a write to
// the same block (or a lock taken later in a transaction) waits for the
// holder's commit, and one that gives up waiting writes nothing; the
// store's exclusive lock waits for every write and holds off new ones.
func TestWriteLocks(t *testing.T) {
	ctx := context.Background()
	b, err := postgres.Open(ctx, pgtest.Start(t).NewDatabase(t), &postgres.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE w (k TEXT PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	insert := func(k string) func(*sql.Tx) error {
		return func(tx *sql.Tx) error { _, err := tx.Exec(`INSERT INTO w VALUES (?)`, k); return err }
	}
	has := func(k string) bool {
		var n int
		if err := b.DB().QueryRow(`SELECT count(*) FROM w WHERE k = ?`, k).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// hold runs a write holding locks until release is called.
	hold := func(locks ...driver.WriteLock) (release func()) {
		held, done := make(chan struct{}), make(chan error, 1)
		rel := make(chan struct{})
		go func() {
			done <- b.WriteLocked(ctx, locks, func(tx *sql.Tx) error {
				close(held)
				<-rel
				return nil
			})
		}()
		<-held
		return func() {
			close(rel)
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	// waits reports whether a write holding locks waits (for 300 ms).
	waits := func(k string, locks ...driver.WriteLock) (wait func()) {
		done := make(chan error, 1)
		go func() { done <- b.WriteLocked(ctx, locks, insert(k)) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			return nil
		case <-time.After(300 * time.Millisecond):
			return func() {
				if err := <-done; err != nil {
					t.Error(err)
				}
			}
		}
	}

	release := hold(driver.BlockLock(1), driver.AgentLock("ann"))
	for _, l := range []driver.WriteLock{driver.BlockLock(2), driver.AgentLock("bob")} {
		if w := waits(fmt.Sprint("other ", l), l); w != nil {
			release()
			w()
			t.Fatalf("a write locking %v waited for one holding block 1 and ann", l)
		}
	}
	same := waits("same block", driver.BlockLock(2), driver.BlockLock(1))
	agent := waits("same agent", driver.AgentLock("ann"))
	if same == nil || agent == nil {
		release()
		t.Fatal("a write to the same block or agent did not wait")
	}
	// Later in a transaction, and given up: nothing written.
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = b.WriteLocked(short, nil, func(tx *sql.Tx) error {
		if err := insert("late lock")(tx); err != nil {
			return err
		}
		return b.Lock(short, tx, driver.AgentLock("ann"))
	})
	cancel()
	if err == nil {
		t.Fatal("a lock taken later in the transaction did not wait for its holder")
	}
	gaveUp, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err = b.WriteLocked(gaveUp, []driver.WriteLock{driver.BlockLock(1)}, insert("gave up"))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a write that gave up waiting: %v, want the context's error", err)
	}
	release()
	same()
	agent()
	for k, want := range map[string]bool{"same block": true, "same agent": true, "late lock": false, "gave up": false} {
		if has(k) != want {
			t.Errorf("row %q written: %v, want %v", k, !want, want)
		}
	}

	// The store, exclusively: after every write, before any new one.
	release = hold(driver.BlockLock(3))
	store := waits("store", driver.StoreLock())
	if store == nil {
		release()
		t.Fatal("the store's lock did not wait for a write")
	}
	next := waits("after store", driver.BlockLock(4))
	release()
	store()
	if next != nil {
		next()
	}
	if !has("store") || !has("after store") {
		t.Fatal("writes lost")
	}

	// fn's error and panic roll back.
	if err := b.Write(ctx, func(tx *sql.Tx) error { _ = insert("failed")(tx); return errors.New("no") }); err == nil || has("failed") {
		t.Fatalf("a failing write: %v, row kept %v", err, has("failed"))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not reach the caller")
			}
		}()
		_ = b.Write(ctx, func(tx *sql.Tx) error { _ = insert("panicked")(tx); panic("boom") })
	}()
	if has("panicked") {
		t.Fatal("a panicking write was kept")
	}
}
