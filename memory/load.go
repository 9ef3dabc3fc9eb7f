package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/schema"
)

// blockRow is a blocks table row without the document bytes.
type blockRow struct {
	id                            int64
	owner, label, description     string
	blockType, permission, schema string
	charLimit                     int
	pinned                        bool
	priority                      int
	metaVer, epoch                int64
	snapshotSeq, lastSeq          int64
	historyBytes                  int64
	rendered                      string
	createdAt, updatedAt          int64
	incarnation                   int64 // see newIncarnation
}

const blockCols = `id, owner, label, description, block_type, permission, schema_json, char_limit,
	pinned, priority, meta_ver, epoch, snapshot_seq, last_seq, history_bytes, rendered, created_at, updated_at, incarnation`

// stateCols is blockCols without the rendering: writes and catch-ups do
// not need the old text, and reading it back would make each of them cost
// the block's size.
const stateCols = `id, owner, label, description, block_type, permission, schema_json, char_limit,
	pinned, priority, meta_ver, epoch, snapshot_seq, last_seq, history_bytes, '', created_at, updated_at, incarnation`

type scanner interface{ Scan(dest ...any) error }

// scanBlock scans blockCols, then any extra columns selected after them.
func scanBlock(s scanner, extra ...any) (blockRow, error) {
	var r blockRow
	dest := append([]any{&r.id, &r.owner, &r.label, &r.description, &r.blockType, &r.permission, &r.schema, &r.charLimit,
		&r.pinned, &r.priority, &r.metaVer, &r.epoch, &r.snapshotSeq, &r.lastSeq, &r.historyBytes, &r.rendered, unixnanos.Scanner{N: &r.createdAt}, unixnanos.Scanner{N: &r.updatedAt}, &r.incarnation}, extra...)
	err := s.Scan(dest...)
	return r, err
}

// infoWith decodes the row's metadata, reusing decoded schemas from cache.
func (r blockRow) infoWith(cache *sync.Map) (blocks.Info, error) {
	var s schema.Schema
	var err error
	if cache != nil {
		if v, ok := cache.Load(r.schema); ok {
			s = v.(schema.Schema)
		}
	}
	if s == nil {
		s, err = schema.Unmarshal([]byte(r.schema))
		if err == nil && cache != nil {
			cache.Store(r.schema, s)
		}
	}
	if err != nil {
		return blocks.Info{}, fmt.Errorf("block %q of %q: stored schema: %w", r.label, r.owner, err)
	}
	p, err := blocks.ParsePermission(r.permission)
	if err != nil {
		return blocks.Info{}, fmt.Errorf("block %q of %q: stored permission: %w", r.label, r.owner, err)
	}
	t, err := blocks.ParseType(r.blockType)
	if err != nil {
		return blocks.Info{}, fmt.Errorf("block %q of %q: stored type: %w", r.label, r.owner, err)
	}
	return blocks.Info{Label: r.label, Description: r.description, Type: t, Schema: s, Permission: p,
		CharLimit: r.charLimit, Owner: r.owner, Pinned: r.pinned, Priority: r.priority}, nil
}

