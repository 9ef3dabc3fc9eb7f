package memory

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"modernc.org/sqlite"
)

// sqliteBusy is SQLite's primary result code for "database is locked".
const sqliteBusy = 5

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

// write runs fn in an IMMEDIATE transaction on the writer connection. When
// another process holds the write lock, SQLite's own busy handler backs off
// up to 100 ms per sleep, and a process that commits back-to-back can starve
// the other for seconds. The writer connection therefore waits only ~1 ms
// inside SQLite and write retries taking the lock with short, jittered
// sleeps until Options.BusyTimeout: fine-grained polling that lets several
// processes share one file fairly.
//
// fn runs at most once: only a failure to take the lock is retried, so fn
// may change state outside tx (a document it edits) as long as it undoes
// that when write returns an error. A caller whose context ends while
// waiting for the lock gets its error and nothing is written; once fn runs,
// the transaction finishes whatever the context does, so no caller is left
// unsure whether its change is durable.
func (c *Cache) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	deadline := time.Now().Add(c.opts.BusyTimeout)
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		tx, err := c.wdb.BeginTx(context.WithoutCancel(ctx), nil)
		if err == nil {
			return commit(tx, fn(tx))
		}
		if !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		backoff := time.Duration(200+rand.IntN(800)) * time.Microsecond << min(attempt/8, 3)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
	}
}

// commit commits tx when fnErr is nil and rolls it back otherwise.
func commit(tx *sql.Tx, fnErr error) error {
	if fnErr != nil {
		tx.Rollback()
		return fnErr
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		return err
	}
	return nil
}

// exec runs one statement through write and returns the rows affected.
func (c *Cache) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := c.write(ctx, func(tx *sql.Tx) error {
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
	err := c.write(ctx, func(tx *sql.Tx) error { return tx.QueryRow(query, args...).Scan(&id) })
	return id, err
}
