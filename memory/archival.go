package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/search"
)

func normTags(tags []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// addArchival implements [Archival.Insert]: the entry is checked and its
// quota pre-checked outside the transaction, embedded before it, and
// written with its full-text rows (by trigger) and vector in it.
func (c *Store) addArchival(ctx context.Context, agent string, e ArchivalEntry) (ArchivalEntry, error) {
	return c.insertArchival(ctx, agent, e, 0)
}

func (c *Store) insertArchival(ctx context.Context, agent string, e ArchivalEntry, supersede int64) (ArchivalEntry, error) {
	if err := c.checkOpen(ctx); err != nil {
		return e, err
	}
	if err := checkAgent(agent); err != nil {
		return e, err
	}
	row, err := c.prepareArchival(agent, e, c.opts.Now().UTC(), true)
	if err != nil {
		return e, err
	}
	if err := c.precheckQuota(ctx, agent, row.bytes()); err != nil {
		if !c.isDuplicate(ctx, row, err) {
			return e, err
		}
	}
	vecs, err := c.embedArchival(ctx, agent, []*archivalRow{row})
	if err != nil {
		return e, err
	}
	if row.key != "" && supersede == 0 && c.index.WantsHold(search.Archival, agent) {
		// Merged into a live duplicate, the insert rewrites that entry's
		// tags and metadata: a change to a row the agent has.
		if _, _, _, ok, err := liveByKey(ctx, c.rdb, agent, row.key); err == nil && ok {
			c.holdArchival(ctx, agent)
		}
	}
	err = c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		return c.insertArchivalTx(ctx, tx, row, supersede, vecs)
	})
	return row.e, err
}

// archivalRow is an entry checked and encoded for insertion.
type archivalRow struct {
	e          ArchivalEntry
	meta, tags string
	key        string // dedupKey, "" when the store keeps duplicates
}

// bytes is what the row counts toward its agent's usage.
func (r *archivalRow) bytes() int64 { return archivalBytes(r.e.Content, r.meta, r.tags) }

// rowsBytes is what rows count toward their agent's usage.
func rowsBytes(rows []*archivalRow) int64 {
	var n int64
	for _, r := range rows {
		n += r.bytes()
	}
	return n
}

// prepareArchival checks and encodes one entry and fills its defaults;
// nothing is written. Callers check the agent. capped holds the entry to
// the per-entry caps (Options.MaxArchivalBytes...), checked before the
// work that grows with the entry.
func (c *Store) prepareArchival(agent string, e ArchivalEntry, now time.Time, capped bool) (*archivalRow, error) {
	if strings.TrimSpace(e.Content) == "" {
		return nil, invalidArg("archival entry for %q has empty content", agent)
	}
	if capped {
		if err := c.checkArchivalText(agent, e.Content, e.Tags); err != nil {
			return nil, err
		}
	}
	for _, f := range [...]struct {
		what string
		v    any
	}{{"content", e.Content}, {"tags", e.Tags}} {
		if err := checkStorable(agent, "archival entry", f.what, f.v); err != nil {
			return nil, err
		}
	}
	e.Agent = agent
	e.Duplicate = false // what an insert returns, never what it is given
	e.Tags = normTags(e.Tags)
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	meta, err := json.Marshal(e.Metadata)
	if err != nil {
		return nil, invalidArg("archival metadata for %q: %v", agent, err)
	}
	if capped {
		if err := c.checkMetadataSize(agent, len(meta)); err != nil {
			return nil, err
		}
	}
	// After the size check: the walk costs more than encoding.
	if err := checkStorable(agent, "archival entry", "metadata", e.Metadata); err != nil {
		return nil, err
	}
	tagsJSON, _ := json.Marshal(append([]string{}, e.Tags...))
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	if e.ValidFrom.IsZero() {
		e.ValidFrom = e.CreatedAt
	}
	for _, f := range []struct {
		what string
		t    time.Time
	}{{"created_at", e.CreatedAt}, {"valid_from", e.ValidFrom}} {
		if err := checkStamp(fmt.Sprintf("archival entry of %q: %s", agent, f.what), f.t); err != nil {
			return nil, err
		}
	}
	return &archivalRow{e: e, meta: string(meta), tags: string(tagsJSON), key: c.entryKey(&e)}, nil
}