func (r blockRow) meta(cache *sync.Map) (BlockMeta, error) {
	info, err := r.infoWith(cache)
	if err != nil {
		return BlockMeta{}, err
	}
	return BlockMeta{ID: r.id, Owner: r.owner, Label: r.label, Description: r.description, Type: info.Type,
		Schema: info.Schema, Permission: info.Permission, CharLimit: info.CharLimit, Pinned: r.pinned,
		Priority: r.priority, Rendered: r.rendered, CreatedAt: fromNanos(r.createdAt), UpdatedAt: fromNanos(r.updatedAt)}, nil
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// entryFor returns the fresh cached entry of block (owner, label), loading
// it on a miss. On a hit the only SQL is the freshness check: one indexed
// row read of the block's sequence, epoch and metadata version.
func (c *Store) entryFor(ctx context.Context, owner, label string) (*entry, error) {
	if e := c.notifiedHit(owner, label); e != nil {
		return e, nil
	}
	e, err := c.checkedEntry(ctx, owner, label)
	if err != nil {
		c.afterFailedCheck(owner, label)
		return nil, c.closedMeanwhile(err)
	}
	c.remember(e)
	return e, nil
}

// cachedEntry returns the cached entry of block (owner, label) without
// any query, or nil when it is not cached (or broken). It may be behind
// other processes' writes: only a write may use it, because the write
// transaction checks the block's row again (claimAhead, writeState).
func (c *Store) cachedEntry(owner, label string) *entry {
	v, ok := c.names.Load(nameKey(owner, label))
	if !ok {
		return nil
	}
	e := v.(*entry)
	if _, _, _, broken := e.freshness(); broken != nil {
		return nil
	}
	if cur, ok := c.lru.Get(e.id); !ok || cur != e {
		return nil
	}
	return e
}

func (c *Store) checkedEntry(ctx context.Context, owner, label string) (*entry, error) {
	c.beforeCheck(owner, label)
	var id, lastSeq, epoch, metaVer, snapSeq, incarnation int64
	st, err := c.prepared(ctx, `SELECT id, last_seq, epoch, meta_ver, snapshot_seq, incarnation FROM blocks WHERE owner = ? AND label = ?`)
	if err != nil {
		return nil, fmt.Errorf("memory: look up block %q of %q: %w", label, owner, err)
	}
	err = st.QueryRowContext(ctx, owner, label).Scan(&id, &lastSeq, &epoch, &metaVer, &snapSeq, &incarnation)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("block %q of agent %q", label, owner)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: look up block %q of %q: %w", label, owner, err)
	}
	if e, ok := c.lru.Get(id); ok {
		eSeq, eEpoch, eMeta, broken := e.freshness()
		// (Another incarnation: a block that had this id, deleted since.)
		usable := broken == nil && e.incarnation == incarnation
		if usable && eEpoch == epoch && eSeq >= lastSeq && eMeta == metaVer {
			return e, nil
		}
		if usable {
			// (A new epoch too: refresh switches the document in place.)
			if err := c.catchUp(ctx, e); err != nil {
				return nil, err
			}
			return e, nil
		}
		c.lru.Remove(id)
	}
	e, fresh, err := c.loadLocked(ctx, id, incarnation)
	if err != nil {
		return nil, err
	}
	// Outside loadMu: these may fire Remote events (see entry.unlock),
	// whose subscribers may read blocks, loading them.
	c.flushEvicted(ctx)
	if !fresh {
		if err := c.catchUp(ctx, e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// loadLocked finds block id in the cache (or among the dirty evicted) or
// loads it, under loadMu so one block is loaded once; fresh is false when
// the entry found must still catch up.
func (c *Store) loadLocked(ctx context.Context, id, incarnation int64) (e *entry, fresh bool, err error) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if e := c.cachedCopy(id, incarnation); e != nil {
		return e, false, nil
	}
	e, err = c.load(ctx, id)
	if err != nil {
		return nil, false, err
	}
	if c.afterLoad != nil {
		c.afterLoad(id)
	}
	// Stale until first checked, as a created block is: a notification of
	// a write that committed after the load's snapshot but came before the
	// Add found nothing to mark, and a hit would serve the old state until
	// the block's next notification.
	e.stale.Store(true)
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	if cur := c.usableCopy(id, incarnation); cur != nil {
		// A write-back edit put its copy back while this one was read
		// (claimCopy): that copy holds the edit, this one does not.
		return cur, false, nil
	}
	c.cacheAdd(id, e)
	return e, true, nil
}

// cachedCopy returns the copy of block id (this incarnation) the cache
// holds, or the one that left it with edits its flush could not write
// (write-back), put back; nil when there is neither.
func (c *Store) cachedCopy(id, incarnation int64) *entry {
	c.copyMu.Lock()
	defer c.copyMu.Unlock()
	return c.usableCopy(id, incarnation)
}

// usableCopy is cachedCopy for a caller holding copyMu.
func (c *Store) usableCopy(id, incarnation int64) *entry {
	if e, ok := c.lru.Get(id); ok {
		if _, _, _, broken := e.freshness(); broken == nil && e.incarnation == incarnation {
			return e
		}
	}
	if e := c.evictedDirty(id, incarnation); e != nil {
		// Evicted with edits its flush could not write (write-back): it
		// comes back instead of a second copy loaded beside it, which
		// would hide those edits and check limits without them.
		c.cacheAdd(id, e)
		return e
	}
	return nil
}

// readTx begins a read-only transaction that sees one snapshot of the
// database: a block's row, snapshot and updates read in it agree even while
// another process compacts or rebases the block. (SQLite's WAL readers do
// by default; PostgreSQL's default, READ COMMITTED, lets each statement see
// a newer commit.)
func (c *Store) readTx(ctx context.Context) (*sql.Tx, error) {
	return c.be.ReadTx(ctx)
}

// load reads a block's snapshot and updates in one read transaction.
func (c *Store) load(ctx context.Context, id int64) (*entry, error) {
	tx, err := c.readTx(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: load block %d: %w", id, err)
	}
	defer tx.Rollback()
	var snap []byte
	var snapCRC sql.NullInt64
	row := tx.QueryRowContext(ctx, `SELECT `+blockCols+`, s.snapshot, s.snapshot_crc
		FROM blocks LEFT JOIN block_snapshots s ON s.block_id = blocks.id WHERE blocks.id = ?`, id)
	r, err := scanBlock(row, &snap, &snapCRC)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("block %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: load block %d: %w", id, err)
	}
	if err := checkCRC(snap, snapCRC); err != nil {
		return nil, corrupt(r.owner, r.label, "snapshot", err)
	}
	info, err := r.infoWith(&c.schemas)
	if err != nil {
		return nil, err
	}
	doc, err := blocks.Load(info, snap, &blocks.Options{Approver: c.opts.Approver, Now: c.opts.Now})
	if err != nil {
		return nil, fmt.Errorf("memory: load block %q of %q: %w", r.label, r.owner, err)
	}
	e, err := c.manage(doc, r.id, r.snapshotSeq)
	if err != nil {
		return nil, err
	}
	e.epoch, e.metaVer, e.incarnation = r.epoch, r.metaVer, r.incarnation
	if err := c.applyUpdates(ctx, tx, e, r.lastSeq); err != nil {
		return nil, err
	}
	if err := blockseam.MarkPersisted(doc, doc.Heads()); err != nil {
		return nil, err
	}
	return e, nil
}

// manage makes the entry that serves doc (block id, durable up to seq) and
// hands the document to it: from now on every write through any view of
// doc runs through entry.Write.
func (c *Store) manage(doc *blocks.Document, id, seq int64) (*entry, error) {
	info := doc.Info()
	e := &entry{c: c, id: id, owner: info.Owner, label: info.Label, doc: doc, lastSeq: seq}
	rep, err := blockseam.Manage(doc, e)
	if err != nil {
		return nil, fmt.Errorf("memory: block %q of %q: %w", info.Label, info.Owner, err)
	}
	e.replica = rep
	return e, nil
}

// crcTable is CRC-32C, the checksum of update rows and snapshots.
var crcTable = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) int64 { return int64(crc32.Checksum(b, crcTable)) }

