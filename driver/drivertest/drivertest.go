// Package drivertest is the conformance suite of package driver, in the
// spirit of River's riverdrivertest: every primitive a Backend gives
// package memory, checked the same way on each engine. memory/sqlite and
// memory/postgres run it from their tests; a new engine should too.
//
// It checks what memory relies on and cannot see from above: migrations
// applied to the latest version and idempotent on reopen; Write committing
// on nil, rolling back on an error or a panic, running fn at most once,
// giving up with nothing written when ctx ends while it waits for the
// lock (behind a write of this process or another's); IsConflict on a
// real unique violation only; "?" placeholders on DB and in Write's
// transaction; ReadTx's snapshot; PadsRows and JSONInt64s; the search
// dialect's metadata filters; BlockNotifier
// when the backend implements it (skipped otherwise); Close.
//
// memory/storetest is the suite one level up: the whole store over a
// backend.
package drivertest

import (
	"context"
	"testing"

	"github.com/engram-go/engram/driver"
)

// Engine is how the suite gets databases and backends on one engine.
type Engine struct {
	// NewDatabase returns a target naming a fresh, empty database that
	// lasts as long as t (a file in t.TempDir(), a new PostgreSQL
	// database).
	NewDatabase func(t *testing.T) string
	// Open opens a backend on target, applying its migrations; a second
	// Open of one target is a second process on the same database. The
	// suite closes what it opens.
	Open func(t *testing.T, target string) (driver.Backend, error)
	// NotificationsUnreachable says the engine is reached through a
	// connection pooler in transaction mode, which cannot carry LISTEN's
	// notifications: a BlockNotifier must then never report itself live
	// (its users check what they cached by query instead), and must still
	// return when its ctx ends.
	NotificationsUnreachable bool
}

// Run runs the suite, each part as a subtest on databases of its own.
func Run(t *testing.T, e Engine) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e Engine)
	}{
		{"Migrations", testMigrations},
		{"WriteCommits", testWriteCommits},
		{"WriteRollsBack", testWriteRollsBack},
		{"WritePanics", testWritePanics},
		{"WriteGroupsRunEachFnOnce", testWriteGroups},
		{"WriteCancelledWhileQueued", testWriteCancelledWhileQueued},
		{"WriteCancelledWhileLocked", testWriteCancelledWhileLocked},
		{"WriteCancelledBefore", testWriteCancelledBefore},
		{"WritesInParallel", testWritesInParallel},
		{"IsConflict", testIsConflict},
		{"Placeholders", testPlaceholders},
		{"ReadTx", testReadTx},
		{"PadsRows", testPadsRows},
		{"JSONInt64s", testJSONInt64s},
		{"BlockNotifier", testBlockNotifier},
		{"MetadataCompare", testMetadataCompare},
		{"Close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, e) })
	}
}

// open opens a backend on target and closes it when t ends.
func open(t *testing.T, e Engine, target string) driver.Backend {
	t.Helper()
	b, err := e.Open(t, target)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// fresh opens a backend on a new database.
func fresh(t *testing.T, e Engine) driver.Backend {
	t.Helper()
	return open(t, e, e.NewDatabase(t))
}

// The suite writes rows of token_counts (encoding, hash, tokens; unique
// on encoding and hash): a table of the store's schema with no foreign
// keys and no triggers.
const insertCount = `INSERT INTO token_counts (encoding, hash, tokens) VALUES (?, ?, ?)`

// counts returns how many token_counts rows have the encoding.
func counts(t *testing.T, b driver.Backend, encoding string) int {
	t.Helper()
	var n int
	if err := b.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM token_counts WHERE encoding = ?`, encoding).Scan(&n); err != nil {
		t.Fatalf("count %s rows: %v", encoding, err)
	}
	return n
}
