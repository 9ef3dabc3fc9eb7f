package driver

import (
	"context"
	"database/sql"
)

// LockingWriter is implemented by a Backend whose write transactions do
// not exclude each other (PostgreSQL): a write locks what it writes,
// taking locks in its first statement (WriteLocked; the store's writes
// use WriteBlocks, which also tells other processes of the changes of the
// blocks it locks, after the commit) and, when it finds it needs more,
// later (Lock: only locks ordered after all it holds, see WriteLock).
// NotifyAfter tells other processes, after tx commits, of blocks tx
// created. Backends without it (SQLite) hold the whole store in every
// write transaction.
type LockingWriter interface {
	WriteLocked(ctx context.Context, locks []WriteLock, fn func(*sql.Tx) error) error
	WriteBlocks(ctx context.Context, locks []WriteLock, fn func(*sql.Tx) error) error
	Lock(ctx context.Context, tx *sql.Tx, locks ...WriteLock) error
	NotifyAfter(tx *sql.Tx, ids ...int64)
}

// OneTripWriter is implemented by a LockingWriter that can run a write of
// one statement as a single round trip to the server (PostgreSQL: BEGIN,
// the locks, the statement and COMMIT sent together). WriteOnce takes
// locks only if no other transaction holds them (it never waits for
// one), runs query (which must write: "?" placeholders, args; the store
// sends a data-modifying WITH, as PostgreSQL has it), scans its
// one row into dest and commits, notifying the blocks it locks as
// WriteBlocks does. It reports false, having written nothing, when a lock
// was busy or query returned no row (its write then must be a no-op too:
// the empty transaction commits); the caller then takes the ordinary
// path (WriteBlocks), which waits for the locks. An error leaves it
// unknown whether the write committed, as a failed COMMIT does.
type OneTripWriter interface {
	WriteOnce(ctx context.Context, locks []WriteLock, query string, args []any, dest ...any) (bool, error)
}

// TxStatements is implemented by a Backend that keeps statements parsed
// for its write transactions (SQLite; pgx caches prepared statements by
// itself): Prepare parses queries once, TxStmt returns query's statement
// bound to tx, or nil when it keeps none for it.
type TxStatements interface {
	Prepare(ctx context.Context, queries ...string) error
	TxStmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt
}

// DataVersioner is implemented by a Backend that tells cheaply whether
// anything was committed since an earlier call (SQLite's data_version):
// equal values, nothing committed in between, by any connection or
// process. ok is false when it cannot tell.
type DataVersioner interface {
	DataVersion(ctx context.Context) (v int64, ok bool, err error)
}

// ArchivalIndexDeferrer is implemented by a Backend that can bring its
// archival full-text index up to date once for many entries one
// transaction inserts, where each insert would otherwise re-index the
// entries next to it again: after DeferArchivalIndex, tx's archival
// inserts skip the index, and FlushArchivalIndex indexes the entries ids
// (those inserted since: entries inserted in tx) and the entries whose
// context they changed, as the rows then stand, and ends the deferral.
// Other writes in between are indexed as usual. A transaction that
// defers flushes before it commits. PrepareArchivalIndex parses what the
// two run, once, where the backend keeps statements parsed; call it
// outside any write transaction (as TxStatements.Prepare).
type ArchivalIndexDeferrer interface {
	PrepareArchivalIndex(ctx context.Context) error
	DeferArchivalIndex(ctx context.Context, tx *sql.Tx) error
	FlushArchivalIndex(ctx context.Context, tx *sql.Tx, ids []int64) error
}
