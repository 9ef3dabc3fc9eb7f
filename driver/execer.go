package driver

import (
	"context"
	"database/sql"
)

// Execer runs SQL. *sql.DB, *sql.Tx and *sql.Conn satisfy it, so vector
// maintenance can run inside the caller's own transaction.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}
