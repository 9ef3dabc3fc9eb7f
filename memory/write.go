package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/blockseam"
)

// write runs fn in the backend's write transaction (see driver.Backend.Write:
// fn runs at most once, and a ctx that ends while waiting for the lock
// leaves nothing written), holding locks where the backend's writers run
// in parallel (driver.LockingWriter: PostgreSQL): the blocks and agents fn
// writes, so that their other writers wait and every check fn makes reads
// what they committed (see driver.WriteLock for the order). fn gets ctx
// without its cancellation, for its statements: once the transaction runs
// it finishes, and on SQLite a cancelled statement interrupts the
// connection, which rolls back the whole transaction — under group commit
// other callers' writes too.
func (c *Store) write(ctx context.Context, locks []driver.WriteLock, fn func(ctx context.Context, tx *sql.Tx) error) error {
	c.prepareWrites(ctx)
	wctx := context.WithoutCancel(ctx)
	if lw, ok := c.be.(driver.LockingWriter); ok {
		return lw.WriteBlocks(ctx, locks, func(tx *sql.Tx) error { return fn(wctx, tx) })
	}
	return c.be.Write(ctx, func(tx *sql.Tx) error { return fn(wctx, tx) })
}

// prepareWrites has a backend that keeps statements parsed
// (driver.TxStatements: SQLite) parse the store's common write
// statements, once, before the first write and outside its transaction
// (as Prepare asks): at Open they would cost a process that only reads
// (a cold open and first Build) about a quarter of its time. Until they
// are parsed, writes parse their statements each time, which is slower,
// not different: so a write that finds another parsing them does not
// wait for it (the parse waits for the writer connection, and the write
// must end at its context's end, as in the backend's queue), and one
// whose parse failed leaves the next try a minute away (a context that
// ended: the next write's).
func (c *Store) prepareWrites(ctx context.Context) {
	if c.writesPrepared.Load() || time.Now().UnixNano() < c.prepareRetry.Load() || !c.prepareMu.TryLock() {
		return
	}
	defer c.prepareMu.Unlock()
	if c.writesPrepared.Load() {
		return
	}
	if ts, ok := c.be.(driver.TxStatements); ok {
		if err := ts.Prepare(ctx, writeStateQuery, insertUpdateQuery, c.wq.updateRendered, c.wq.claimAhead, archivalInsertOne, archivalSupersedeSQL, archivalLinkSQL, archivalDeleteSQL, archivalMergeSQL, archivalPlaceSQL, usageQuery,
			batchStateQuery, batchInsertQuery, batchHighQuery, messageInsertQuery); err != nil {
			if ctx.Err() == nil {
				c.prepareRetry.Store(time.Now().Add(prepareRetryAfter).UnixNano())
				c.log.Warn("memory: write statements not parsed ahead; writes parse theirs meanwhile", "err", err, "retry_after", prepareRetryAfter)
			}
			return
		}
	}
	c.writesPrepared.Store(true)
}

// prepareRetryAfter is how long prepareWrites waits after a parse that
// failed before it tries again.
const prepareRetryAfter = time.Minute

// writeBlocks is write for a change that may move a BlocksStamp (blocks
// created, deleted or imported, shares granted, changed or revoked): once
// it committed, BlocksChanged's consumers are signalled. (Content writes
// signal in committed, once the cached document reflects them.)
func (c *Store) writeBlocks(ctx context.Context, locks []driver.WriteLock, fn func(ctx context.Context, tx *sql.Tx) error) error {
	err := c.write(ctx, locks, fn)
	if err == nil {
		c.changes.fire()
	}
	return err
}

// created tells other processes, after tx commits, of blocks tx created
// (see driver.LockingWriter: a block is notified with its lock, and a new block's
// writer holds its owner's). Backends without driver.LockingWriter notify, if at
// all, by themselves.
func (c *Store) created(tx *sql.Tx, ids ...int64) {
	if lw, ok := c.be.(driver.LockingWriter); ok {
		lw.NotifyAfter(tx, ids...)
	}
}

// lock takes more locks inside a write transaction (see driver.LockingWriter).
func (c *Store) lock(ctx context.Context, tx *sql.Tx, locks ...driver.WriteLock) error {
	if lw, ok := c.be.(driver.LockingWriter); ok {
		return lw.Lock(ctx, tx, locks...)
	}
	return nil
}