// embedArchival computes the rows' vectors (nil without an embedder),
// before any transaction so the write lock never waits on the embedder.
func (c *Store) embedArchival(ctx context.Context, agent string, rows []*archivalRow) ([][]float32, error) {
	if c.index.Embedder() == nil {
		return nil, nil
	}
	texts := make([]string, len(rows))
	for i, r := range rows {
		texts[i] = r.e.Content
	}
	vecs, err := c.index.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("memory: embed archival entries for %q: %w", agent, err)
	}
	return vecs, nil
}

func (c *Store) insertArchivalTx(ctx context.Context, tx *sql.Tx, row *archivalRow, supersede int64, vecs [][]float32) error {
	e := &row.e
	agent := e.Agent
	if err := c.checkQuota(ctx, tx, agent, row.bytes()); err != nil {
		// A duplicate adds at most its merged tags and metadata.
		if supersede != 0 || row.key == "" || !errors.Is(err, ErrQuota) {
			return err
		}
		if ok, derr := c.mergeDuplicate(ctx, tx, row); derr != nil || ok {
			return derr
		}
		return err
	}
	if supersede != 0 {
		// Kept parsed by the backend: the statement carries the triggers a
		// supersession fires (its neighbours re-indexed).
		res, err := c.txExec(ctx, tx, archivalSupersedeSQL, e.ValidFrom.UnixNano(), supersede, agent)
		if err != nil {
			return fmt.Errorf("memory: supersede archival %d of %q: %w", supersede, agent, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("current archival entry %d of agent %q", supersede, agent)
		}
	}
	if err := c.insertArchivalRows(ctx, tx, []*archivalRow{row}, vecs); err != nil {
		return err
	}
	if supersede != 0 {
		if _, err := c.txExec(ctx, tx, archivalLinkSQL, e.ID, supersede); err != nil {
			return fmt.Errorf("memory: link supersession %d -> %d: %w", supersede, e.ID, err)
		}
	}
	return nil
}

// archivalSupersedeSQL ends a live entry's validity (valid_to) at ?, the
// entry's id and agent following.
const archivalSupersedeSQL = `UPDATE archival SET valid_to = ? WHERE id = ? AND agent = ? AND valid_to IS NULL`

// archivalTagSQL gives an entry (?) a tag (?).
const archivalTagSQL = `INSERT INTO archival_tags (archival_id, tag) VALUES (?, ?)`

// archivalLinkSQL names the entry (?) that superseded entry ?; kept
// parsed like archivalSupersedeSQL (an update of archival codes its
// triggers when parsed).
const archivalLinkSQL = `UPDATE archival SET superseded_by = ? WHERE id = ?`

// archivalMergeSQL sets the metadata, tags and tag text of entry ? (a
// duplicate merged into it); kept parsed like archivalSupersedeSQL.
const archivalMergeSQL = `UPDATE archival SET metadata_json = ?, tags_json = ?, tags_text = ? WHERE id = ?`

// archivalDeleteSQL deletes entry ? of agent ?; kept parsed like
// archivalSupersedeSQL (parsing a delete of archival codes its triggers,
// most of the delete's cost).
const archivalDeleteSQL = `DELETE FROM archival WHERE id = ? AND agent = ?`

// insertArchivalRows inserts rows (setting their IDs), their tags and,
// when vecs is not nil, their vectors.
//
// Rows go in archivalInsertRows to a statement: SQLite opens a statement
// savepoint for each statement that writes through a trigger or to a
// virtual table, and FTS5 answers every savepoint by flushing its pending
// terms to disk, so one row per statement made one FTS5 segment (and
// later merges) per row, which made bulk loads much slower
// (docs/performance.md). The ids a
// statement returns are sorted: both engines assign them in increasing
// order as they process the rows, and RETURNING's order is unspecified.
func (c *Store) insertArchivalRows(ctx context.Context, tx *sql.Tx, rows []*archivalRow, vecs [][]float32) error {
	// Several entries index once, at the end (on a backend that can): in
	// a conversation each insert re-indexes the entry before it, which
	// the next insert re-indexes again.
	if d, ok := c.be.(driver.ArchivalIndexDeferrer); ok && len(rows) > 1 {
		if err := d.DeferArchivalIndex(ctx, tx); err != nil {
			return fmt.Errorf("memory: insert archival for %q: %w", rows[0].e.Agent, err)
		}
		if err := c.insertArchivalEach(ctx, tx, rows, vecs); err != nil {
			return err
		}
		// The entries inserted: an entry merged into a live duplicate
		// was not (its merge, when it wrote anything, was indexed and
		// logged by the update's triggers), and the duplicate's place is
		// found as the entry before or after an inserted one when it is
		// one's neighbour.
		ids := make([]int64, 0, len(rows))
		for _, r := range rows {
			if !r.e.Duplicate {
				ids = append(ids, r.e.ID)
			}
		}
		if err := d.FlushArchivalIndex(ctx, tx, ids); err != nil {
			return fmt.Errorf("memory: insert archival for %q: %w", rows[0].e.Agent, err)
		}
		return nil
	}
	return c.insertArchivalEach(ctx, tx, rows, vecs)
}

// insertArchivalEach is insertArchivalRows with the index as the
// backend keeps it.
func (c *Store) insertArchivalEach(ctx context.Context, tx *sql.Tx, rows []*archivalRow, vecs [][]float32) error {
	// A batch of several full chunks parses their statement once (the
	// SQLite driver parses every Query otherwise, and a 100-row INSERT is
	// long to parse); a lone chunk is not worth a prepare.
	_, kept := c.be.(driver.TxStatements)
	var full *sql.Stmt
	if len(rows) > archivalInsertRows && !kept {
		var err error
		if full, err = tx.PrepareContext(ctx, archivalInsertSQL(archivalInsertRows)); err != nil {
			return fmt.Errorf("memory: insert archival for %q: %w", rows[0].e.Agent, err)
		}
		defer full.Close()
	}
	for chunk := range archivalChunks(rows, kept) {
		args := make([]any, 0, 8*len(chunk))
		for _, r := range chunk {
			e := &r.e
			args = append(args, e.Agent, e.Content, r.meta, r.tags, strings.Join(e.Tags, " "),
				e.CreatedAt.UnixNano(), e.ValidFrom.UnixNano(), r.key)
		}
		var res *sql.Rows
		var err error
		switch {
		case full != nil && len(chunk) == archivalInsertRows:
			res, err = full.QueryContext(ctx, args...)
		case len(chunk) == 1:
			// One entry at a time is the common write: the backend keeps it
			// parsed, with the archival triggers it fires.
			res, err = c.txQuery(ctx, tx, archivalInsertOne, args...)
		default:
			res, err = c.txQuery(ctx, tx, archivalInsertSQL(len(chunk)), args...)
		}
		if err != nil {
			return fmt.Errorf("memory: insert archival for %q: %w", chunk[0].e.Agent, err)
		}
		// An entry whose key a live entry holds is not inserted (ON
		// CONFLICT DO NOTHING) and returns no id: it is merged into that
		// entry. Keys are distinct within a chunk (dedupBatch); the
		// keyless entries take the other ids in order.
		var ids []int64
		byKey := map[string]int64{}
		for res.Next() {
			var id int64
			var key string
			if err := res.Scan(&id, &key); err != nil {
				res.Close()
				return fmt.Errorf("memory: insert archival for %q: %w", chunk[0].e.Agent, err)
			}
			if key == "" {
				ids = append(ids, id)
			} else {
				byKey[key] = id
			}
		}
		res.Close()
		if err := res.Err(); err != nil {
			return fmt.Errorf("memory: insert archival for %q: %w", chunk[0].e.Agent, err)
		}
		slices.Sort(ids)
		for _, r := range chunk {
			if r.key != "" {
				if id, ok := byKey[r.key]; ok {
					r.e.ID = id
					continue
				}
				ok, err := c.mergeDuplicate(ctx, tx, r)
				if err != nil {
					return err
				}
				if !ok {
					return fmt.Errorf("memory: insert archival for %q: the entry conflicting with key %s is gone", r.e.Agent, r.key)
				}
				continue
			}
			if len(ids) == 0 {
				return fmt.Errorf("memory: insert archival for %q: fewer ids than entries", chunk[0].e.Agent)
			}
			r.e.ID, ids = ids[0], ids[1:]
		}
	}
	var tags *sql.Stmt
	items := make([]searchindex.EmbeddingItem, 0, len(vecs))
	for i, r := range rows {
		e := &r.e
		if e.Duplicate {
			continue
		}
		for _, t := range e.Tags {
			if tags == nil {
				var err error
				if tags, err = tx.PrepareContext(ctx, archivalTagSQL); err != nil {
					return fmt.Errorf("memory: insert archival tags: %w", err)
				}
				defer tags.Close()
			}
			if _, err := tags.ExecContext(ctx, e.ID, t); err != nil {
				return fmt.Errorf("memory: tag archival %d: %w", e.ID, err)
			}
		}
		if vecs != nil && !e.Duplicate {
			items = append(items, searchindex.EmbeddingItem{ID: e.ID, Owner: e.Agent, Vector: vecs[i], New: true})
		}
	}
	if len(items) > 0 {
		if err := c.index.PutEmbeddings(context.WithoutCancel(ctx), tx, search.Archival, items); err != nil {
			return fmt.Errorf("memory: index archival entries of %q: %w", rows[0].e.Agent, err)
		}
	}
	return nil
}

// archivalInsertRows is how many archival rows one INSERT writes.
const archivalInsertRows = 100

// archivalKeptRows are the statement sizes a backend that keeps
// statements parsed (driver.TxStatements) is given (see
// prepareArchivalInserts): on SQLite an INSERT into archival compiles its
// triggers when parsed, about 2 ms, far more than its rows cost.
var archivalKeptRows = []int{archivalInsertRows, 25, 5, 1}

// archivalChunks yields rows in statements of up to archivalInsertRows;
// when kept, each of a size in archivalKeptRows (largest first), so that
// every statement is one the backend keeps parsed. (On SQLite a batch's
// entries are indexed once at its end, so how many statements insert
// them does not change what the full-text index writes.)
func archivalChunks(rows []*archivalRow, kept bool) func(yield func([]*archivalRow) bool) {
	return func(yield func([]*archivalRow) bool) {
		for len(rows) > 0 {
			n := min(len(rows), archivalInsertRows)
			if kept {
				for _, k := range archivalKeptRows {
					if k <= n {
						n = k
						break
					}
				}
			}
			if !yield(rows[:n]) {
				return
			}
			rows = rows[n:]
		}
	}
}

// prepareArchivalInserts has the backend keep the statements that
// insert n rows parsed (archivalChunks' sizes, and the deferred index's),
// when it keeps statements: before a batch, outside any write
// transaction, as driver.TxStatements asks.
func (c *Store) prepareArchivalInserts(ctx context.Context, n int) error {
	if d, ok := c.be.(driver.ArchivalIndexDeferrer); ok && n > 1 {
		if err := d.PrepareArchivalIndex(ctx); err != nil {
			return err
		}
	}
	ts, ok := c.be.(driver.TxStatements)
	if !ok {
		return nil
	}
	var qs []string
	seen := map[int]bool{}
	for chunk := range archivalChunks(make([]*archivalRow, n), true) {
		if k := len(chunk); !seen[k] {
			seen[k] = true
			qs = append(qs, archivalInsertSQL(k))
		}
	}
	return ts.Prepare(ctx, qs...)
}

// archivalInsertOne is archivalInsertSQL(1).
const archivalInsertOne = `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, content_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?)` +
	archivalOnConflict

// archivalOnConflict skips a row whose key a live entry of its agent
// holds (the unique index of migration sqlite/0027, postgres/0024).
const archivalOnConflict = ` ON CONFLICT (agent, content_key) WHERE valid_to IS NULL AND content_key <> '' DO NOTHING RETURNING id, content_key`

// archivalInsertSQL inserts n archival rows, returning the ids and keys
// of those inserted.
func archivalInsertSQL(n int) string {
	return `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, content_key) VALUES ` +
		strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ") + archivalOnConflict
}

// BatchOptions tune [Archival.InsertBatch]. The zero value (or nil) is the
// defaults.
type BatchOptions struct {
	// Size is the number of entries embedded and written per transaction
	// (default 1000).
	Size int
	// Progress, if set, is called after each committed transaction with
	// the entries written so far and the total.
	Progress func(done, total int)
}

// insertArchivalBatch implements [Archival.InsertBatch].
func (c *Store) insertArchivalBatch(ctx context.Context, agent string, entries []ArchivalEntry, opts *BatchOptions) ([]ArchivalEntry, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	var o BatchOptions
	if opts != nil {
		o = *opts
	}
	if o.Size <= 0 {
		o.Size = 1000
	}
	if err := checkAgent(agent); err != nil {
		return nil, fmt.Errorf("memory: archival batch: %w", err)
	}
	now := c.opts.Now().UTC()
	rows := make([]*archivalRow, len(entries))
	for i, e := range entries {
		r, err := c.prepareArchival(agent, e, now, true)
		if err != nil {
			return nil, fmt.Errorf("memory: archival batch for %q: %w", agent, &EntryError{Index: i, Err: err})
		}
		rows[i] = r
	}
	all := rows
	rows, of, err := dedupBatch(rows)
	if err != nil {
		return nil, invalidArg("archival batch for %q: merge duplicates: %v", agent, err)
	}
	// The whole batch against the quota before anything is written (each
	// transaction checks its own entries again, under the write lock).
	if err := c.precheckQuota(ctx, agent, rowsBytes(rows)); err != nil {
		if !errors.Is(err, ErrQuota) || c.opts.KeepDuplicates {
			return nil, fmt.Errorf("memory: archival batch for %q: %w", agent, err)
		}
		if err := c.recheckBatchQuota(ctx, agent, rows, err); err != nil {
			return nil, fmt.Errorf("memory: archival batch for %q: %w", agent, err)
		}
	}
	// results is the entries of all (duplicates within the batch are one
	// entry, marked Duplicate past the first) whose rows are among the
	// first done.
	results := func(done int) []ArchivalEntry {
		out := make([]ArchivalEntry, 0, len(all))
		seen := make([]bool, done)
		for i := range all {
			j := of[i]
			if j >= done {
				break
			}
			e := rows[j].e
			if seen[j] {
				e.Duplicate = true
			}
			seen[j] = true
			out = append(out, e)
		}
		return out
	}
	if len(rows) > 1 {
		// The first chunk's statements, and the last's when it is shorter.
		for _, n := range []int{min(len(rows), o.Size), len(rows) % o.Size} {
			if err := c.prepareArchivalInserts(ctx, n); err != nil {
				return nil, fmt.Errorf("memory: archival batch for %q: %w", agent, err)
			}
		}
	}
	done := 0
	for lo := 0; lo < len(rows); lo += o.Size {
		chunk := rows[lo:min(lo+o.Size, len(rows))]
		err := ctx.Err()
		var vecs [][]float32
		if err == nil {
			vecs, err = c.embedArchival(ctx, agent, chunk)
		}
		if err == nil {
			err = c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
				adding := rowsBytes(chunk)
				if c.opts.AgentQuotaBytes > 0 && !c.opts.KeepDuplicates {
					// Entries already stored add only their merges (checked
					// by mergeDuplicate).
					live, err := liveKeys(ctx, tx, agent, rowKeys(chunk))
					if err != nil {
						return err
					}
					adding = newBytes(chunk, live)
				}
				if err := c.checkQuota(ctx, tx, agent, adding); err != nil {
					return err
				}
				return c.insertArchivalRows(ctx, tx, chunk, vecs)
			})
		}
		if err != nil {
			out := results(done)
			return out, fmt.Errorf("memory: archival batch for %q, entries %d..%d (%d stored before): %w",
				agent, lo, lo+len(chunk)-1, len(out), err)
		}
		done += len(chunk)
		if o.Progress != nil {
			o.Progress(len(results(done)), len(all))
		}
	}
	return results(done), nil
}

