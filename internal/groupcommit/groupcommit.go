// Package groupcommit lets concurrent writers share one database
// transaction and commit: writes that arrive while a transaction runs queue
// up, and the first of them leads the next group, running every queued
// write in one transaction, each in its own SAVEPOINT, with one commit.
// SQLite's backend writes through it (one writer at a time: grouping is
// what lets concurrent writers share a commit); PostgreSQL's writers run
// in parallel and need none. How a transaction takes the store's write
// lock, and which errors mean "busy, try again", is the Committer's
// configuration.
package groupcommit

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Committer runs writes in groups. The zero value is not usable: Begin is
// required.
type Committer struct {
	// Begin starts a transaction holding the store's write lock. ctx is
	// the write's own context when the group is one write (so a lone
	// write may stop waiting for the lock when its caller gives up), and
	// context.Background() for a group. The transaction itself must not
	// be bound to ctx: once begun it completes whatever ctx does.
	Begin func(ctx context.Context) (*sql.Tx, error)
	// Busy reports whether Begin's error means another process holds the
	// lock: the leader then retries with short jittered sleeps until
	// Timeout. nil: Begin waits on its own and its errors are final.
	Busy    func(error) bool
	Timeout time.Duration

	qmu     sync.Mutex
	queue   []*writeReq
	leading bool
}

// maxGroup is the most writes one transaction commits together.
const maxGroup = 64

// writeReq is one Write waiting for, or taking part in, a group.
type writeReq struct {
	ctx      context.Context
	fn       func(tx *sql.Tx) error
	state    atomic.Int32 // reqQueued, then reqTaken (by a leader) or reqCancelled (by its caller)
	wake     chan bool    // true: lead the next group; false: done
	err      error
	panicked any
	done     bool // err is final (set by the leader before waking)
}

const (
	reqQueued int32 = iota
	reqTaken
	reqCancelled
)

func (r *writeReq) result() error {
	if r.panicked != nil {
		panic(r.panicked) // fn's own panic, re-raised in its own goroutine
	}
	return r.err
}

// Write runs fn in a transaction from Begin and returns once that
// transaction committed (or failed).
//
// Group commit: writes that arrive while a transaction is running queue up;
// the first of them then leads the next group, running every queued fn in
// one transaction, each inside its own SAVEPOINT, and commits once. A fn
// that fails is rolled back to its savepoint and gets its own error; the
// others still commit. If the commit fails, every fn of the group gets
// that error. So concurrent writers share one commit (one WAL append and
// lock round) instead of queueing for one each, and every write is still
// acknowledged only once it is durable. A lone write runs without a
// savepoint, as a plain transaction.
//
// When Busy says another process holds the lock, the leader retries with
// short, jittered sleeps until Timeout (SQLite's own busy handler sleeps up
// to 100 ms at a time, and a process that commits back-to-back can starve
// another for seconds; fine-grained polling shares one file fairly).
//
// fn runs at most once, so it may change state outside tx (a document it
// edits) as long as it undoes that when Write returns an error. A caller
// whose context ends before its fn started gets the context's error and
// nothing is written; once fn runs, the transaction finishes whatever the
// context does, so no caller is left unsure whether its change is durable.
func (b *Committer) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{ctx: ctx, fn: fn, wake: make(chan bool, 1)}
	b.qmu.Lock()
	if b.leading {
		b.queue = append(b.queue, r)
		b.qmu.Unlock()
		var lead bool
		select {
		case lead = <-r.wake:
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqCancelled) {
				return ctx.Err()
			}
			lead = <-r.wake // a leader took it: its outcome decides
		}
		if !lead {
			return r.result()
		}
	} else {
		b.leading = true
		b.qmu.Unlock()
		r.state.Store(reqTaken)
	}
	b.lead(r)
	return r.result()
}

// Queued reports how many writes wait for the writer behind the running
// group (for tests and metrics).
func (b *Committer) Queued() int {
	b.qmu.Lock()
	defer b.qmu.Unlock()
	n := 0
	for _, r := range b.queue {
		if r.state.Load() == reqQueued {
			n++
		}
	}
	return n
}