// checkCRC verifies data against its stored checksum (NULL for rows
// written before checksums existed).
func checkCRC(data []byte, want sql.NullInt64) error {
	if !want.Valid {
		return nil
	}
	if got := checksum(data); got != want.Int64 {
		return fmt.Errorf("checksum mismatch (stored %08x, computed %08x over %d bytes): the row is torn or corrupt", want.Int64, got, len(data))
	}
	return nil
}

// corrupt is the error for a block whose stored bytes are damaged.
func corrupt(owner, label, what string, err error) error {
	return fmt.Errorf("%w: block %q of agent %q: %s: %w", ErrCorrupt, label, owner, what, err)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// applyUpdates loads the updates after e.lastSeq (up to upTo) into e.doc.
// If a compaction elsewhere already folded some of them into the snapshot,
// the snapshot is merged in first. A row whose checksum does not match, or
// whose changes would break the block's schema, stops the catch-up with
// ErrCorrupt: nothing after it is skipped silently. Caller holds e.mu or
// owns e exclusively.
func (c *Store) applyUpdates(ctx context.Context, q querier, e *entry, upTo int64) error {
	if upTo <= e.lastSeq {
		return nil
	}
	var snapSeq, epoch int64
	if err := q.QueryRowContext(ctx, `SELECT snapshot_seq, epoch FROM blocks WHERE id = ?`, e.id).Scan(&snapSeq, &epoch); err != nil {
		return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	if epoch != e.epoch {
		// Never load another epoch's snapshot or updates into this document.
		return fmt.Errorf("memory: catch up block %q: it was rebased onto a new epoch meanwhile; retry", e.label)
	}
	if snapSeq > e.lastSeq {
		var snap []byte
		var crc sql.NullInt64
		if err := q.QueryRowContext(ctx, `SELECT snapshot, snapshot_crc FROM block_snapshots WHERE block_id = ?`, e.id).Scan(&snap, &crc); err != nil {
			return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		if err := checkCRC(snap, crc); err != nil {
			return corrupt(e.owner, e.label, "snapshot", err)
		}
		if err := e.replica.LoadIncremental(snap); err != nil {
			return corrupt(e.owner, e.label, "snapshot", err)
		}
		e.set(func(e *entry) { e.lastSeq = snapSeq })
	}
	seqs, chunks, err := c.readUpdates(ctx, q, e, upTo)
	if err != nil {
		return err
	}
	if len(chunks) > 0 {
		// All rows at once: the block's value is read once, not once a row.
		if err := e.replica.LoadIncrementals(chunks); err != nil {
			// Nothing was kept; one at a time names the row at fault.
			for i, data := range chunks {
				if err := e.replica.LoadIncremental(data); err != nil {
					return corrupt(e.owner, e.label, fmt.Sprintf("update %d", seqs[i]), err)
				}
				e.set(func(e *entry) { e.lastSeq = seqs[i] })
			}
		}
		e.set(func(e *entry) { e.lastSeq = seqs[len(seqs)-1] })
		// A row that is gone, or torn where no checksum can tell (a row
		// from before checksums), loads without an error: automerge
		// queues every later change that depends on it, and the block
		// would read as of that row without a word. The row recorded
		// its writer's heads; the loaded document must hold them.
		var heads string
		if err := q.QueryRowContext(ctx, `SELECT heads FROM blocks WHERE id = ? AND last_seq = ?`, e.id, seqs[len(seqs)-1]).Scan(&heads); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		if heads != "" {
			if missing := e.replica.Unknown(strings.Split(heads, ",")); len(missing) > 0 {
				return corrupt(e.owner, e.label, fmt.Sprintf("updates %d..%d", seqs[0], seqs[len(seqs)-1]),
					fmt.Errorf("the loaded rows do not deliver change %s that the block's last write recorded (a row is missing or torn, or holds changes whose dependencies are missing)", missing[0]))
			}
		}
	}
	if e.lastSeq < upTo {
		// Rows up to upTo are gone (a compaction raced this read); the
		// snapshot check above picks them up next time.
		return fmt.Errorf("memory: catch up block %q: updates %d..%d are missing; retry", e.label, e.lastSeq+1, upTo)
	}
	return nil
}

// readUpdates reads e's update rows after e.lastSeq up to upTo, in order,
// each checked against its checksum: a torn or corrupt row fails the read
// with ErrCorrupt, naming it, before any row is loaded.
func (c *Store) readUpdates(ctx context.Context, q querier, e *entry, upTo int64) (seqs []int64, chunks [][]byte, err error) {
	rows, err := q.QueryContext(ctx, `SELECT seq, data, crc FROM block_updates WHERE block_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, e.id, e.lastSeq, upTo)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var data []byte
		var crc sql.NullInt64
		if err := rows.Scan(&seq, &data, &crc); err != nil {
			return nil, nil, fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		if n := len(seqs); n > 0 && seq != seqs[n-1]+1 {
			// Rows are numbered without gaps (a compaction removes a
			// prefix): one missing between two is lost, not late.
			return nil, nil, corrupt(e.owner, e.label, fmt.Sprintf("update %d", seqs[n-1]+1), errors.New("the row is missing"))
		}
		if err := checkCRC(data, crc); err != nil {
			return nil, nil, corrupt(e.owner, e.label, fmt.Sprintf("update %d", seq), err)
		}
		seqs, chunks = append(seqs, seq), append(chunks, data)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	return seqs, chunks, nil
}

// catchUp applies what other writers persisted since e was last fresh and
// reloads changed metadata.
func (c *Store) catchUp(ctx context.Context, e *entry) error {
	e.lock()
	defer e.unlock()
	return c.catchUpLocked(ctx, e)
}

// catchUpLocked is catchUp with e's lock held.
func (c *Store) catchUpLocked(ctx context.Context, e *entry) error {
	tx, err := c.readTx(ctx)
	if err != nil {
		return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
	}
	defer tx.Rollback()
	r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+stateCols+` FROM blocks WHERE id = ?`, e.id))
	if errors.Is(err, sql.ErrNoRows) {
		c.lru.Remove(e.id)
		return notFound("block %q of agent %q", e.label, e.owner)
	}
	if err != nil {
		return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
	}
	return c.refresh(ctx, tx, e, r)
}

// refresh brings e up to the row r read in q's transaction: metadata, then
// updates. A corrupt row breaks the entry so every later read reports it.
func (c *Store) refresh(ctx context.Context, q querier, e *entry, r blockRow) error {
	if r.incarnation != e.incarnation {
		c.lru.Remove(e.id)
		return notFound("block %q of agent %q was deleted (a block made since has its id)", e.label, e.owner)
	}
	if r.epoch != e.epoch {
		if err := c.switchEpoch(ctx, q, e, r); err != nil {
			return err
		}
	}
	if r.metaVer != e.metaVer {
		info, err := r.infoWith(&c.schemas)
		if err != nil {
			return err
		}
		if err := e.doc.SetInfo(info); err != nil {
			return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
		}
		e.set(func(e *entry) { e.metaVer = r.metaVer })
	}
	seen := e.lastSeq
	err := c.applyUpdates(ctx, q, e, r.lastSeq)
	if e.lastSeq > seen {
		// Another writer is active on this block: its next edits would
		// likely meet that writer if applied ahead of the lock.
		e.aheadSkip = max(e.aheadSkip, aheadAfterForeign)
	}
	if errors.Is(err, ErrCorrupt) {
		c.breakEntry(e, err)
	}
	return err
}