// rowKeys is the keys of rows that have one.
func rowKeys(rows []*archivalRow) []string {
	keys := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.key != "" {
			keys = append(keys, r.key)
		}
	}
	return keys
}

// recheckBatchQuota is precheckQuota's refusal err of rows, or nil when
// the rows that are not duplicates of live entries fit.
func (c *Store) recheckBatchQuota(ctx context.Context, agent string, rows []*archivalRow, err error) error {
	live, lerr := liveKeys(ctx, c.rdb, agent, rowKeys(rows))
	if lerr != nil {
		return err
	}
	return c.precheckQuota(ctx, agent, newBytes(rows, live))
}

// isDuplicate says whether precheckQuota's refusal err of row may be
// ignored: row's key is held by a live entry (the write transaction
// checks the merge).
func (c *Store) isDuplicate(ctx context.Context, row *archivalRow, err error) bool {
	if row.key == "" || !errors.Is(err, ErrQuota) {
		return false
	}
	_, _, _, ok, lerr := liveByKey(ctx, c.rdb, row.e.Agent, row.key)
	return lerr == nil && ok
}

// supersedeArchival implements [Archival.Supersede]: an insert that
// retires oldID in its transaction.
func (c *Store) supersedeArchival(ctx context.Context, agent string, oldID int64, e ArchivalEntry) (ArchivalEntry, error) {
	if oldID <= 0 {
		return e, invalidArg("archival id %d", oldID)
	}
	if err := c.checkOpen(ctx); err != nil {
		return e, err
	}
	c.holdArchival(ctx, agent)
	return c.insertArchival(ctx, agent, e, oldID)
}

