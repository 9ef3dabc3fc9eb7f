package memory

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/blockseam"
)

// aheadAfterForeign is how many of a block's edits run under the lock
// after this process saw another writer's change to it.
const aheadAfterForeign = 64

// aheadEdit is an edit applied before the write lock was taken (see
// applyAhead), with everything its write needs, computed outside the lock.
type aheadEdit struct {
	lastSeq, epoch, metaVer int64 // the block's state the edit was applied to
	perm                    blocks.Permission
	data                    []byte
	heads                   []string
	headsText, rendered     string
	// snap is the document saved ahead for the compaction the write is
	// due for (nil: none foreseen; compactIfDue saves it if due).
	snap []byte
	// merged are the hashes of a merge's changes (MergeChanges: not this
	// replica's own), recorded with the update row.
	merged []string
	// refused is why the edit was refused ahead (nothing else is set but
	// the state it was refused on); the document is as before the edit.
	refused error

	// Set by claimAhead.
	seq, now, snapshotSeq, historyBytes int64
}

// applyAhead applies an edit to the cached document before the write lock
// is taken, on the state this entry last saw and with the view's own
// permission, so the CRDT work (the splice, the commit, extracting the
// change, rendering) runs outside the lock, in parallel with other blocks'
// writes. The write transaction keeps it only if the block's row shows
// nothing changed since (stillValid); otherwise the edit is undone and
// applied again on the fresh state, under the lock, as if this never ran.
// A merge (MergeChanges) runs ahead too: decoding the peer's changes,
// applying them and checking the transition, however big, then hold no
// lock. An edit refused ahead is reported in refused, with the state it
// was refused on; the caller decides whether the refusal stands
// (refusalStands) or the edit runs again under the lock. It returns nil
// when the edit must run under the lock from the start: an empty edit,
// extra work in the transaction (a writeTx's decide), external changes
// merged earlier and not yet written, write-back edits pending (their
// actors go into the row), or a caller that cannot undo. Caller holds
// e.mu.
func (c *Store) applyAhead(e *entry, req blockseam.WriteRequest, wt writeTx, apply func(blocks.Permission) error) *aheadEdit {
	if req.Undo == nil || len(e.merged.Data) > 0 || len(e.actors) > 0 || wt.decide != nil {
		return nil
	}
	if e.aheadSkip > 0 {
		e.aheadSkip--
		return nil
	}
	a := &aheadEdit{perm: req.Permission}
	a.lastSeq, a.epoch, a.metaVer, _ = e.freshness()
	if err := apply(req.Permission); err != nil {
		if uerr := req.Undo(); uerr != nil {
			c.log.Error("undo of a refused edit", "block", e.label, "owner", e.owner, "err", uerr)
			return nil
		}
		a.refused = err
		return a
	}
	// A merge's changes are not this replica's own: PendingChanges leaves
	// them out, and they go first into the same row (as in entry.Write).
	merged := e.merged
	e.merged = blockseam.Merged{}
	var err error
	if a.data, a.heads, err = e.doc.PendingChanges(); err != nil || len(merged.Data)+len(a.data) == 0 {
		if uerr := req.Undo(); uerr != nil {
			c.log.Error("undo of an edit applied ahead", "block", e.label, "owner", e.owner, "err", uerr)
		}
		return nil
	}
	if len(merged.Data) > 0 {
		a.data = append(merged.Data, a.data...)
		a.merged = merged.Hashes
	}
	a.headsText = strings.Join(a.heads, ",")
	a.rendered = e.doc.Render()
	if h := e.snapHint; h > 0 && a.lastSeq+1-h >= c.compactAfter(e) {
		// The write will fold the block's updates into a new snapshot:
		// saving the whole document costs in proportion to it, so it is
		// saved here, on the state the claim will find unchanged.
		if snap, err := e.doc.Save(); err == nil {
			a.snap = snap
		}
	}
	if c.afterAhead != nil {
		c.afterAhead()
	}
	return a
}

