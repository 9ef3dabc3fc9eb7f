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
// inside SQLite and write retries the whole transaction with short,
// jittered sleeps until Options.BusyTimeout: fine-grained polling that lets
// several processes share one file fairly. fn may run more than once and
// must have no effects outside tx except idempotent ones.
//
// A write, once started, is not abandoned on cancellation: a caller whose
// context ends must not be left unsure whether its change is durable.
func (c *Cache) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	wctx := context.WithoutCancel(ctx)
	deadline := time.Now().Add(c.opts.BusyTimeout)
	for attempt := 0; ; attempt++ {
		err := c.writeOnce(wctx, fn)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		backoff := time.Duration(200+rand.IntN(800)) * time.Microsecond << min(attempt/8, 3)
		time.Sleep(backoff)
	}
}

func (c *Cache) writeOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := c.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
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
