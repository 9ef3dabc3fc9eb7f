package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/engram-go/engram/blocks"
)

// A block's epochs: loading an automerge document costs every operation
// it ever held, so a block rewritten for months would load slower every
// day. Once the changes of its current epoch outweigh its content
// (Options.HistoryLimit), a new epoch is started behind the write that
// compacted it (startRebase): a fresh document holding only the current
// value (blocks.Rebase) becomes
// the block's snapshot, the old document moves to block_archive, the
// epoch number is bumped and the update rows are cleared, in one
// transaction. Every other replica sees the new epoch number on its next
// freshness check and switches its document in place (switchEpoch), so
// views keep working; changes made on an older epoch are never merged into
// the new document (that would duplicate content): the store re-applies its
// own unflushed edits, merged with the archived epochs they cross, as a
// value difference (blockseam.Replica.Reapply), and
// MergeChanges refuses an external peer's (blocks.ErrUnrelated).

// compaction is what a write's compaction did.
type compaction int

const (
	compactOnly   compaction = iota + 1 // the updates were folded into the snapshot
	compactRebase                       // ... and the history is due for a new epoch
)

// rebaseGain is how many times the cost of loading a fresh document the
// cost of loading a block's history must be before a rebase pays for
// itself.
const rebaseGain = 4

// changeOverhead is what one change adds to the history's bytes besides
// the content it inserts (its actor, sequence, dependencies, time and
// message), rounded down from what was measured for appends of 1-200
// characters (docs/performance.md). changeLoadChars is what loading one
// change costs, in characters loaded: the measured time per change over
// the time per character on automerge-go (docs/performance.md).
const (
	changeOverhead  = 128
	changeLoadChars = 8
)

// historyDue reports whether an epoch holding history bytes of changes,
// for a block whose full rendering is size bytes, is worth a rebase: it
// must be over Options.HistoryLimit and at least rebaseGain times the
// block's size, and so must what loading it costs. That cost is estimated
// in bytes of text from the history's change count (changes, asked for
// only when the bytes qualify): inserted ≈ history − changes·changeOverhead
// bytes of text were loaded, deleted ≈ inserted − size of them again as
// deletions, plus changeLoadChars per change. So a block that only grows,
// by appends of a line or more, does not qualify: its history is mostly
// its content (appending a line at a time costs a small multiple of its
// size to load), and a rebase would rebuild all of it to gain little; one
// rewritten in place (deleted text stays in the history) does. Bytes on
// both sides, so text of several bytes a character counts the same.
func (c *Store) historyDue(history int64, size int, changes func() (int, error)) bool {
	lim := c.opts.HistoryLimit
	if lim < 0 || history <= int64(lim) || history < rebaseGain*int64(size) {
		return false
	}
	n, err := changes()
	if err != nil {
		return true // the bytes qualify; the estimate cannot say otherwise
	}
	inserted := max(history-int64(n)*changeOverhead, 0)
	deleted := max(inserted-int64(size), 0)
	return inserted+deleted+int64(n)*changeLoadChars >= rebaseGain*int64(size)
}

// startRebase starts a new epoch for e, which the caller just compacted
// and found due for one, behind the write: the write returns at once, and
// a goroutine builds the fresh document without the block's lock (in
// proportion to the block's size), then takes the lock to catch the
// document up with the writes made meanwhile and switch (see
// rebaseBehind). Caller holds e.mu.
func (c *Store) startRebase(e *entry) {
	if e.rebasing {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	e.rebasing = true
	_, epoch, _, _ := e.freshness()
	done := make(chan struct{})
	if c.rebasing == nil {
		c.rebasing = map[chan struct{}]struct{}{}
	}
	c.rebasing[done] = struct{}{}
	go func() {
		finished := sync.OnceFunc(func() {
			c.mu.Lock()
			delete(c.rebasing, done)
			c.mu.Unlock()
			close(done)
		})
		defer finished()
		err := c.rebaseBehind(e, epoch, finished)
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrNotFound) {
			c.log.Error("rebase onto a new epoch failed; the block keeps its history", "block", e.label, "owner", e.owner, "err", err)
		}
	}()
}

