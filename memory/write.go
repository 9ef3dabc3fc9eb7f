package memory

import (
	"context"
	"database/sql"
)

// write runs fn in the backend's write transaction (see Backend.Write:
// fn runs at most once, and a ctx that ends while waiting for the lock
// leaves nothing written). fn gets ctx without its cancellation, for its
// statements: once the transaction runs it finishes, and on SQLite a
// cancelled statement interrupts the connection, which rolls back the whole
// transaction — under group commit other callers' writes too.
func (c *Cache) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	wctx := context.WithoutCancel(ctx)
	return c.be.Write(ctx, func(tx *sql.Tx) error { return fn(wctx, tx) })
}

// exec runs one statement through write and returns the rows affected.
func (c *Cache) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := c.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.Exec(query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// insertID runs one INSERT ... RETURNING id through write.
func (c *Cache) insertID(ctx context.Context, query string, args ...any) (int64, error) {
	var id int64
	err := c.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return tx.QueryRow(query, args...).Scan(&id) })
	return id, err
}

// txStatements is implemented by backends that keep statements parsed
// for their write transactions (SQLite; pgx caches prepared statements
// by itself).
type txStatements interface {
	Prepare(ctx context.Context, queries ...string) error
	TxStmt(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt
}

// txExec runs query in tx, through the backend's prepared statement when
// it keeps one.
func (c *Cache) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if ts, ok := c.be.(txStatements); ok {
		if st := ts.TxStmt(ctx, tx, query); st != nil {
			return st.ExecContext(ctx, args...)
		}
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQueryRow is txExec for a query returning one row.
func (c *Cache) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if ts, ok := c.be.(txStatements); ok {
		if st := ts.TxStmt(ctx, tx, query); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return tx.QueryRowContext(ctx, query, args...)
}