// refusalStands reports whether an edit refused ahead (a.refused) was
// refused on the block's latest committed state, with the accessor's
// current permission: the block's row, read without the write lock, is
// the one the cached document was at, with the same metadata, and the
// accessor's permission on it is the one the edit was judged with. The
// edit would then be refused the same way under the lock, so it is not
// applied again there: a refused edit, however costly to judge (a
// hostile peer's merge), holds up no other writer. A writer that
// commits after this read is ordered after the refusal. On any doubt
// (a read error, a deleted block, a revoked share) it reports false and
// the edit runs again under the lock.
func (c *Store) refusalStands(ctx context.Context, e *entry, req blockseam.WriteRequest, a *aheadEdit) bool {
	r, perm, err := c.writeState(ctx, c.rdb.QueryRowContext, e, req)
	if err != nil || perm.err != nil {
		return false
	}
	return r.incarnation == e.incarnation && r.lastSeq == a.lastSeq && r.epoch == a.epoch && r.metaVer == a.metaVer &&
		(req.System || perm.p == a.perm)
}

// claimAhead stores the rendering and heads of an edit applied ahead, in
// the caller's write transaction, if and only if the block's row and the
// accessor's permission are still what the edit was applied to: one
// statement that both checks and writes (the check is its WHERE clause).
// It reports false, having changed nothing, when something came between.
// On success it leaves in a the row's snapshot sequence and history size
// that the compaction check needs.
func (c *Store) claimAhead(ctx context.Context, tx *sql.Tx, e *entry, req blockseam.WriteRequest, a *aheadEdit) (bool, error) {
	a.seq = a.lastSeq + 1
	a.now = c.nanos()
	args := append([]any{a.seq, a.rendered, a.headsText, a.now, len(a.data)}, c.wq.padArgs(a.rendered, a.headsText)...)
	args = append(args, e.id, e.incarnation, a.lastSeq, a.epoch, a.metaVer, req.System, req.Accessor, a.perm.String(), req.Accessor, a.perm.String())
	err := c.txQueryRow(ctx, tx, c.wq.claimAhead, args...).Scan(&a.snapshotSeq, &a.historyBytes)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// insertAhead writes the update row of an edit claimAhead claimed (and
// who merged a merge's changes), and compacts when due.
func (c *Store) insertAhead(ctx context.Context, tx *sql.Tx, e *entry, a *aheadEdit, actors string) (int64, compaction, error) {
	if _, err := c.txExec(ctx, tx, insertUpdateQuery, e.id, a.seq, a.epoch, actors, a.data, checksum(a.data), a.now); err != nil {
		return 0, 0, err
	}
	if err := c.recordMerged(ctx, tx, e, a.merged, actors); err != nil {
		return 0, 0, err
	}
	compacted, err := c.compactIfDue(ctx, tx, e, a.seq, a.snapshotSeq, a.historyBytes, a.snap)
	if err == nil {
		e.snapHint = a.snapshotSeq
		if compacted != 0 {
			e.snapHint = a.seq
			if a.snap != nil {
				c.snapsAhead.Add(1)
			}
		}
	}
	return a.seq, compacted, err
}

// claimOnce is claimAhead and insertAhead as a write of their own, in
// one round trip (driver.OneTripWriter, claimOnceQuery), for an edit
// applied ahead that writes nothing else: no external changes merged,
// no log entries rotated out, no compaction due. It reports false,
// having written nothing, when the backend cannot, the block's lock is
// busy, something came between (as claimAhead) or the write is due to
// compact: the ordinary path then runs with a unchanged. Caller holds
// e.mu.
func (c *Store) claimOnce(ctx context.Context, e *entry, req blockseam.WriteRequest, a *aheadEdit) (bool, error) {
	ow, ok := c.be.(driver.OneTripWriter)
	if !ok || len(a.merged) > 0 || len(e.rotated) > 0 || a.snap != nil {
		return false, nil
	}
	seq, now := a.lastSeq+1, c.nanos()
	args := []any{seq, a.rendered, a.headsText, now, len(a.data),
		e.id, e.incarnation, a.lastSeq, a.epoch, a.metaVer, req.System, req.Accessor, a.perm.String(), req.Accessor, a.perm.String(),
		c.compactAfter(e), req.Actor, a.data, checksum(a.data)}
	var snapshotSeq, historyBytes int64
	ok, err := ow.WriteOnce(ctx, blockLock(e.id), claimOnceQuery, args, &snapshotSeq, &historyBytes)
	if !ok || err != nil {
		return false, err
	}
	a.seq, a.now, a.snapshotSeq, a.historyBytes = seq, now, snapshotSeq, historyBytes
	e.snapHint = snapshotSeq
	return true, nil
}