// rebaseBehind builds e's next epoch after due, the epoch its write found
// due for one, from its value as of now, outside its lock, and switches to
// it under the lock (switchEpochTo). It stops if the block has left due
// (another process's rebase, or Block.Rebase, started one meanwhile: the
// new epoch has little history), and switches only if the block's epoch
// and metadata are still those the build started from: another process's
// rebase or a reconfiguration during the build leaves it for a later
// compaction. finished is called once the work is done, before the
// block's held-back events fire as its lock is released: a subscriber may
// call Flush or Close, which wait for it.
func (c *Store) rebaseBehind(e *entry, due int64, finished func()) error {
	if !c.lockUnlessClosed(e) {
		return ErrClosed
	}
	_, epoch, metaVer, broken := e.freshness()
	if broken != nil || epoch != due {
		e.rebasing = false
		e.unlockThen(finished)
		return nil
	}
	r := e.doc.StartRebase()
	e.unlock()
	built := r.Build()
	if h := c.rebaseBuilt; h != nil {
		h(e)
	}
	if !c.lockUnlessClosed(e) {
		return ErrClosed
	}
	defer e.unlockThen(finished)
	e.rebasing = false
	if built != nil {
		return built
	}
	if _, ep, mv, broken := e.freshness(); broken != nil || ep != epoch || mv != metaVer {
		return nil
	}
	return c.switchEpochTo(context.Background(), e, r, epoch, metaVer)
}

// switchEpochTo catches r's fresh document up with e, then in one
// transaction writes e's pending edits, compacts it (so the snapshot
// archived holds the whole epoch) and, if its row is still on epoch and
// metaVer, archives the epoch and makes the fresh document the next one;
// then e's document follows. Caller holds e.mu.
func (c *Store) switchEpochTo(ctx context.Context, e *entry, r *blocks.Rebase, epoch, metaVer int64) error {
	// Caught up before the transaction: e.mu keeps the document as it is
	// unless the transaction's refresh brings another process's writes,
	// and then the heads move and the switch waits for a later compaction.
	doc, data, err := r.Finish()
	if err != nil {
		return err
	}
	heads := e.doc.Heads()
	fresh := epochDoc{doc: doc, data: data, heads: strings.Join(doc.Heads(), ",")}
	// The old epoch's snapshot (the whole epoch's history) is saved here,
	// under the block's lock only: inside the transaction its cost would
	// hold every writer of the store (SQLite has one). compactNowSaved
	// saves again inside if the refresh moved the document.
	snap, err := e.doc.Save()
	if err != nil {
		snap = nil
	}
	var p pendingWrite
	switched := false
	err = c.write(ctx, blockLock(e.id), func(ctx context.Context, tx *sql.Tx) error {
		row, err := c.compactNowSaved(ctx, tx, e, &p, snap, heads)
		if err != nil {
			return err
		}
		if row.epoch != epoch || row.metaVer != metaVer || !slices.Equal(e.doc.Heads(), heads) {
			return nil
		}
		switched = true
		return c.archiveEpoch(ctx, tx, e, fresh)
	})
	if err != nil {
		return fmt.Errorf("memory: rebase block %q of %q: %w", e.label, e.owner, err)
	}
	p.done(c, e)
	if !switched {
		return nil
	}
	return c.enterEpoch(e, epoch+1, fresh)
}

// lockUnlessClosed takes e's lock as a write does, unless the store
// closes first (Close waits for the goroutines that call it, and may be
// called by code that holds e's lock). The lock is waited for, not tried:
// a block its writers keep busy hands its lock from one waiter to the
// next, and a caller that only tried it could wait for as long as they
// kept writing. Abandoned at close, the wait goes on in a goroutine of its
// own that lets the lock go as soon as it has it.
func (c *Store) lockUnlessClosed(e *entry) bool {
	closing := c.closedSignal()
	select {
	case <-closing:
		return false
	default:
	}
	got := make(chan struct{})
	go func() {
		e.mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		e.replica.Hold()
		return true
	case <-closing:
		go func() {
			<-got
			e.mu.Unlock()
		}()
		return false
	}
}

