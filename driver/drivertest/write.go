package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
)

func testWriteCommits(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	calls := 0
	err := b.Write(ctx, func(tx *sql.Tx) error {
		calls++
		_, err := tx.ExecContext(ctx, insertCount, "commit", 1, 10)
		return err
	})
	if err != nil || calls != 1 {
		t.Fatalf("Write = %v after %d calls of fn, want nil after 1", err, calls)
	}
	if n := counts(t, b, "commit"); n != 1 {
		t.Fatalf("%d rows after a committed write, want 1", n)
	}
}

func testWriteRollsBack(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	boom := errors.New("boom")
	calls := 0
	err := b.Write(ctx, func(tx *sql.Tx) error {
		calls++
		if _, err := tx.ExecContext(ctx, insertCount, "rollback", 1, 10); err != nil {
			return err
		}
		return fmt.Errorf("after the insert: %w", boom)
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("Write = %v after %d calls of fn, want fn's error after 1", err, calls)
	}
	if n := counts(t, b, "rollback"); n != 0 {
		t.Fatalf("%d rows after a failed write, want 0", n)
	}
	// The backend writes on afterwards.
	if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "rollback", 2, 10); return err }); err != nil {
		t.Fatalf("Write after a failed one: %v", err)
	}
}

func testWritePanics(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want fn's panic", r)
			}
		}()
		b.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, insertCount, "panic", 1, 10); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if n := counts(t, b, "panic"); n != 0 {
		t.Fatalf("%d rows after a panicking write, want 0", n)
	}
	if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "panic", 2, 10); return err }); err != nil {
		t.Fatalf("Write after a panicking one: %v", err)
	}
}

// Concurrent writes, some failing: each fn runs exactly once, and a
// failing write takes back only its own rows, whatever group it ran in.
func testWriteGroups(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	const writers, each = 8, 20
	var calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				n := w*each + i
				err := b.Write(ctx, func(tx *sql.Tx) error {
					calls.Add(1)
					if _, err := tx.ExecContext(ctx, insertCount, "group", n, n); err != nil {
						return err
					}
					if n%5 == 0 {
						return errFailed
					}
					return nil
				})
				if (n%5 == 0) != errors.Is(err, errFailed) || err != nil && !errors.Is(err, errFailed) {
					errs <- fmt.Errorf("write %d: %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := calls.Load(); got != writers*each {
		t.Errorf("fn ran %d times for %d writes", got, writers*each)
	}
	if n := counts(t, b, "group"); n != writers*each*4/5 {
		t.Errorf("%d rows, want %d (every write but the failed fifth)", n, writers*each*4/5)
	}
}

var errFailed = errors.New("this write fails")

// writeLocker is a backend whose write transactions run in parallel
// (PostgreSQL): writes exclude each other only by the locks they name.
type writeLocker interface {
	WriteLocked(ctx context.Context, locks []driver.WriteLock, fn func(*sql.Tx) error) error
}

// lockedWrite is b.Write, or on a writeLocker a write locking block 1:
// two such writes exclude each other as two writes on a backend with one
// writer do.
func lockedWrite(ctx context.Context, b driver.Backend, fn func(*sql.Tx) error) error {
	if l, ok := b.(writeLocker); ok {
		return l.WriteLocked(ctx, []driver.WriteLock{driver.BlockLock(1)}, fn)
	}
	return b.Write(ctx, fn)
}

// testWritesInParallel: on a writeLocker, a write locking another block
// (or nothing) commits while one holds block 1's lock.
func testWritesInParallel(t *testing.T, e Engine) {
	b := fresh(t, e)
	l, ok := b.(writeLocker)
	if !ok {
		t.Skip("one writer at a time")
	}
	release := make(chan struct{})
	done := hold(t, b, release)
	defer func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("holding Write: %v", err)
		}
	}()
	for i, locks := range [][]driver.WriteLock{{driver.BlockLock(2)}, nil} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.WriteLocked(ctx, locks, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, insertCount, "parallel", i, 1)
			return err
		})
		cancel()
		if err != nil {
			t.Fatalf("write %d beside the held one: %v", i, err)
		}
	}
}

// hold runs a write on b whose fn waits until release is closed, and
// returns once fn runs (b's write lock, or block 1's, is held).
func hold(t *testing.T, b driver.Backend, release chan struct{}) <-chan error {
	t.Helper()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- lockedWrite(context.Background(), b, func(*sql.Tx) error {
			close(started)
			<-release
			return nil
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("holding Write: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("holding Write did not start")
	}
	return done
}

// waitCancelled writes on b with a ctx that ends while the write waits
// behind the held lock: the write returns ctx's error, fn never runs,
// nothing is written.
func waitCancelled(t *testing.T, b driver.Backend, encoding string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ran := false
	start := time.Now()
	err := lockedWrite(ctx, b, func(tx *sql.Tx) error {
		ran = true
		_, err := tx.ExecContext(context.Background(), insertCount, encoding, 1, 1)
		return err
	})
	if err == nil || ran || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write whose ctx ended while waiting = %v (fn ran: %v), want ctx's error and fn not run", err, ran)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Write returned %v after its ctx ended", waited)
	}
}

// Behind a write of this process: the write is queued in the backend.
func testWriteCancelledWhileQueued(t *testing.T, e Engine) {
	b := fresh(t, e)
	release := make(chan struct{})
	done := hold(t, b, release)
	waitCancelled(t, b, "queued")
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("holding Write: %v", err)
	}
	if n := counts(t, b, "queued"); n != 0 {
		t.Fatalf("%d rows from a cancelled write", n)
	}
}

// Behind a write of another process: the write waits for the database's
// lock.
func testWriteCancelledWhileLocked(t *testing.T, e Engine) {
	target := e.NewDatabase(t)
	a, b := open(t, e, target), open(t, e, target)
	release := make(chan struct{})
	done := hold(t, a, release)
	waitCancelled(t, b, "locked")
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("holding Write: %v", err)
	}
	if n := counts(t, a, "locked"); n != 0 {
		t.Fatalf("%d rows from a cancelled write", n)
	}
	// The lock is free again for b.
	ctx := context.Background()
	if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "locked", 2, 2); return err }); err != nil {
		t.Fatalf("Write after the lock was released: %v", err)
	}
}

func testWriteCancelledBefore(t *testing.T, e Engine) {
	b := fresh(t, e)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := b.Write(ctx, func(*sql.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("Write with an ended ctx = %v (fn ran: %v), want context.Canceled", err, ran)
	}
}