// holdArchival has a partial text cache load agent's archival entries
// ahead of a write that deletes or retires some of them, so that the
// cache follows the write in its store-wide statistics rather than drop
// them, which would make every agent's next search count its terms in
// the whole store (searchindex.Index.HoldOwner). A store-wide cache, or
// none, does nothing.
func (c *Store) holdArchival(ctx context.Context, agent string) {
	if checkAgent(agent) == nil {
		c.index.HoldOwner(ctx, search.Archival, agent)
	}
}

const archivalCols = `id, agent, content, metadata_json, tags_json, created_at, valid_from, valid_to, COALESCE(superseded_by, 0)`

func scanArchival(s scanner) (ArchivalEntry, error) {
	var e ArchivalEntry
	var meta, tags string
	var created, from int64
	var to unixnanos.Null
	if err := s.Scan(&e.ID, &e.Agent, &e.Content, &meta, &tags, unixnanos.Scanner{N: &created}, unixnanos.Scanner{N: &from}, &to, &e.SupersededBy); err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
		return e, fmt.Errorf("archival %d metadata: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
		return e, fmt.Errorf("archival %d tags: %w", e.ID, err)
	}
	if len(e.Tags) == 0 {
		e.Tags = nil
	}
	e.CreatedAt, e.ValidFrom = fromNanos(created), fromNanos(from)
	if to.Valid {
		t := time.Unix(0, to.N).UTC()
		e.ValidTo = &t
	}
	return e, nil
}