// waitRebases waits until the new epochs being started behind writes
// when it is called (see startRebase) are done, or ctx ends. Epochs
// started later are not waited for: blocks that keep earning new epochs
// would keep Flush waiting.
func (c *Store) waitRebases(ctx context.Context) error {
	c.mu.Lock()
	pending := make([]chan struct{}, 0, len(c.rebasing))
	for done := range c.rebasing {
		pending = append(pending, done)
	}
	c.mu.Unlock()
	for _, done := range pending {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// epochDoc is a block's next epoch: the saved fresh document and its heads.
type epochDoc struct {
	doc   *blocks.Document // what data loads to; enterEpoch adopts it
	data  []byte
	heads string
}

// freshEpoch builds the document of e's next epoch from its current value.
// Caller holds e.mu.
func (c *Store) freshEpoch(e *entry) (epochDoc, error) {
	// Rebased refuses a document that reads back another value, so the
	// rendering (a function of value and metadata) is the same bytes.
	fresh, err := e.doc.Rebased()
	if err != nil {
		return epochDoc{}, err
	}
	data, err := fresh.Save()
	if err != nil {
		return epochDoc{}, err
	}
	return epochDoc{doc: fresh, data: data, heads: strings.Join(fresh.Heads(), ",")}, nil
}

// archiveEpoch moves the block's snapshot (its whole current epoch: the
// caller compacted it in this transaction or checked it is compacted) to
// block_archive and makes fresh the snapshot of the next epoch.
func (c *Store) archiveEpoch(ctx context.Context, tx *sql.Tx, e *entry, fresh epochDoc) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO block_archive (block_id, epoch, snapshot, snapshot_crc, heads, last_seq, archived_at)
		SELECT b.id, b.epoch, s.snapshot, s.snapshot_crc, b.heads, b.last_seq, ?
		FROM blocks b JOIN block_snapshots s ON s.block_id = b.id WHERE b.id = ?`, c.nanos(), e.id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE blocks SET epoch = epoch + 1, heads = ?, history_bytes = ? WHERE id = ?`,
		fresh.heads, len(fresh.data), e.id); err != nil {
		return err
	}
	if err := putSnapshot(ctx, tx, e.id, fresh.data); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM block_updates WHERE block_id = ?`, e.id)
	return err
}

// enterEpoch switches e's document to fresh, now durable as epoch. Caller
// holds e.mu.
func (c *Store) enterEpoch(e *entry, epoch int64, fresh epochDoc) error {
	defer c.changes.fire() // a new epoch moves BlocksStamp
	if _, err := e.replica.Adopt(fresh.doc); err != nil {
		// The database is on the new epoch and this entry cannot follow:
		// the next access loads the block afresh.
		return c.breakEntry(e, err)
	}
	e.set(func(e *entry) { e.epoch = epoch })
	c.log.Debug("rebased block onto a new epoch", "block", e.label, "owner", e.owner, "epoch", epoch, "bytes", len(fresh.data))
	return nil
}

// switchEpoch moves e's document to the block's current epoch (another
// writer rebased it; r is the row read in q's transaction): the new
// epoch's snapshot replaces the document in place, and the updates after
// it follow in refresh. Edits this replica had not persisted (write-back)
// are re-applied at once, on the snapshot, as one pending change: nothing
// between the switch and the re-apply can fail and drop them, and the
// epoch's later updates merge with that change like any concurrent edit.
// Caller holds e.mu.
func (c *Store) switchEpoch(ctx context.Context, q querier, e *entry, r blockRow) error {
	var (
		epoch, snapSeq int64
		snap           []byte
		crc            sql.NullInt64
	)
	err := q.QueryRowContext(ctx, `SELECT b.epoch, b.snapshot_seq, s.snapshot, s.snapshot_crc
		FROM blocks b LEFT JOIN block_snapshots s ON s.block_id = b.id WHERE b.id = ?`, e.id).Scan(&epoch, &snapSeq, &snap, &crc)
	if err != nil {
		return fmt.Errorf("memory: block %q of %q: load its new epoch: %w", e.label, e.owner, err)
	}
	if epoch != r.epoch {
		return fmt.Errorf("memory: block %q of %q was rebased again while it was read; retry", e.label, e.owner)
	}
	if err := checkCRC(snap, crc); err != nil {
		return c.breakEntry(e, corrupt(e.owner, e.label, fmt.Sprintf("epoch %d snapshot", epoch), err))
	}
	from := e.epoch
	carried, err := e.replica.Reset(snap)
	if err != nil {
		return c.breakEntry(e, corrupt(e.owner, e.label, fmt.Sprintf("epoch %d snapshot", epoch), err))
	}
	e.set(func(e *entry) { e.epoch, e.lastSeq = epoch, snapSeq })
	var archived [][]byte
	if carried != nil {
		// The epochs the edits were carried across: merged with them, the
		// edits meet the other writers' changes as changes, not as a
		// difference of values (blockseam.Replica.Reapply). Unreadable,
		// they are left out and the difference of values serves.
		if archived, err = c.archivedEpochs(ctx, q, e.id, from, epoch); err != nil {
			c.log.Warn("reading the archived epochs to carry unflushed edits across failed; they are re-applied as a difference of values", "block", e.label, "owner", e.owner, "err", err)
			archived = nil
		}
	}
	if err := e.replica.Reapply(carried, archived); err != nil {
		return c.breakEntry(e, fmt.Errorf("memory: block %q of %q was rebased while this process held unflushed edits, and they could not be re-applied on the new epoch (they are lost): %w", e.label, e.owner, err))
	}
	return nil
}

// archivedEpochs returns the saved documents of block id's epochs from
// up to (not including) to, oldest first, checksums verified, read in q's
// transaction; an error if one is missing.
func (c *Store) archivedEpochs(ctx context.Context, q querier, id, from, to int64) ([][]byte, error) {
	var out [][]byte
	err := archivesIn(ctx, q, id, from, to, false, func(ep int64, snap []byte) (bool, error) {
		if want := from + int64(len(out)); ep != want {
			return false, fmt.Errorf("archived epoch %d is missing", want)
		}
		out = append(out, snap)
		return true, nil
	})
	if err == nil && int64(len(out)) != to-from {
		err = fmt.Errorf("archived epochs %d to %d: %d of them found", from, to-1, len(out))
	}
	return out, err
}

// breakEntry marks e unservable (err says why) and drops it from the cache.
func (c *Store) breakEntry(e *entry, err error) error {
	e.set(func(e *entry) { e.broken = err })
	c.lru.Remove(e.id)
	return err
}

// rebaseBlock implements [Block.Rebase]. Compaction past
// Options.HistoryLimit builds the fresh document outside the write lock;
// rebaseBlock builds it inside, so it always switches.
func (c *Store) rebaseBlock(ctx context.Context, agent, label string) error {
	e, err := c.entryFor(ctx, agent, label)
	if err != nil {
		return err
	}
	e.lock()
	defer e.unlock()
	var (
		epoch int64
		fresh epochDoc
		p     pendingWrite
	)
	err = c.write(ctx, blockLock(e.id), func(ctx context.Context, tx *sql.Tx) error {
		r, err := c.compactNow(ctx, tx, e, &p)
		if err != nil {
			return fmt.Errorf("memory: rebase block %q: %w", label, err)
		}
		if fresh, err = c.freshEpoch(e); err != nil {
			return fmt.Errorf("memory: rebase block %q: %w", label, err)
		}
		epoch = r.epoch + 1
		return c.archiveEpoch(ctx, tx, e, fresh)
	})
	if err != nil {
		return err
	}
	p.done(c, e)
	return c.enterEpoch(e, epoch, fresh)
}

// done records the row compactNow wrote once its transaction committed
// (the caller compacted, and rebases if it means to). Caller holds e.mu.
func (p pendingWrite) done(c *Store, e *entry) {
	if p.heads != nil {
		c.committed(context.Background(), e, p.seq, p.heads, 0)
	}
}

// compactNow writes e's pending edits (writePending: the snapshot never
// holds a change no row recorded) and folds every update into the
// snapshot, inside the write transaction. It returns the block's row as of
// the compacted state. Caller holds e.mu.
func (c *Store) compactNow(ctx context.Context, tx *sql.Tx, e *entry, p *pendingWrite) (blockRow, error) {
	return c.compactNowSaved(ctx, tx, e, p, nil, nil)
}

// compactNowSaved is compactNow with e's document saved already (snap,
// when its heads were heads; nil: saved here). The snapshot is used only
// if the document still has those heads once the transaction brought it
// up to date.
func (c *Store) compactNowSaved(ctx context.Context, tx *sql.Tx, e *entry, p *pendingWrite, snap []byte, heads []string) (blockRow, error) {
	r, w, err := c.writePending(ctx, tx, e)
	if err != nil {
		return r, err
	}
	*p = w
	if r.snapshotSeq == r.lastSeq {
		return r, nil // writing the pending edits compacted already
	}
	if snap != nil && !slices.Equal(e.doc.Heads(), heads) {
		snap = nil
	}
	return r, compactSaved(ctx, tx, e, r.lastSeq, snap)
}

// archives calls f with each archived epoch of block id before epoch
// below (oldest first; newestFirst reverses the order) and its saved
// document, checksum verified, until f returns false or an error. One
// query; each snapshot is read as its row comes.
func (c *Store) archives(ctx context.Context, id, below int64, newestFirst bool, f func(epoch int64, snap []byte) (bool, error)) error {
	return archivesIn(ctx, c.rdb, id, 0, below, newestFirst, f)
}

// archivesIn is archives of the epochs from from up to below, read in q
// (a transaction's view of them).
func archivesIn(ctx context.Context, q querier, id, from, below int64, newestFirst bool, f func(epoch int64, snap []byte) (bool, error)) error {
	order := "ASC"
	if newestFirst {
		order = "DESC"
	}
	rows, err := q.QueryContext(ctx, `SELECT epoch, snapshot, snapshot_crc FROM block_archive
		WHERE block_id = ? AND epoch >= ? AND epoch < ? ORDER BY epoch `+order, id, from, below)
	if err != nil {
		return fmt.Errorf("memory: archived epochs of block %d: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var ep int64
		var snap []byte
		var crc sql.NullInt64
		if err := rows.Scan(&ep, &snap, &crc); err != nil {
			return fmt.Errorf("memory: archived epochs of block %d: %w", id, err)
		}
		if err := checkCRC(snap, crc); err != nil {
			return fmt.Errorf("%w: block %d: archived epoch %d: %w", ErrCorrupt, id, ep, err)
		}
		if more, err := f(ep, snap); err != nil || !more {
			return err
		}
	}
	return rows.Err()
}

// epochDocs is archives with each document loaded, read-only, under the
// block's current metadata.
func (c *Store) epochDocs(ctx context.Context, e *entry, below int64, newestFirst bool, f func(epoch int64, d *blocks.Document) (bool, error)) error {
	info := e.doc.Info()
	return c.archives(ctx, e.id, below, newestFirst, func(ep int64, snap []byte) (bool, error) {
		d, err := blocks.Load(info, snap, &blocks.Options{Now: c.opts.Now})
		if err != nil {
			return false, fmt.Errorf("memory: archived epoch %d of block %q of %q: %w", ep, e.label, e.owner, err)
		}
		return f(ep, d)
	})
}

// blockHistory implements [Block.History].
func (c *Store) blockHistory(ctx context.Context, agent, owner, label string) ([]blocks.Change, error) {
	e, doc, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return nil, err
	}
	// The current epoch's changes and number are read together, then the
	// archived epochs before it (a switch meanwhile only adds archives
	// after it).
	e.lock()
	_, epoch, _, _ := e.freshness()
	cur, err := doc.History()
	e.unlock()
	if err != nil {
		return nil, err
	}
	var out []blocks.Change
	err = c.epochDocs(ctx, e, epoch, false, func(ep int64, d *blocks.Document) (bool, error) {
		h, err := d.History()
		for _, ch := range h {
			ch.Epoch = ep
			out = append(out, ch)
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		// The archived documents are not managed: the store names who
		// merged their changes from elsewhere here (doc.History did for
		// the current epoch).
		by, err := c.mergedBy(ctx, e.id)
		if err != nil {
			return nil, fmt.Errorf("memory: history of block %q of %q: who merged its changes: %w", label, e.owner, err)
		}
		blocks.Attribute(out, by)
	}
	for _, ch := range cur {
		ch.Epoch = epoch
		out = append(out, ch)
	}
	return out, nil
}

// blockAt implements [Block.At]: the current epoch first, then the
// archived ones, newest first.
func (c *Store) blockAt(ctx context.Context, agent, owner, label string, heads []string) (*blocks.Document, error) {
	e, doc, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return nil, err
	}
	at, err := doc.At(heads)
	if err == nil || !errors.Is(err, blocks.ErrOutOfRange) {
		return at, err
	}
	var found *blocks.Document
	derr := c.epochDocs(ctx, e, math.MaxInt64, true, func(_ int64, d *blocks.Document) (bool, error) {
		if old, oerr := d.View(doc.Accessor(), doc.Permission()).At(heads); oerr == nil {
			found = old
			return false, nil
		}
		return true, nil
	})
	if derr != nil {
		return nil, derr
	}
	if found == nil {
		return nil, err
	}
	return found, nil
}
