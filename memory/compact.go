package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// putSnapshot stores block id's snapshot with its checksum, in
// block_snapshots (its own table since migration 0013, so a write that
// does not compact leaves it alone).
func putSnapshot(ctx context.Context, tx *sql.Tx, id int64, snap []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO block_snapshots (block_id, snapshot, snapshot_crc) VALUES (?, ?, ?)
		ON CONFLICT (block_id) DO UPDATE SET snapshot = excluded.snapshot, snapshot_crc = excluded.snapshot_crc`, id, snap, checksum(snap))
	return err
}

// compactIfDue compacts block e, just written at seq, when enough updates
// accumulated since its snapshot (see compactAfter), and says whether the
// compacted history (history bytes in this epoch, this write included) is
// due for a new epoch. snap is e's document saved ahead of the lock by a
// write that foresaw the compaction (nil: saved here, under it).
func (c *Store) compactIfDue(ctx context.Context, tx *sql.Tx, e *entry, seq, snapshotSeq, history int64, snap []byte) (compaction, error) {
	if seq-snapshotSeq < c.compactAfter(e) {
		return 0, nil
	}
	if err := compactSaved(ctx, tx, e, seq, snap); err != nil {
		return 0, err
	}
	// Against the full content, not the stored rendering (a viewport or a
	// log's display limit shows only part of it).
	_, epoch, _, _ := e.freshness()
	if e.rebaseCheck.epoch == epoch && history < e.rebaseCheck.history {
		return compactOnly, nil
	}
	counted := false
	count := func() (int, error) { counted = true; return e.doc.ChangeCount() }
	if c.historyDue(history, e.doc.SizeBytes(), count) {
		return compactRebase, nil
	}
	if counted {
		e.rebaseCheck.epoch, e.rebaseCheck.history = epoch, history+history/4
	}
	return compactOnly, nil
}

// compactCharsPerUpdate scales compaction with a block's size (see
// Options.CompactAfter).
const compactCharsPerUpdate = 128

// compactAfter is how many updates block e accumulates before a write
// folds them into its snapshot: Options.CompactAfter, or one per
// compactCharsPerUpdate characters of content if that is more, so the
// cost of saving a snapshot, amortized over the writes between two
// compactions, does not grow with the block. Caller holds e.mu.
func (c *Store) compactAfter(e *entry) int64 {
	return int64(max(c.opts.CompactAfter, e.doc.Size()/compactCharsPerUpdate))
}

// compactSaved folds all updates up to seq into the snapshot, inside the
// caller's write transaction, with e's document saved already (snap, on
// the state it is in now; nil: saved here). Readers in other processes
// either see the old snapshot and the old updates or the new snapshot
// (WAL snapshot isolation).
//
// The snapshot is e's document, so the row must still be on e's epoch
// (the UPDATE checks it): saving one epoch's document as another's
// snapshot would lose every later write.
func compactSaved(ctx context.Context, tx *sql.Tx, e *entry, seq int64, snap []byte) error {
	if snap == nil {
		var err error
		if snap, err = e.doc.Save(); err != nil {
			return err
		}
	}
	_, epoch, _, _ := e.freshness()
	res, err := tx.ExecContext(ctx, `UPDATE blocks SET snapshot_seq = ? WHERE id = ? AND epoch = ?`, seq, e.id, epoch)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, fmt.Errorf("memory: compact block %q of %q: it is no longer on epoch %d; retry", e.label, e.owner, epoch))
	}
	if err := putSnapshot(ctx, tx, e.id, snap); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM block_updates WHERE block_id = ? AND seq <= ?`, e.id, seq)
	return err
}
