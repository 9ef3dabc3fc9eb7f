package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
)

// Flush persists every block with unpersisted changes (write-back mode)
// and waits for the new epochs being started behind earlier writes when
// it is called (see Options.HistoryLimit; not for those later writes
// start), so that what it returns to is the store's settled state as of
// the call. Edits pending for a block deleted since have nowhere to go:
// they are dropped, with a warning in the log.
func (c *Store) Flush(ctx context.Context) error {
	c.mu.Lock()
	pending := make([]*entry, 0, len(c.dirty))
	for e := range c.dirty {
		pending = append(pending, e)
	}
	c.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].id < pending[j].id })
	var errs []error
	for _, e := range pending {
		// (A block deleted since has nothing left to flush.)
		if err := c.persist(ctx, e); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if err := c.waitRebases(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// onEvict runs inside the LRU's lock: only note the entry; flushing (I/O)
// happens after the LRU call returns, in flushEvicted.
func (c *Store) onEvict(_ int64, e *entry) {
	c.names.CompareAndDelete(nameKey(e.owner, e.label), e)
	c.mu.Lock()
	if _, dirty := c.dirty[e]; dirty {
		c.evicted = append(c.evicted, e)
	}
	c.mu.Unlock()
}

// evictedDirty returns the entry of block id (this incarnation) that left
// the LRU with unpersisted edits, or with an edit under way
// (claimCopy), if there is one.
func (c *Store) evictedDirty(id, incarnation int64) *entry {
	c.mu.Lock()
	found := c.copiesLocked(id, incarnation, nil)
	c.mu.Unlock()
	// (The LRU is asked without c.mu: its evictions take c.mu in onEvict.)
	for _, e := range found {
		if cur, ok := c.lru.Peek(id); !ok || cur != e {
			return e
		}
	}
	return nil
}

// copiesLocked returns the copies of block id (this incarnation) other
// than except that have an edit under way (claimed) or edits pending
// (dirty). Caller holds c.mu.
func (c *Store) copiesLocked(id, incarnation int64, except *entry) []*entry {
	var found []*entry
	for _, set := range []map[*entry]struct{}{c.claimed, c.dirty} {
		for e := range set {
			if e != except && e.id == id && e.incarnation == incarnation {
				found = append(found, e)
			}
		}
	}
	return found
}

func (c *Store) flushEvicted(ctx context.Context) {
	c.mu.Lock()
	ev := c.evicted
	c.evicted = nil
	c.mu.Unlock()
	for _, e := range ev {
		if err := c.persist(ctx, e); err != nil && !errors.Is(err, ErrNotFound) {
			// Still in c.dirty: Flush or Close retries it. Nothing is lost.
			c.log.Error("flush of evicted block failed", "block", e.label, "owner", e.owner, "err", err)
		}
	}
}

// writeBack applies an edit to the cached state and marks the block dirty
// (Options.WriteBack). It reads the accessor's current permission, but
// limits hold only against the state this process has seen: other
// processes' writes merge in at Flush.
func (c *Store) writeBack(ctx context.Context, e *entry, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	// Held before the read transaction: holding the copy waits for loads
	// (copyMu), and a load may wait for a connection.
	release, err := c.holdCopy(ctx, e)
	if err != nil {
		return fmt.Errorf("memory: %s on block %q: %w", req.Op, e.label, err)
	}
	defer release()
	tx, err := c.readTx(ctx)
	if err != nil {
		return fmt.Errorf("memory: %s on block %q: %w", req.Op, e.label, err)
	}
	defer tx.Rollback()
	r, perm, err := c.writeState(ctx, tx.QueryRowContext, e, req)
	if err != nil {
		return fmt.Errorf("memory: %s on block %q: %w", req.Op, e.label, err)
	}
	if err := c.refresh(ctx, tx, e, r); err != nil {
		return err
	}
	if perm.err != nil {
		return perm.err
	}
	if err := apply(perm.p); err != nil {
		return err
	}
	if e.actors == nil {
		e.actors = map[string]struct{}{}
	}
	c.mu.Lock()
	_, was := c.dirty[e]
	c.mu.Unlock()
	// An edit that changed nothing (a text set to itself) leaves nothing
	// to persist. (Asked only of a clean copy: with this edit alone
	// pending the answer is at hand, with many it is a walk.)
	pending := was || e.doc.Dirty()
	c.mu.Lock()
	if c.closed {
		// Close's last flush may have listed the dirty blocks already:
		// refused, not acknowledged and lost. Taken back here, under e.mu,
		// so that flush cannot persist it in between.
		c.mu.Unlock()
		if req.Undo != nil {
			if err := req.Undo(); err != nil {
				return errors.Join(ErrClosed, err)
			}
		}
		return ErrClosed
	}
	if pending {
		c.dirty[e] = struct{}{}
	}
	c.mu.Unlock()
	e.actors[req.Actor] = struct{}{}
	c.localEdits.Add(1)
	c.changes.fire()
	return nil
}

// holdCopy makes e the copy of its block that the process's reads and
// other writes find, for an edit about to be made to it in write-back
// mode, until release. Caller holds e.mu.
//
// An edit reaches e through a lookup and then e's lock. If e left the
// cache in between while it had no pending edits (so onEvict did not keep
// it), a read may have loaded another copy; an edit made to e would then
// be read by no one here until the flush, and its limit checked without
// the other copy's pending edits. So e is claimed (a load takes a claimed
// copy back rather than read another) and, when no copy is cached, put
// back; a cached copy with nothing pending and no edit under way is
// replaced by e (the edit's transaction brings e up to the block's row,
// and a holder of the other copy that writes to it comes here in turn).
// A copy with pending edits, or with an edit under way, is flushed first
// (waiting for that edit), so that the durable row holds its edits and
// e's transaction reads them, and then replaced. e is claimed before the
// flushed copy's lock is let go: the writers queued on that lock would
// otherwise claim it again first, one after another, and e would find it
// busy at every try. On error nothing is claimed and release does
// nothing.
func (c *Store) holdCopy(ctx context.Context, e *entry) (release func(), err error) {
	release, other, err := c.claimCopy(e)
	for try := 0; other != nil && err == nil; try++ {
		if try == maxStaleCopies {
			err = fmt.Errorf("%w (%d flushes)", ErrBlockBusy, maxStaleCopies)
			break
		}
		release, other, err = c.claimAfterFlushing(ctx, e, other)
	}
	if err != nil {
		return func() {}, err // nothing claimed: nothing to let go
	}
	return release, nil
}

// claimAfterFlushing persists other, a copy of e's block, and tries to
// claim e while other's lock is still held. Caller holds e.mu (the order
// e.mu, then other.mu, is holdCopy's). The events other's lock held back
// fire at e's unlock: a subscriber that reads the block would find e,
// cached again and stale, and wait for e's lock on its own goroutine.
func (c *Store) claimAfterFlushing(ctx context.Context, e, other *entry) (release func(), next *entry, err error) {
	other.lock()
	defer func() { e.heldEvents = append(e.heldEvents, other.unlockHeld()) }()
	if err := c.persistLocked(ctx, other); err != nil {
		return nil, nil, fmt.Errorf("flush of the block's other copy: %w", err)
	}
	return c.claimCopy(e)
}

// claimCopy is one try of holdCopy: it claims e, or returns the other
// copy to flush first. Caller holds e.mu.
func (c *Store) claimCopy(e *entry) (release func(), other *entry, err error) {
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	// (Other copies are cached, and claimed, under copyMu only.)
	cur, cached := c.lru.Peek(e.id)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, nil, ErrClosed
	}
	if !cached || cur != e {
		if others := c.copiesLocked(e.id, e.incarnation, e); len(others) > 0 {
			other = others[0]
		}
	}
	if other == nil {
		c.claimed[e] = struct{}{}
	}
	c.mu.Unlock()
	if other != nil {
		if !cached {
			c.cacheAdd(other.id, other) // the copy with the edits comes back
		}
		return nil, other, nil
	}
	release = func() {
		c.mu.Lock()
		delete(c.claimed, e)
		c.mu.Unlock()
	}
	switch {
	case cached && cur == e:
	case cached && cur.incarnation != e.incarnation:
		// e's block was deleted and its id given to another: the edit's
		// transaction finds it so.
	default:
		// No copy cached, or one with nothing pending: e takes its
		// place, stale until checked (it may have missed notifications
		// while out).
		e.stale.Store(true)
		c.cacheAdd(e.id, e)
		c.remember(e)
	}
	return release, nil, nil
}

// maxStaleCopies bounds holdCopy's flushes of other copies of a block
// that keep taking edits. Each is a write transaction at most; with 24
// writers on a block evicted all the time, a bound of 8 was reached
// about once in 100,000 edits.
const maxStaleCopies = 64

// pendingActors names who made e's pending changes ("system" when no
// agent did), for their update row. Caller holds e.mu.
func (e *entry) pendingActors() string {
	actors := make([]string, 0, len(e.actors))
	for a := range e.actors {
		actors = append(actors, a)
	}
	sort.Strings(actors)
	if len(actors) == 0 {
		return "system"
	}
	return strings.Join(actors, ",")
}

// persist writes e's pending changes (write-back edits, or a system change
// such as the containers a reconfiguration adds) as one update row, after
// applying whatever other writers added since, in one IMMEDIATE
// transaction. On failure the changes stay pending (and the block dirty),
// so Flush or Close retries them; nothing is dropped, except the edits
// of a block deleted since (by this store or another), which have
// nowhere to go (the error then wraps ErrNotFound).
func (c *Store) persist(ctx context.Context, e *entry) error {
	e.lock()
	defer e.unlock()
	return c.persistLocked(ctx, e)
}

// persistLocked is persist for a caller holding e's lock.
func (c *Store) persistLocked(ctx context.Context, e *entry) error {
	if _, _, _, broken := e.freshness(); broken != nil {
		return broken
	}
	// Caught up before the write lock, in a read transaction: a switch to
	// another process's new epoch carries the pending edits across the
	// archived epochs (switchEpoch), in proportion to their history, and
	// inside the lock every other writer (on SQLite, of any block) would
	// wait for it. A failure here is met again, and reported, inside.
	c.catchUpLocked(ctx, e)
	if _, _, _, broken := e.freshness(); broken != nil {
		return broken
	}
	var p pendingWrite
	pre := c.pendingAhead(e)
	err := c.write(ctx, blockLock(e.id), func(ctx context.Context, tx *sql.Tx) (err error) {
		_, p, err = c.writePendingFrom(ctx, tx, e, pre)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		// The block's row is gone, or holds a block made since: the
		// delete came after these edits and outlives them.
		c.mu.Lock()
		_, was := c.dirty[e]
		delete(c.dirty, e)
		c.mu.Unlock()
		if was {
			c.log.Warn("pending edits of a deleted block dropped", "block", e.label, "owner", e.owner)
		}
		return err
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		return fmt.Errorf("%w: block %q of agent %q: %w", ErrPersist, e.label, e.owner, c.closedMeanwhile(err))
	}
	if p.heads == nil {
		c.mu.Lock()
		delete(c.dirty, e)
		c.mu.Unlock()
		return nil
	}
	c.committed(ctx, e, p.seq, p.heads, p.compact)
	return nil
}

// pendingWrite is an update row writePending wrote: edits that were
// pending in the document (write-back edits, a reconfiguration's
// containers). heads is nil when there were none.
type pendingWrite struct {
	seq     int64
	heads   []string
	compact compaction
}

// writePending brings e up to date inside the write transaction and writes
// whatever edits are pending in its document as the block's next update
// row. It returns the block's row as of that write. Caller holds e.mu.
func (c *Store) writePending(ctx context.Context, tx *sql.Tx, e *entry) (blockRow, pendingWrite, error) {
	return c.writePendingFrom(ctx, tx, e, nil)
}

// pendingRow is a block's pending changes and rendering, read before the
// write lock (pendingAhead) on the state the entry last saw.
type pendingRow struct {
	lastSeq, epoch, metaVer int64
	data                    []byte
	heads                   []string
	rendered                string
}

// pendingAhead reads e's pending changes, its heads and its rendering
// before the write lock is taken: reading the changes (a walk over the
// history when there are many) and rendering cost in proportion to the
// block and its edits, and inside the lock every other writer (on SQLite,
// of any block) would wait for them. writePendingFrom keeps them only if
// the block's row shows no other write since. nil: nothing pending, or
// the read failed (done again under the lock). Caller holds e.mu.
func (c *Store) pendingAhead(e *entry) *pendingRow {
	var pr pendingRow
	pr.lastSeq, pr.epoch, pr.metaVer, _ = e.freshness()
	var err error
	if pr.data, pr.heads, err = e.doc.PendingChanges(); err != nil || len(pr.data) == 0 {
		return nil
	}
	pr.rendered = e.doc.Render()
	if c.afterAhead != nil {
		c.afterAhead()
	}
	return &pr
}

// writePendingFrom is writePending with the changes pre read ahead (nil:
// none): kept when the row is still at the sequence, epoch and metadata
// version pre read them at (no other writer came between, and e.mu held
// since kept the document as it was), else read again on the fresh
// state.
func (c *Store) writePendingFrom(ctx context.Context, tx *sql.Tx, e *entry, pre *pendingRow) (blockRow, pendingWrite, error) {
	var p pendingWrite
	r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+stateCols+` FROM blocks WHERE id = ?`, e.id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, p, notFound("block %q of agent %q was deleted", e.label, e.owner)
	}
	if err != nil {
		return r, p, err
	}
	if pre != nil && (r.lastSeq != pre.lastSeq || r.epoch != pre.epoch || r.metaVer != pre.metaVer) {
		pre = nil // another writer came between: the fresh state decides
	}
	if err := c.refresh(ctx, tx, e, r); err != nil {
		return r, p, err
	}
	var (
		data     []byte
		heads    []string
		rendered string
	)
	if pre != nil {
		data, heads, rendered = pre.data, pre.heads, pre.rendered
	} else {
		if data, heads, err = e.doc.PendingChanges(); err != nil || len(data) == 0 {
			return r, p, err
		}
		rendered = e.doc.Render()
	}
	seq, compact, err := c.insertUpdate(ctx, tx, e, r, data, e.pendingActors(), rendered, strings.Join(heads, ","))
	if err != nil {
		return r, p, err
	}
	r.lastSeq, r.historyBytes = seq, r.historyBytes+int64(len(data))
	if compact != 0 {
		r.snapshotSeq = seq
	}
	return r, pendingWrite{seq: seq, heads: heads, compact: compact}, nil
}