// blockLock and agentLock are the locks of a write to one block, or to
// what is one agent's (archival, messages, library, generation).
func blockLock(id int64) []driver.WriteLock { return []driver.WriteLock{driver.BlockLock(id)} }
func agentLock(agent string) []driver.WriteLock {
	return []driver.WriteLock{driver.AgentLock(agent)}
}

// agentLocks locks each of agents (in any order, repeats allowed).
func agentLocks(agents ...string) []driver.WriteLock {
	out := make([]driver.WriteLock, len(agents))
	for i, a := range agents {
		out[i] = driver.AgentLock(a)
	}
	return out
}

// exec runs one statement through write and returns the rows affected.
func (c *Store) exec(ctx context.Context, locks []driver.WriteLock, query string, args ...any) (int64, error) {
	var n int64
	err := c.write(ctx, locks, func(ctx context.Context, tx *sql.Tx) error {
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
func (c *Store) insertID(ctx context.Context, locks []driver.WriteLock, query string, args ...any) (int64, error) {
	var id int64
	err := c.write(ctx, locks, func(ctx context.Context, tx *sql.Tx) error { return tx.QueryRow(query, args...).Scan(&id) })
	return id, err
}

// txExec runs query in tx, through the backend's prepared statement when
// it keeps one.
func (c *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if ts, ok := c.be.(driver.TxStatements); ok {
		if st := ts.TxStmt(ctx, tx, query); st != nil {
			return st.ExecContext(ctx, args...)
		}
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQuery is txExec for a query returning rows.
func (c *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if ts, ok := c.be.(driver.TxStatements); ok {
		if st := ts.TxStmt(ctx, tx, query); st != nil {
			return st.QueryContext(ctx, args...)
		}
	}
	return tx.QueryContext(ctx, query, args...)
}

// txQueryRow is txExec for a query returning one row.
func (c *Store) txQueryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if ts, ok := c.be.(driver.TxStatements); ok {
		if st := ts.TxStmt(ctx, tx, query); st != nil {
			return st.QueryRowContext(ctx, args...)
		}
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// txRow is txQueryRow bound to tx.
func (c *Store) txRow(tx *sql.Tx) func(ctx context.Context, query string, args ...any) *sql.Row {
	return func(ctx context.Context, query string, args ...any) *sql.Row {
		return c.txQueryRow(ctx, tx, query, args...)
	}
}

// Write runs one mutation of the block for blocks.Document (entry is the
// managed document's blockseam.Writer). In write-through mode it holds the
// block's lock throughout (the database's write lock on SQLite): it
// applies whatever other writers persisted, lets the edit validate itself
// against that fresh state with the accessor's current permission, and
// commits the change in the same transaction, so limits and permissions
// hold across processes and a write is acknowledged only once it is
// durable. If anything fails the
// document rolls the edit back and the error says why. In write-back mode
// the edit applies to the cached state and persists on Flush.
func (e *entry) Write(ctx context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) (err error) {
	c := e.c
	defer func() { err = c.closedMeanwhile(err) }()
	wt, err := writeTxOf(req)
	if err != nil {
		return err
	}
	if wt.decide == nil {
		wt.decide = c.testDecide
	}
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if c.afterWrite != nil {
		defer c.afterWrite() // (after the unlock below)
	}
	if c.beforeWriteLock != nil {
		c.beforeWriteLock(e)
	}
	e.lock()
	defer e.unlock()
	defer func() {
		// A panic under the write (its transaction's, re-raised here by
		// the backend) committed nothing: the edit is taken back while e.mu
		// is still held, as for an error, or views would read it once the
		// block is let go and the block's next write would store it as
		// its own pending change.
		if p := recover(); p != nil {
			e.merged = blockseam.Merged{}
			if req.Undo != nil {
				if uerr := req.Undo(); uerr != nil {
					c.log.Error("taking back the edit of a panicked write", "block", e.label, "owner", e.owner, "err", uerr)
				}
			}
			panic(p)
		}
	}()
	if _, _, _, broken := e.freshness(); broken != nil {
		return broken
	}
	if req.Op == blocks.OpAppendLogEntry {
		// An append to a Log block may rotate entries out (RotateLog):
		// each application of the edit says anew which.
		inner := apply
		apply = func(p blocks.Permission) error { e.rotated = nil; return inner(p) }
		defer func() { e.rotated = nil }()
	}
	if c.opts.WriteBack && wt.decide == nil && req.Op != blocks.OpMerge && !(req.Op == blocks.OpAppendLogEntry && rotates(e.doc)) {
		// (An edit that carries more work, such as an approval's status,
		// is written through even in write-back mode: both or neither. So
		// is a merge: its changes are not this replica's own, so a later
		// persist, which writes only those, would never store them. So is
		// an append that may rotate log entries into archival: the
		// entries and the trim commit together.)
		return c.writeBack(ctx, e, req, apply)
	}
	if c.opts.WriteBack {
		// Written through, but beside write-back edits: made to the copy
		// they are made to, with another copy's pending ones flushed
		// first, so that the limit is checked with them (holdCopy).
		release, err := c.holdCopy(ctx, e)
		if err != nil {
			return fmt.Errorf("memory: %s on block %q: %w", req.Op, e.label, err)
		}
		defer release()
	}
	var (
		applyErr error
		heads    []string
		seq      int64
		compact  compaction
		// aheadHeads are the document's heads with the edit applied
		// ahead on epoch aheadEpoch, once its claim failed (see below).
		aheadHeads []string
		aheadEpoch int64
		earlier    bool // an earlier try committed the edit (committedEarlier)
	)
	pre := c.applyAhead(e, req, wt, apply)
	if pre != nil && pre.refused != nil {
		if c.afterRefusedAhead != nil {
			c.afterRefusedAhead()
		}
		if c.refusalStands(ctx, e, req, pre) {
			return pre.refused
		}
		pre = nil // judged again on the fresh state, under the lock
	}
	claimed := false
	if pre != nil {
		// The edit applied ahead, claimed and written in one round trip
		// where the backend can (nothing else to write, the block's lock
		// free); otherwise on the ordinary path below.
		if claimed, err = c.claimOnce(ctx, e, req, pre); claimed {
			e.aheadPenalty -= e.aheadPenalty / 8
			heads, seq = pre.heads, pre.seq
		}
	}
	// Once the transaction starts it runs to the end whatever ctx does.
	// The block's lock: its other writers (in any process) wait, so the
	// state read below is the last committed one.
	if err == nil && !claimed {
		err = c.write(ctx, blockLock(e.id), func(ctx context.Context, tx *sql.Tx) error {
			if pre != nil {
				ok, err := c.claimAhead(ctx, tx, e, req, pre)
				if err != nil {
					return err
				}
				if ok {
					e.aheadPenalty -= e.aheadPenalty / 8
					heads = pre.heads
					if seq, compact, err = c.insertAhead(ctx, tx, e, pre, req.Actor); err != nil {
						return err
					}
					return c.insertRotated(ctx, tx, e)
				}
				// Another writer (or a permission or schema change, or a
				// deletion) came between: take the edit back and apply it on
				// the fresh state, and apply this block's next edits under
				// the lock for a while.
				aheadHeads, aheadEpoch = pre.heads, pre.epoch
				pre = nil
				e.aheadPenalty = min(max(2*e.aheadPenalty, 64), 4096)
				e.aheadSkip = e.aheadPenalty
				if err := req.Undo(); err != nil {
					return err
				}
			}
			r, perm, err := c.writeState(ctx, c.txRow(tx), e, req)
			if err != nil {
				return err
			}
			if err := c.refresh(ctx, tx, e, r); err != nil {
				return err
			}
			if aheadHeads != nil {
				// What came between may be this very edit: an earlier try
				// committed it though its connection reported otherwise
				// (a one-trip write cut by a pooler's query timeout while
				// the server went on). Applied again it would be there
				// twice; it is durable, so the write is done.
				done, err := c.committedEarlier(ctx, tx, e, r.epoch, aheadEpoch, aheadHeads)
				if err != nil {
					return err
				}
				if earlier = done; done {
					heads = nil
					return nil
				}
			}
			if err := perm.err; err != nil {
				applyErr = err
				return err
			}
			if applyErr = apply(perm.p); applyErr != nil {
				return applyErr
			}
			if wt.decide != nil {
				if applyErr = wt.decide(tx); applyErr != nil {
					return applyErr
				}
			}
			if err := c.insertRotated(ctx, tx, e); err != nil {
				return err
			}
			var data []byte
			if data, heads, err = e.doc.PendingChanges(); err != nil {
				return err
			}
			merged := e.merged
			if len(merged.Data) > 0 {
				// Changes from an external peer (MergeChanges) are not this
				// replica's own, so PendingChanges leaves them out; they go
				// into the same row (concatenated chunks load as one).
				e.merged = blockseam.Merged{}
				data = append(merged.Data, data...)
			}
			if len(data) == 0 {
				heads = nil
				return nil // nothing changed: nothing to write
			}
			actors := req.Actor
			if len(e.actors) > 0 {
				// Write-back edits still pending go into this row too.
				e.actors[req.Actor] = struct{}{}
				actors = e.pendingActors()
			}
			seq, compact, err = c.insertUpdate(ctx, tx, e, r, data, actors, e.doc.Render(), strings.Join(heads, ","))
			if err != nil {
				return err
			}
			// Their commit messages are the peer's: the history names the
			// agent that merged them, from this record.
			return c.recordMerged(ctx, tx, e, merged.Hashes, req.Actor)
		})
	}
	e.merged = blockseam.Merged{}
	if err != nil && req.Undo != nil {
		// Take the edit back while e.mu is still held: once it is released,
		// a reader may catch the document up with other writers' changes,
		// and a rollback to the heads before the edit would drop those too.
		if uerr := req.Undo(); uerr != nil {
			err = fmt.Errorf("%w (and taking the edit back failed: %v)", err, uerr)
			if applyErr != nil {
				applyErr = fmt.Errorf("%w (and taking the edit back failed: %v)", applyErr, uerr)
			}
		}
	}
	if applyErr != nil {
		return applyErr
	}
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, ErrQuota) {
			// (ErrQuota: the entries a Log append rotates out would take
			// the owner past its quota; a refusal, not a failure to persist.)
			return err
		}
		return fmt.Errorf("%w: %s on block %q of agent %q: %w", ErrPersist, req.Op, e.label, e.owner, err)
	}
	if heads == nil {
		if earlier {
			// The catch-up that loaded the edit told the block's
			// subscribers (as another writer's change); the store's own
			// listeners and the embedder hear of it as of any write.
			c.changes.fire()
			c.wakeEmbedder()
		}
		return nil
	}
	c.committed(ctx, e, seq, heads, compact)
	return nil
}

// committedEarlier reports whether the store holds an edit applied ahead
// on epoch aheadEpoch of e's block, whose heads (hex change hashes) it
// gave the document: the edit's own change and heads the document had.
// The change is content-addressed (its actor, sequence, dependencies and
// operations), so a store that holds it holds this edit, committed by an
// earlier try of the same write. e's document, just caught up in tx, is
// of epoch epoch; when a rebase began a new one since the edit, the
// change is in the archived epoch's history if anywhere (a rebase waits
// for the block's lock, so it archived whatever the earlier try
// committed).
func (c *Store) committedEarlier(ctx context.Context, tx *sql.Tx, e *entry, epoch, aheadEpoch int64, heads []string) (bool, error) {
	holds := func(d *blocks.Document) bool {
		_, _, err := d.ChangesSince(heads)
		return err == nil
	}
	if epoch == aheadEpoch {
		return holds(e.doc), nil
	}
	found := false
	err := archivesIn(ctx, tx, e.id, aheadEpoch, aheadEpoch+1, false, func(_ int64, snap []byte) (bool, error) {
		d, err := blocks.Load(e.doc.Info(), snap, &blocks.Options{Now: c.opts.Now})
		if err != nil {
			return false, fmt.Errorf("memory: archived epoch %d of block %q of %q: %w", aheadEpoch, e.label, e.owner, err)
		}
		found = holds(d)
		return false, nil
	})
	return found, err
}

// writeTx is what a block write's transaction does besides storing the
// edit, asked for by the write's caller and passed on explicitly to what
// needs it. The one caller that asks is ApproveProposal, through the view
// it applies the proposal on (blocks.Document.Approved), which hands it to
// entry.Write as req.Decision.
type writeTx struct {
	// decide records the approved proposal's status, in the transaction,
	// after the edit applied: the write commits both or neither.
	decide func(tx *sql.Tx) error
}

// writeTxOf is the writeTx req's caller asked for (none when
// req.Decision is nil). A decision this store did not make is refused
// rather than dropped: the caller meant it to commit with the edit.
func writeTxOf(req blockseam.WriteRequest) (writeTx, error) {
	switch d := req.Decision.(type) {
	case nil:
		return writeTx{}, nil
	case *writeTx:
		return *d, nil
	default:
		return writeTx{}, fmt.Errorf("%w: %s on block %q: the approved view's decision is a %T, not one this store made", ErrInvalidArgument, req.Op, req.Label, req.Decision)
	}
}

// sharePerm is an accessor's current permission on a block, or why it has
// none.
type sharePerm struct {
	p   blocks.Permission
	err error
}

const (
	writeStateQuery = `SELECT ` + stateCols + `,
		(SELECT permission FROM shares WHERE block_id = blocks.id AND agent = ?) FROM blocks WHERE id = ?`
	insertUpdateQuery = `INSERT INTO block_updates (block_id, seq, epoch, actor, data, crc, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
	// updateRenderedQuery stores a write's rendering and heads; %s is
	// where padSet goes on SQLite.
	updateRenderedQuery = `UPDATE blocks SET last_seq = ?, rendered = ?, heads = ?, updated_at = ?, history_bytes = history_bytes + ?%s WHERE id = ?`
	// claimAheadQuery is updateRenderedQuery guarded by what an edit applied
	// ahead of the lock assumed (see claimAhead): the row's sequence, epoch
	// and metadata version, and the accessor's permission — the owner's on
	// the row, anyone else's on its share — unless it is a system write.
	claimAheadQuery = `UPDATE blocks SET last_seq = ?, rendered = ?, heads = ?, updated_at = ?, history_bytes = history_bytes + ?%s
		` + claimGuard + `
		RETURNING snapshot_seq, history_bytes`
	// claimGuard is what an edit applied ahead assumed of the block's row
	// (claimAheadQuery, claimOnceQuery).
	claimGuard = `WHERE id = ? AND incarnation = ? AND last_seq = ? AND epoch = ? AND meta_ver = ? AND CASE
			WHEN ? THEN TRUE
			WHEN owner = ? THEN permission = ?
			ELSE EXISTS (SELECT 1 FROM shares WHERE block_id = blocks.id AND agent = ? AND permission = ?) END`

	// claimOnceQuery is claimAheadQuery and insertUpdateQuery in one
	// statement (for driver.OneTripWriter: the write's only one), which
	// also claims nothing when the write is due to compact (see
	// compactIfDue: the update's sequence minus the snapshot's reaches
	// the compaction interval), so the compaction stays on the ordinary
	// path. The update row is written only when the claim is.
	claimOnceQuery = `WITH claim AS (UPDATE blocks SET last_seq = ?, rendered = ?, heads = ?, updated_at = ?, history_bytes = history_bytes + ?
		` + claimGuard + `
			AND last_seq + 1 - snapshot_seq < ?
		RETURNING id, last_seq, epoch, updated_at, snapshot_seq, history_bytes),
	row AS (INSERT INTO block_updates (block_id, seq, epoch, actor, data, crc, created_at)
		SELECT id, last_seq, epoch, ?::text, ?::bytea, ?::bigint, updated_at FROM claim)
	SELECT snapshot_seq, history_bytes FROM claim`

	// padSet keeps a large block's row the same size when its rendering
	// grows or shrinks a little (SQLite only; see padArgs). SQLite rewrites
	// every page of a row whose size changes, but overwrites a row of
	// unchanged size in place, writing only the pages whose bytes differ:
	// with the slack in blocks.pad (zeros after the other columns) taking
	// up the difference, an append to a 140k-character block writes a few
	// pages to the WAL instead of the whole row. The right-hand sides read the
	// row's old values, and octet_length reads no text. Out of slack (or
	// with too much), the pad is made anew at an eighth of the rendering,
	// and that one write rewrites the row. PostgreSQL writes a new row
	// version on every update anyway, so it has no pad.
	padSet = `, pad = CASE WHEN ? THEN CASE
			WHEN COALESCE(octet_length(pad), 0) + octet_length(rendered) + octet_length(heads) - ? BETWEEN 0 AND ?
			THEN zeroblob(COALESCE(octet_length(pad), 0) + octet_length(rendered) + octet_length(heads) - ?)
			ELSE zeroblob(?) END END`
)

// padFrom is the smallest rendering (bytes) that keeps slack in its row
// (see padSet): below it, rewriting the row costs a few pages anyway.
const padFrom = 8 << 10

// writeQueries are the block-write statements for one backend.
type writeQueries struct {
	claimAhead, updateRendered string
	padded                     bool // SQLite: padSet is in both
}

func newWriteQueries(padded bool) writeQueries {
	pad := ""
	if padded {
		pad = padSet
	}
	return writeQueries{claimAhead: fmt.Sprintf(claimAheadQuery, pad), updateRendered: fmt.Sprintf(updateRenderedQuery, pad), padded: padded}
}

// padArgs are padSet's arguments for a write storing rendered and heads
// (none without it).
func (w writeQueries) padArgs(rendered, heads string) []any {
	if !w.padded {
		return nil
	}
	n := len(rendered) + len(heads)
	return []any{len(rendered) >= padFrom, n, len(rendered)/4 + 4096, n, len(rendered)/8 + 1024}
}

// writeState reads with row the block's row and the accessor's current
// permission on it (the owner's, or the share's). In a Write transaction
// row is the transaction's prepared statement (txRow), which belongs to
// the writer connection.
func (c *Store) writeState(ctx context.Context, row func(ctx context.Context, query string, args ...any) *sql.Row, e *entry, req blockseam.WriteRequest) (blockRow, sharePerm, error) {
	var shared sql.NullString
	r, err := scanBlock(row(ctx, writeStateQuery, req.Accessor, e.id), &shared)
	if errors.Is(err, sql.ErrNoRows) {
		c.lru.Remove(e.id)
		return r, sharePerm{}, notFound("block %q of agent %q was deleted", e.label, e.owner)
	}
	if err != nil {
		return r, sharePerm{}, err
	}
	var perm sharePerm
	switch {
	case req.System:
	case req.Accessor == r.owner:
		perm.p, perm.err = blocks.ParsePermission(r.permission)
	case shared.Valid:
		perm.p, perm.err = blocks.ParsePermission(shared.String)
	default:
		perm.err = fmt.Errorf("%w: agent %q may not %s on block %q of agent %q: it is no longer shared with it",
			blocks.ErrPermission, req.Accessor, req.Op, e.label, e.owner)
	}
	return r, perm, nil
}

// insertUpdate appends data as the block's next update row and stores the
// new rendering and heads, inside the caller's write transaction (r is the
// row read in it). It returns the new sequence and whether it compacted
// (compactRebase when the compacted history is due for a new epoch).
func (c *Store) insertUpdate(ctx context.Context, tx *sql.Tx, e *entry, r blockRow, data []byte, actors, rendered, heads string) (seq int64, compacted compaction, err error) {
	seq = r.lastSeq + 1
	now := c.nanos()
	if _, err = c.txExec(ctx, tx, insertUpdateQuery, e.id, seq, r.epoch, actors, data, checksum(data), now); err != nil {
		return 0, 0, err
	}
	args := append([]any{seq, rendered, heads, now, len(data)}, c.wq.padArgs(rendered, heads)...)
	if _, err = c.txExec(ctx, tx, c.wq.updateRendered, append(args, e.id)...); err != nil {
		return 0, 0, err
	}
	compacted, err = c.compactIfDue(ctx, tx, e, seq, r.snapshotSeq, r.historyBytes+int64(len(data)), nil)
	return seq, compacted, err
}

// committed records a change that is now durable at seq. Caller holds
// e.mu.
func (c *Store) committed(ctx context.Context, e *entry, seq int64, heads []string, compacted compaction) {
	if err := blockseam.MarkPersisted(e.doc, heads); err != nil {
		c.log.Error("mark persisted", "block", e.label, "owner", e.owner, "err", err)
	}
	e.set(func(e *entry) { e.lastSeq = seq })
	e.actors = nil
	c.mu.Lock()
	delete(c.dirty, e)
	c.mu.Unlock()
	if compacted != 0 {
		c.log.Debug("compacted block", "block", e.label, "owner", e.owner, "seq", seq)
	}
	if compacted == compactRebase {
		c.startRebase(e)
	}
	c.changes.fire()
	c.wakeEmbedder()
}
