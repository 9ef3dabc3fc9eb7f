package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// waitClosed waits up to d for ch to close.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Another store's (another process's) change to a block reaches this
// store's BlocksChanged as its notification arrives, and when the
// listening connection comes back after a loss the channel closes too
// (a change may have gone unnotified meanwhile).
func TestBlocksChangedByNotification(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	open := func() *memory.Store {
		c, err := memory.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := open(), open()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	listeners := func() int {
		var n int
		admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n)
		return n
	}
	eventually(t, 10*time.Second, "stores did not start listening", func() bool { return listeners() == 2 })
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		what string
		f    func() error
	}{
		{"append", func() error { return a.Agent("ada").Block("notes").Append(ctx, "x\n") }},
		{"pin", func() error { return a.Agent("ada").Block("notes").SetPinned(ctx, true) }},
		{"create", func() error {
			_, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "tmp", Permission: blocks.Admin})
			return err
		}},
		{"delete", func() error { return a.Agent("ada").Block("tmp").Delete(ctx) }},
	} {
		// Drain what earlier steps may still deliver.
		for waitClosed(b.BlocksChanged(), 50*time.Millisecond) {
		}
		ch := b.BlocksChanged()
		start := time.Now()
		if err := tc.f(); err != nil {
			t.Fatal(err)
		}
		if !waitClosed(ch, 5*time.Second) {
			t.Fatalf("%s through another store: not signalled", tc.what)
		}
		t.Logf("%s through another store: signalled after %v", tc.what, time.Since(start))
	}

	for waitClosed(b.BlocksChanged(), 50*time.Millisecond) {
	}
	ch := b.BlocksChanged()
	if _, err := admin.Exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	if !waitClosed(ch, 10*time.Second) {
		t.Fatal("notifications came back without a signal")
	}
	eventually(t, 10*time.Second, "listeners did not reconnect", func() bool { return listeners() == 2 })
}
