package postgres

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// Behind a connection pooler in transaction mode (PgBouncer's pool_mode =
// transaction, and the like) each transaction, or each statement outside
// one, may run on another server connection. Two things a session keeps
// then break:
//
//   - Named prepared statements: one prepared on one server connection is
//     missing on the next ("prepared statement ... does not exist"), or a
//     name another client used is taken ("already exists"). pgx names
//     statements when its query_exec_mode caches them (the default,
//     cache_statement), and database/sql's Prepare names one always. The
//     URL's default_query_exec_mode=exec (or cache_describe or
//     simple_protocol; not describe_exec, whose parse and execution are
//     two round trips a pooler may send to two server connections) turns
//     pgx's off; a Backend opened so prepares none of its own either
//     (unpreparedStmt). PgBouncer 1.21 and later, with
//     max_prepared_statements set, carry named statements across server
//     connections themselves, and the default works there.
//   - LISTEN: the listening server connection goes back to the pool after
//     the LISTEN, still listening, and a notification that reaches it is
//     never passed on to the listener (another client may get it). The
//     LISTEN itself succeeds, so the listener first listens on a channel
//     of its own and checks that a notification sent there through the
//     pool reaches it (Backend.listen) before it listens on engram_blocks
//     and reports the channel live; until one does, every cached block is
//     checked with a query at each access.

// namedStatements reports whether cfg's connections keep named prepared
// statements on the server (pgx's cache_statement mode): a pooler in
// transaction mode that does not carry them across server connections
// needs another mode, and then the Backend prepares none of its own.
func namedStatements(cfg *pgx.ConnConfig) bool {
	return cfg.DefaultQueryExecMode == pgx.QueryExecModeCacheStatement
}

// withPoolerHint adds to the server's error about a named prepared
// statement (missing, or its name taken: what a pooler in transaction
// mode causes) what to change in the URL.
func withPoolerHint(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "26000" || pe.Code == "42P05") {
		return fmt.Errorf("%w (through a connection pooler in transaction mode, add default_query_exec_mode=exec to the store's URL)", err)
	}
	return err
}

// hintedStmt is a named statement prepared on the server, whose
// executions' errors get withPoolerHint as the connection's own
// statements' do: through a pooler that keeps no named statements, an
// execution on another server connection is what fails.
type hintedStmt struct{ *stdlib.Stmt }

func (s hintedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.Stmt.ExecContext(ctx, args)
	return res, withPoolerHint(err)
}

func (s hintedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.QueryContext(ctx, args)
	return rows, withPoolerHint(err)
}

// unpreparedStmt is a statement database/sql's Prepare returns on a
// Backend that keeps no named statements on the server: each execution
// sends its text, as the connection's ExecContext and QueryContext do
// (pgx then uses the unnamed statement, or the simple protocol), so it
// runs on whatever server connection a pooler gives it.
type unpreparedStmt struct {
	c     *rebindConn
	query string
}

func (s *unpreparedStmt) Close() error  { return nil }
func (s *unpreparedStmt) NumInput() int { return -1 }

func (s *unpreparedStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *unpreparedStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *unpreparedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *unpreparedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

// errNotificationsUnreachable is why a listener that LISTENed reports the
// channel down: its probe never came back (a pooler in transaction mode
// between this process and the server, most likely).
var errNotificationsUnreachable = errors.New("a notification sent after LISTEN never reached the listening connection (a connection pooler in transaction mode? give the store a URL that reaches PostgreSQL directly, or through a pooler in session mode, for notifications to be used)")

// probePrefix opens the name of a probe's channel (engram_probe_ and 24
// hex digits): one channel a probe, never used again.
const probePrefix = "engram_probe_"

// notifyProbeWait bounds the wait for the probe's notification (it
// arrives in a millisecond or two on a direct connection).
const notifyProbeWait = 3 * time.Second

// notifyUnreachableRetry is how long a listener whose probe did not come
// back waits before it tries again (a pooler does not go away by itself;
// a restart through another URL does).
const notifyUnreachableRetry = time.Minute

// listenStatementWait bounds the LISTEN and the probe's statement, which
// run on when the listener's context ends (Backend.listen).
const listenStatementWait = 5 * time.Second

// newProbe returns a channel for one probe, which no other listener uses.
func newProbe() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("probe notifications: %w", err)
	}
	return probePrefix + hex.EncodeToString(b[:]), nil
}
