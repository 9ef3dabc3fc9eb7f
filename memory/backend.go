package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// Backend is where a Cache persists: one SQL engine behind database/sql.
// What a store means (CRDT documents, the LRU, permissions, approvals,
// rendering, attribution) lives in Cache and is the same on every engine;
// a Backend owns what differs between engines: connections, the write
// transaction and its lock, schema migrations, how a statement's "?"
// placeholders reach the server, error classification, and the engine
// the search legs run on. memory/sqlite and memory/postgres implement it.
//
// The row statements themselves stay in this package, written once in the
// SQL both engines accept: the two schemas keep the same tables and
// columns, so a second copy of every statement per engine would only be a
// place for the two to drift apart.
type Backend interface {
	// Name is the engine: "sqlite" or "postgres".
	Name() string
	// DB is the pool reads use. Statements use "?" placeholders.
	DB() *sql.DB
	// Write runs fn in a transaction holding the store's write lock,
	// committing when fn returns nil. Only taking the lock is retried
	// (until the backend's lock timeout), so fn runs at most once; a ctx
	// that ends while waiting for the lock returns its error with nothing
	// written; once fn runs, the transaction completes whatever ctx does.
	Write(ctx context.Context, fn func(*sql.Tx) error) error
	// IsConflict reports whether err is a unique-constraint violation.
	IsConflict(err error) bool
	// SearchEngine is the engine the search legs are written for.
	SearchEngine() search.Engine
	// Close closes the pools.
	Close() error
}

// BlockNotifier is implemented by backends that push block changes to
// every process (PostgreSQL's LISTEN/NOTIFY). A Cache on such a backend
// serves cache hits without asking the database whether the block changed;
// it drops that trust whenever the notification channel is not live.
type BlockNotifier interface {
	// WatchBlocks calls changed with the id of each block another writer
	// committed (or deleted), and live(false) when notifications may have
	// been missed (a lost connection) and live(true) once they flow again.
	// It returns when ctx ends.
	WatchBlocks(ctx context.Context, changed func(id int64), live func(bool))
}

// openBackend picks the backend from Open's target: a file path,
// ":memory:" or sqlite://PATH → SQLite; postgres:// or postgresql:// →
// PostgreSQL. Any other scheme is refused rather than taken for a relative
// path (which once made "postgres://…" a directory named "postgres:").
func openBackend(ctx context.Context, target string, o Options) (Backend, string, error) {
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok || strings.ContainsAny(scheme, `/\`) {
		if strings.TrimSpace(target) == "" {
			return nil, "", invalidArg("store path is empty")
		}
		b, err := sqlite.Open(ctx, target, &sqlite.Options{BusyTimeout: o.BusyTimeout})
		return b, target, err
	}
	switch strings.ToLower(scheme) {
	case "sqlite", "file":
		if rest == "" {
			return nil, "", invalidArg("store URL %q names no file", target)
		}
		b, err := sqlite.Open(ctx, rest, &sqlite.Options{BusyTimeout: o.BusyTimeout})
		return b, rest, err
	case "postgres", "postgresql":
		b, err := postgres.Open(ctx, target, &postgres.Options{LockTimeout: o.BusyTimeout, Logger: o.Logger})
		return b, redactURL(target), err
	}
	return nil, "", fmt.Errorf("%w: %q (want a file path, \":memory:\", sqlite://PATH or postgres://…)", ErrUnknownScheme, redactURL(target))
}

// redactURL drops a password from a URL for error messages and logs.
func redactURL(target string) string {
	return postgres.Redact(target)
}

var (
	_ Backend       = (*sqlite.Backend)(nil)
	_ Backend       = (*postgres.Backend)(nil)
	_ BlockNotifier = (*postgres.Backend)(nil)
)
