package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	engdriver "github.com/engram-go/engram/driver"
)

// WriteOnce implements driver.OneTripWriter: BEGIN, a statement taking
// the locks (with pg_try_advisory_xact_lock: it never waits), query and
// COMMIT go to the server as one pipeline, so the whole write transaction
// costs one round trip. A busy lock fails the lock statement (a division
// by zero, SQLSTATE 22012, the try's false as the divisor): the server
// then skips query and COMMIT, and the aborted transaction is rolled back
// (one more round trip) before WriteOnce reports false. query returning
// no row commits an empty transaction and reports false too. The blocks
// locked are notified after the commit, as WriteBlocks does. Nothing in
// the pipeline waits for a lock but a row lock of query's (bounded by
// Options.LockTimeout), so it runs without ctx's cancellation: a write
// that started completes, and its outcome is known.
func (b *Backend) WriteOnce(ctx context.Context, locks []engdriver.WriteLock, query string, args []any, dest ...any) (bool, error) {
	found, err := b.writeOnceTrip(ctx, locks, query, args, dest...)
	for range b.maxConns {
		if !errors.As(err, new(notStarted)) || ctx.Err() != nil {
			break
		}
		// A connection the server closed since its last use: nothing ran
		// (see Backend.write).
		found, err = b.writeOnceTrip(ctx, locks, query, args, dest...)
	}
	return found, err
}

func (b *Backend) writeOnceTrip(ctx context.Context, locks []engdriver.WriteLock, query string, args []any, dest ...any) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	exclusive := slices.ContainsFunc(locks, func(l engdriver.WriteLock) bool { return l.Kind() == engdriver.LockStore })
	keys := lockKeys(append(locks, engdriver.StoreLock()))
	lockArgs := []any{fmt.Sprintf("%dms", b.timeout.Milliseconds())}
	tries := make([]string, len(keys))
	for i, k := range keys {
		lockArgs = append(lockArgs, k)
		tries[i] = fmt.Sprintf("pg_try_advisory_xact_lock($%d)", i+2)
		if k == storeKey && !exclusive {
			tries[i] = fmt.Sprintf("pg_try_advisory_xact_lock_shared($%d)", i+2)
		}
	}
	lockQuery := "SELECT set_config('lock_timeout', $1, true), set_config('engram.notify', 'after', true), 1 / (" + strings.Join(tries, " AND ") + ")::int"
	wctx := context.WithoutCancel(ctx)
	found := false
	err = conn.Raw(func(dc any) error {
		pc := dc.(*rebindConn).Conn.Conn()
		batch := &pgx.Batch{}
		batch.Queue(beginWrite)
		batch.Queue(lockQuery, lockArgs...)
		batch.Queue(rebind(query), args...)
		batch.Queue("commit")
		res := pc.SendBatch(wctx, batch)
		abort := func(err error) error {
			_ = res.Close()
			if !pc.IsClosed() {
				if _, rerr := pc.Exec(wctx, "rollback"); rerr != nil {
					_ = pc.Close(wctx) // the pool drops it
				}
			}
			return err
		}
		if _, err := res.Exec(); err != nil {
			if beforeAnyResult(pc, err) {
				err = notStarted{err}
			}
			return abort(err)
		}
		if _, err := res.Exec(); err != nil {
			if beforeAnyResult(pc, err) {
				return abort(notStarted{err}) // the lock statement: query and COMMIT did not run
			}
			if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" {
				return abort(nil) // a lock is busy: nothing ran
			}
			return abort(fmt.Errorf("take the write locks: %w", err))
		}
		err := res.QueryRow().Scan(dest...)
		found = err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return abort(err)
		}
		tag, err := res.Exec()
		if cerr := res.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if tag.String() == "ROLLBACK" {
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	if err != nil {
		return false, withPoolerHint(err)
	}
	if found {
		b.grown.noteWrite()
		var ids []int64
		for _, l := range locks {
			if l.Kind() == engdriver.LockBlock {
				ids = append(ids, l.Block())
			}
		}
		b.notify.add(ids)
	}
	return found, nil
}

// beforeAnyResult reports that err, met reading a pipeline's result on
// conn, left conn closed before the server ran the statement the result
// is for: nothing was sent (pgconn.SafeToRetry: a failed prepare, a
// write that sent nothing), or a FATAL came in its place. The server's
// own (a terminated backend) comes after the results of what it ran; a
// pooler's (PgBouncer's query_timeout) may come while its server
// connection still runs the pipeline, COMMIT included. The retry is safe
// even then: the store's claim is guarded by the row's sequence, so a
// second try of a write that committed claims nothing, and the ordinary
// path that follows finds the edit's change in the catch-up and writes
// nothing (Store's committedEarlier).
func beforeAnyResult(conn *pgx.Conn, err error) bool {
	if !conn.IsClosed() {
		return false
	}
	var pe *pgconn.PgError
	return pgconn.SafeToRetry(err) || (errors.As(err, &pe) && pe.Severity == "FATAL")
}
