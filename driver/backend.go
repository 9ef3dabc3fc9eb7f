package driver

import (
	"context"
	"database/sql"
)

// Backend is where a memory.Store persists: one SQL engine behind database/sql.
// What a store means (CRDT documents, the LRU, permissions, approvals,
// rendering, attribution) lives in memory.Store and is the same on every engine;
// a Backend owns what differs between engines: connections, the write
// transaction and its lock, read snapshots, schema migrations, how a
// statement's "?" placeholders reach the server, error classification,
// the few SQL fragments the engines spell differently, and the engine the
// search legs run on. memory/sqlite (built in) and memory/postgres
// (registered, see memory.Register) implement it; driver/drivertest is the
// suite every implementation passes.
//
// The row statements themselves stay in package memory, written once in the
// SQL both engines accept: the two schemas keep the same tables and
// columns, so a second copy of every statement per engine would only be a
// place for the two to drift apart.
type Backend interface {
	// Name is the engine: "sqlite" or "postgres".
	Name() string
	// DB is the pool reads use. Statements use "?" placeholders.
	DB() *sql.DB
	// Write runs fn in a write transaction, committing when fn returns
	// nil: on an engine with one writer at a time (SQLite) one holding the
	// store's write lock; where writers run in parallel (PostgreSQL) one
	// that locks no block or agent of its own (the store's writes lock
	// what they write, through the backend's WriteBlocks and Lock). Only
	// taking a lock is retried (until the backend's lock timeout), so fn
	// runs at most once; a ctx that ends while waiting for the lock
	// returns its error with nothing written; once fn runs, the
	// transaction completes whatever ctx does.
	Write(ctx context.Context, fn func(*sql.Tx) error) error
	// IsConflict reports whether err is a unique-constraint violation.
	IsConflict(err error) bool
	// SearchDialect is the engine's SQL for the search index.
	SearchDialect() Dialect
	// ReadTx begins a read-only transaction on DB that sees one snapshot
	// of the database: rows it reads agree with each other even while
	// other connections commit (a block's row, snapshot and updates).
	ReadTx(ctx context.Context) (*sql.Tx, error)
	// PadsRows reports whether the blocks table has a pad column whose
	// slack keeps a row's size unchanged when its rendering grows or
	// shrinks a little: worth it where the engine overwrites a row of
	// unchanged size in place (SQLite), not where every update writes a
	// new row version anyway (PostgreSQL).
	PadsRows() bool
	// JSONInt64s is a subquery yielding, in a column named value, the n
	// integers of the JSON array bound to its one "?" placeholder, for
	// "x IN (…)" over a list of any length in one statement (an engine may
	// word it by n, for its planner's sake).
	JSONInt64s(n int) string
	// SchemaVersion returns how many of its migrations the database has
	// applied, and how many this build has (memory.Open applies the missing ones).
	SchemaVersion(ctx context.Context) (have, latest int, err error)
	// Close closes the pools.
	Close() error
}

// BlockNotifier is implemented by backends that push block changes to
// every process (PostgreSQL's LISTEN/NOTIFY). A memory.Store on such a backend
// serves cache hits without asking the database whether the block changed;
// it drops that trust whenever the notification channel is not live.
type BlockNotifier interface {
	// WatchBlocks calls changed with the id of each block another writer
	// committed (or deleted), and live(false) when notifications may have
	// been missed (a lost connection) and live(true) once they flow again.
	// It returns when ctx ends.
	WatchBlocks(ctx context.Context, changed func(id int64), live func(bool))
}