// lead runs first and the writes queued behind it as one group, then hands
// the lead to the next queued write (or ends leading) and wakes the group.
func (b *Committer) lead(first *writeReq) {
	group := []*writeReq{first}
	b.qmu.Lock()
	n := 0
	for ; n < len(b.queue) && len(group) < maxGroup; n++ {
		if r := b.queue[n]; r.state.CompareAndSwap(reqQueued, reqTaken) {
			group = append(group, r)
		}
	}
	b.queue = b.dequeue(n)
	b.qmu.Unlock()

	b.runGroup(group)

	b.qmu.Lock()
	var next *writeReq
	n = 0
	for ; n < len(b.queue) && next == nil; n++ {
		if r := b.queue[n]; r.state.CompareAndSwap(reqQueued, reqTaken) {
			next = r
		}
	}
	b.queue = b.dequeue(n)
	if next == nil {
		b.leading = false
	}
	b.qmu.Unlock()
	if next != nil {
		next.wake <- true
	}
	for _, r := range group[1:] {
		r.wake <- false
	}
}

// dequeue drops the first n queued writes; caller holds qmu.
func (b *Committer) dequeue(n int) []*writeReq {
	q := b.queue[:copy(b.queue, b.queue[n:])]
	clear(b.queue[len(q):])
	return q
}

// runGroup takes the write lock for group (retrying while another process
// holds it) and runs it. Members whose context ended before the lock was
// taken get that error and write nothing.
func (b *Committer) runGroup(group []*writeReq) {
	deadline := time.Now().Add(b.Timeout)
	for attempt := 0; ; attempt++ {
		live := 0
		for _, r := range group {
			if !r.done && r.ctx.Err() != nil {
				r.err, r.done = r.ctx.Err(), true
			}
			if !r.done {
				live++
			}
		}
		if live == 0 {
			return
		}
		ctx := context.Background()
		if live == 1 {
			for _, r := range group {
				if !r.done {
					ctx = r.ctx
				}
			}
		}
		tx, err := b.Begin(ctx)
		if err == nil {
			b.runInTx(tx, group, live)
			return
		}
		if live == 1 && ctx.Err() != nil {
			err = ctx.Err()
		}
		if b.Busy == nil || !b.Busy(err) || time.Now().After(deadline) {
			for _, r := range group {
				if !r.done {
					r.err, r.done = err, true
				}
			}
			return
		}
		pause(ctx, backoff(attempt)) // (a lone write's: it stops waiting when its caller gives up)
	}
}

// runInTx runs the group's live members in tx and commits.
func (b *Committer) runInTx(tx *sql.Tx, group []*writeReq, live int) {
	alone := live == 1
	var ok []*writeReq // members whose fn succeeded: the commit decides them
	for i, r := range group {
		if !r.done && r.ctx.Err() != nil {
			// Its caller gave up while the group waited for the lock or
			// ran the members before it: it never starts.
			r.err, r.done = r.ctx.Err(), true
		}
		if r.done {
			continue
		}
		if !alone {
			if _, err := tx.Exec(`SAVEPOINT engram_write`); err != nil {
				b.abort(tx, group[i:], ok, err)
				return
			}
		}
		err := r.call(tx)
		if err == nil {
			if !alone {
				if _, err := tx.Exec(`RELEASE engram_write`); err != nil {
					b.abort(tx, group[i:], append(ok, r), err)
					return
				}
			}
			ok = append(ok, r)
			continue
		}
		r.err, r.done = err, true
		if !alone {
			_, rbErr := tx.Exec(`ROLLBACK TO engram_write`)
			if rbErr == nil {
				_, rbErr = tx.Exec(`RELEASE engram_write`)
			}
			if rbErr != nil {
				b.abort(tx, group[i+1:], ok, rbErr)
				return
			}
		}
	}
	if len(ok) == 0 {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		for _, r := range ok {
			r.err, r.done = err, true
		}
		return
	}
	for _, r := range ok {
		r.done = true
	}
}

// abort rolls the group's transaction back after a savepoint failed: the
// members that already ran lose their writes, the rest never ran; all get
// the error.
func (b *Committer) abort(tx *sql.Tx, rest, ran []*writeReq, err error) {
	tx.Rollback()
	err = fmt.Errorf("group commit rolled back: %w", err)
	for _, r := range append(ran, rest...) {
		if !r.done {
			r.err, r.done = err, true
		}
	}
}

// call runs r.fn, turning a panic into an error for the group and a panic
// for r's own caller.
func (r *writeReq) call(tx *sql.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
			err = fmt.Errorf("write panicked: %v", p)
		}
	}()
	return r.fn(tx)
}