// getArchival implements [Archival.Get].
func (c *Store) getArchival(ctx context.Context, agent string, id int64) (ArchivalEntry, error) {
	if err := c.checkOpen(ctx); err != nil {
		return ArchivalEntry{}, err
	}
	e, err := scanArchival(c.rdb.QueryRowContext(ctx, `SELECT `+archivalCols+` FROM archival WHERE id = ? AND agent = ?`, id, agent))
	if errors.Is(err, sql.ErrNoRows) {
		return e, notFound("archival entry %d of agent %q", id, agent)
	}
	if err != nil {
		return e, fmt.Errorf("memory: get archival %d of %q: %w", id, agent, err)
	}
	return e, nil
}

// listArchival implements [Archival.List]; Export reads every entry with
// it.
func (c *Store) listArchival(ctx context.Context, agent string, q *ArchivalQuery) ([]ArchivalEntry, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	var qq ArchivalQuery
	if q != nil {
		qq = *q
	}
	if qq.Limit < 0 || qq.Offset < 0 {
		return nil, invalidArg("negative limit or offset")
	}
	if qq.Limit == 0 {
		qq.Limit = 100
	}
	sqlq := `SELECT ` + archivalCols + ` FROM archival WHERE agent = ?`
	args := []any{agent}
	if !qq.IncludeSuperseded {
		sqlq += ` AND valid_to IS NULL`
	}
	if tags := normTags(qq.Tags); len(tags) > 0 {
		sqlq += ` AND id IN (SELECT archival_id FROM archival_tags WHERE tag IN (?` + strings.Repeat(", ?", len(tags)-1) + `))`
		for _, t := range tags {
			args = append(args, t)
		}
	}
	for _, f := range qq.Metadata {
		cond, fargs, err := searchindex.MetadataCondition(c.be.SearchDialect(), "metadata_json", f)
		if err != nil {
			return nil, fmt.Errorf("%w: list archival of %q: %w", ErrInvalidArgument, agent, err)
		}
		sqlq += ` AND ` + cond
		args = append(args, fargs...)
	}
	sqlq += ` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`
	args = append(args, qq.Limit, qq.Offset)
	rows, err := c.rdb.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: list archival of %q: %w", agent, err)
	}
	defer rows.Close()
	var out []ArchivalEntry
	for rows.Next() {
		e, err := scanArchival(rows)
		if err != nil {
			return nil, fmt.Errorf("memory: list archival of %q: %w", agent, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// deleteArchival implements [Archival.Delete]; the entry's full-text and
// vector rows go by trigger. A pending merge proposal naming the entry is
// withdrawn in the same transaction: SQLite gives the highest id to the
// next entry once its row is gone, and approving the merge would then
// supersede that unrelated entry.
func (c *Store) deleteArchival(ctx context.Context, agent string, id int64) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	c.holdArchival(ctx, agent)
	var n int64
	err := c.write(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		res, err := c.txExec(ctx, tx, archivalDeleteSQL, id, agent)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		return withdrawMergesOf(ctx, tx, agent, id, c.nanos())
	})
	if err != nil {
		return fmt.Errorf("memory: delete archival %d of %q: %w", id, agent, err)
	}
	if n == 0 {
		return notFound("archival entry %d of agent %q", id, agent)
	}
	return nil
}

// searchArchival implements [Archival.Search].
func (c *Store) searchArchival(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	o := cloneOptions(opts).ContentTypes(search.Archival)
	return c.search(ctx, agent, query, o)
}

// search implements [Agent.Search]: the index scopes every statement to
// what agent may see.
func (c *Store) search(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(agent) == "" {
		return nil, invalidArg("agent id is empty")
	}
	return c.index.Search(ctx, query, search.Scope{Agent: agent}, opts)
}

// SearchAll searches every agent's content: the system's cross-agent view.
func (c *Store) SearchAll(ctx context.Context, query string, opts *search.Options) ([]search.Result, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	return c.index.Search(ctx, query, search.Scope{All: true}, opts)
}

// Reembed recomputes every vector with the store's embedder and records it
// as the database's embedder (see Options.Embedder).
func (c *Store) Reembed(ctx context.Context, progress func(done, total int)) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	return c.index.Reembed(ctx, progress)
}

// cloneOptions copies opts so narrowing it does not change the caller's.
func cloneOptions(opts *search.Options) *search.Options {
	if opts == nil {
		return search.NewOptions()
	}
	cp := *opts
	return &cp
}

// withdrawMergesOf withdraws agent's pending merge proposals that name
// archival entry id among their sources.
func withdrawMergesOf(ctx context.Context, tx *sql.Tx, agent string, id int64, now int64) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, args_json FROM proposals WHERE proposer = ? AND op = ? AND block_id IS NULL
		AND status = 'pending' AND args_json LIKE ?`, agent, OpMergeArchival, "%"+strconv.FormatInt(id, 10)+"%")
	if err != nil {
		return fmt.Errorf("withdraw the merges of archival %d: %w", id, err)
	}
	var ids []int64
	for rows.Next() {
		var pid int64
		var args string
		if err := rows.Scan(&pid, &args); err != nil {
			rows.Close()
			return fmt.Errorf("withdraw the merges of archival %d: %w", id, err)
		}
		var m ArchivalMerge
		if json.Unmarshal([]byte(args), &m) == nil && slices.Contains(m.Sources, id) {
			ids = append(ids, pid)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("withdraw the merges of archival %d: %w", id, err)
	}
	for _, pid := range ids {
		if _, err := tx.ExecContext(ctx, `UPDATE proposals SET status = 'withdrawn', decided_at = ?, decided_by = 'system',
			reason = reason || ? WHERE id = ? AND status = 'pending'`, now, fmt.Sprintf(" [withdrawn: archival entry %d was deleted]", id), pid); err != nil {
			return fmt.Errorf("withdraw merge proposal %d: %w", pid, err)
		}
	}
	return nil
}
