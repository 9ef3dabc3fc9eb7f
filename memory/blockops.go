package memory

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// checkAgent refuses an empty agent id.
func checkAgent(agent string) error {
	if strings.TrimSpace(agent) == "" {
		return invalidArg("agent id is empty")
	}
	return nil
}

func checkIDs(agent, label string) error {
	if err := checkAgent(agent); err != nil {
		return err
	}
	if strings.TrimSpace(label) == "" {
		return invalidArg("block label is empty (agent %q)", agent)
	}
	return nil
}

// createBlock implements [Agent.CreateBlock] and returns the new block's
// view. The creating change (and the initial value, if any) is written by
// the system.
func (c *Store) createBlock(ctx context.Context, agent string, spec BlockSpec) (*blocks.Document, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if err := checkIDs(agent, spec.Label); err != nil {
		return nil, err
	}
	if err := blocks.CheckLabel(spec.Label); err != nil {
		return nil, fmt.Errorf("%w: create block for %q: %w", ErrInvalidArgument, agent, err)
	}
	info := blocks.Info{Label: spec.Label, Description: spec.Description, Type: spec.Type, Schema: spec.Schema,
		Permission: spec.Permission, CharLimit: spec.CharLimit, Owner: agent, Pinned: spec.Pinned, Priority: spec.Priority}
	if info.Type == "" {
		info.Type = blocks.Working
	}
	if info.Schema == nil {
		info.Schema = schema.Text{}
		if info.Type == blocks.Log {
			info.Schema = schema.Log{}
		}
	}
	if info.Permission == 0 {
		info.Permission = blocks.ReadWrite
	}
	if info.CharLimit == 0 {
		info.CharLimit = blocks.DefaultCharLimit
	}
	if info.CharLimit > blocks.MaxCharLimit {
		return nil, invalidArg("block %q of %q: char limit %d is above the maximum %d (a block is memory a model reads; store big texts as archival entries)",
			spec.Label, agent, info.CharLimit, blocks.MaxCharLimit)
	}
	doc, err := blocks.New(info, &blocks.Options{Approver: c.opts.Approver, Now: c.opts.Now})
	if err != nil {
		return nil, fmt.Errorf("memory: create block %q for %q: %w", spec.Label, agent, err)
	}
	if spec.Value != nil {
		value := spec.Value
		if _, ok := schema.Deref(info.Schema).(schema.Map); ok {
			// Fields the initial value leaves out keep what the new block
			// holds (schema defaults, counters at 0): SetValue alone would
			// clear them.
			created, err := doc.Value()
			if err != nil {
				return nil, fmt.Errorf("memory: create block %q for %q: %w", spec.Label, agent, err)
			}
			value = withFields(value, created)
		}
		if err := doc.SetValue(value, blocks.System); err != nil {
			return nil, fmt.Errorf("memory: create block %q for %q: initial value: %w", spec.Label, agent, err)
		}
	}
	snap, err := doc.Save()
	if err != nil {
		return nil, err
	}
	schemaJSON, err := schema.Marshal(info.Schema)
	if err != nil {
		return nil, err
	}
	now := c.nanos()
	rendered := doc.Render()
	var id int64
	incarnation := newIncarnation()
	// The owner's lock: its generation, and its label taken by one
	// creator at a time.
	err = c.writeBlocks(ctx, agentLock(agent), func(ctx context.Context, tx *sql.Tx) error {
		if err := tx.QueryRow(`INSERT INTO blocks (owner, label, description, block_type, permission, schema_json,
			char_limit, pinned, priority, rendered, heads, created_at, updated_at, incarnation)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, label) DO NOTHING RETURNING id`,
			agent, info.Label, info.Description, string(info.Type), info.Permission.String(), string(schemaJSON),
			info.CharLimit, info.Pinned, info.Priority, rendered, strings.Join(doc.Heads(), ","), now, now, incarnation).Scan(&id); err != nil {
			return err
		}
		c.created(tx, id)
		if err := putSnapshot(ctx, tx, id, snap); err != nil {
			return err
		}
		return bumpGen(tx, agent)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: block %q of agent %q", ErrExists, spec.Label, agent)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: create block %q for %q: %w", spec.Label, agent, err)
	}
	if err := blockseam.MarkPersisted(doc, doc.Heads()); err != nil {
		return nil, err
	}
	e, err := c.manage(doc, id, 0)
	if err != nil {
		return nil, err
	}
	e.incarnation = incarnation
	// Stale until first checked: a notification of another process's write
	// that came before the Add found nothing to mark.
	e.stale.Store(true)
	c.cacheAdd(id, e)
	c.remember(e)
	c.flushEvicted(ctx)
	c.wakeEmbedder()
	return doc.View(agent, info.Permission), nil
}

// newIncarnation tells a new block from every earlier one with its id
// (random, never 0, which marks rows made before the column existed).
// SQLite reuses the id of the block deleted last, and a cache recognises a
// block by its id: without it, a block deleted and made again by another
// process could look to this process's cache like the one it holds, and it
// would serve, and write changes based on, the old block's document.
func newIncarnation() int64 { return rand.Int64N(1<<62) + 1 }

// getBlock returns agent's view of its own block (see [Block.Doc]).
func (c *Store) getBlock(ctx context.Context, agent, label string) (*blocks.Document, error) {
	_, doc, err := c.view(ctx, agent, "", label)
	return doc, err
}

// getSharedBlock returns requester's view of owner's block, through the
// share (see [Block.Doc]); the handles also use it to tell a sharee's
// ErrNotFound. Asking for one's own block works too.
func (c *Store) getSharedBlock(ctx context.Context, requester, owner, label string) (*blocks.Document, error) {
	if strings.TrimSpace(owner) == "" {
		return nil, invalidArg("owner is empty")
	}
	_, doc, err := c.view(ctx, requester, owner, label)
	return doc, err
}

func (c *Store) sharedPermission(ctx context.Context, requester, owner, label string) (blocks.Permission, error) {
	var p string
	err := c.rdb.QueryRowContext(ctx, `SELECT s.permission FROM shares s JOIN blocks b ON b.id = s.block_id
		WHERE b.owner = ? AND b.label = ? AND s.agent = ?`, owner, label, requester).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, notFound("block %q of agent %q is not shared with %q", label, owner, requester)
	}
	if err != nil {
		return 0, fmt.Errorf("memory: share lookup %q/%q for %q: %w", owner, label, requester, err)
	}
	return blocks.ParsePermission(p)
}

// view resolves (agent, owner, label) to a view with the agent's effective
// permission: its own block when owner is "" or agent, otherwise a block
// shared with it. It also returns the cache entry behind the view.
func (c *Store) view(ctx context.Context, agent, owner, label string) (*entry, *blocks.Document, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, nil, err
	}
	if err := checkIDs(agent, label); err != nil {
		return nil, nil, err
	}
	if owner == "" || owner == agent {
		e, err := c.entryFor(ctx, agent, label)
		if err != nil {
			return nil, nil, err
		}
		return e, e.doc.View(agent, e.doc.Info().Permission), nil
	}
	perm, err := c.sharedPermission(ctx, agent, owner, label)
	if err != nil {
		return nil, nil, err
	}
	e, err := c.entryFor(ctx, owner, label)
	if err != nil {
		return nil, nil, err
	}
	return e, e.doc.View(agent, perm), nil
}

// blocksOf implements [Agent.Blocks].
func (c *Store) blocksOf(ctx context.Context, agent string) ([]BlockMeta, error) {
	return c.listBlocks(ctx, agent, "")
}

// listBlocksByType implements [Agent.BlocksOfType].
func (c *Store) listBlocksByType(ctx context.Context, agent string, t blocks.Type) ([]BlockMeta, error) {
	if _, err := blocks.ParseType(string(t)); err != nil {
		return nil, err
	}
	return c.listBlocks(ctx, agent, t)
}

var typeOrder = `CASE block_type WHEN 'core' THEN 0 WHEN 'working' THEN 1 WHEN 'log' THEN 2 ELSE 3 END`

func (c *Store) listBlocks(ctx context.Context, agent string, t blocks.Type) ([]BlockMeta, error) {
	if err := c.checkOpen(ctx); err != nil {
		return nil, err
	}
	if strings.TrimSpace(agent) == "" {
		return nil, invalidArg("agent id is empty")
	}
	q := `SELECT ` + blockCols + ` FROM blocks WHERE owner = ?`
	args := []any{agent}
	if t != "" {
		q += ` AND block_type = ?`
		args = append(args, string(t))
	}
	q += ` ORDER BY ` + typeOrder + `, id`
	rows, err := c.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: list blocks of %q: %w", agent, err)
	}
	defer rows.Close()
	var out []BlockMeta
	for rows.Next() {
		r, err := scanBlock(rows)
		if err != nil {
			return nil, fmt.Errorf("memory: list blocks of %q: %w", agent, err)
		}
		m, err := r.meta(&c.schemas)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		c.localRendering(&out[i])
	}
	return out, nil
}

// deleteBlock implements [Block.Delete] for the owner agent.
func (c *Store) deleteBlock(ctx context.Context, agent, label string) error {
	return c.deleteBlockAs(ctx, blocks.Agent, agent, label)
}

// deleteBlockAs deletes agent's block label with actor's rights: the
// owner agent (blocks.Agent) needs Admin, the system (Admin.DeleteBlock)
// nothing.
func (c *Store) deleteBlockAs(ctx context.Context, actor blocks.Actor, agent, label string) error {
	doc, err := c.getBlock(ctx, agent, label)
	if err != nil {
		return err
	}
	if err := doc.Authorize(actor, blocks.OpDelete); err != nil {
		return err
	}
	// The generations of the owner and the sharees are bumped before the
	// block and its shares go, under the block's lock (its writers, shares
	// and unshares wait) and then theirs.
	gone := notFound("block %q of agent %q", label, agent)
	err = c.writeBlocks(ctx, nil, func(ctx context.Context, tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM blocks WHERE owner = ? AND label = ?`, agent, label).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return gone
		}
		if err != nil {
			return err
		}
		if err := c.lock(ctx, tx, driver.BlockLock(id)); err != nil {
			return err
		}
		sharees, err := shareesOf(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := c.lock(ctx, tx, agentLocks(append(sharees, agent)...)...); err != nil {
			return err
		}
		if err := bumpGen(tx, append(sharees, agent)...); err != nil {
			return err
		}
		res, err := tx.Exec(`DELETE FROM blocks WHERE id = ? AND owner = ? AND label = ?`, id, agent, label)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cmp.Or(err, gone)
		}
		return nil
	})
	if errors.Is(err, gone) {
		return err
	}
	if err != nil {
		return fmt.Errorf("memory: delete block %q of %q: %w", label, agent, err)
	}
	c.dropBlock(agent, label)
	return nil
}

// dropBlock removes cached entries for a deleted block.
func (c *Store) dropBlock(owner, label string) {
	for _, id := range c.lru.Keys() {
		if e, ok := c.lru.Peek(id); ok && e.owner == owner && e.label == label {
			c.lru.Remove(id)
		}
	}
}

// renderedContent is an own block's rendering as stored with its last
// persisted change (no CRDT load on a cold cache): [Block.Render], and
// the cheapest existence check.
func (c *Store) renderedContent(ctx context.Context, agent, label string) (string, error) {
	if err := c.checkOpen(ctx); err != nil {
		return "", err
	}
	if err := checkIDs(agent, label); err != nil {
		return "", err
	}
	var r string
	err := c.rdb.QueryRowContext(ctx, `SELECT rendered FROM blocks WHERE owner = ? AND label = ?`, agent, label).Scan(&r)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound("block %q of agent %q", label, agent)
	}
	if err != nil {
		return "", fmt.Errorf("memory: rendered content of %q/%q: %w", agent, label, err)
	}
	m := BlockMeta{Owner: agent, Label: label, Rendered: r}
	c.localRendering(&m)
	return m.Rendered, nil
}

// updateBlockText is [Block.SetText] on agent's own block.
func (c *Store) updateBlockText(ctx context.Context, agent, label, text string) error {
	return c.applyEdit(ctx, agent, "", label, Edit{Op: blocks.OpSetText, Text: text})
}

// appendToBlock is [Block.Append] on agent's own block.
func (c *Store) appendToBlock(ctx context.Context, agent, label, text string) error {
	return c.applyEdit(ctx, agent, "", label, Edit{Op: blocks.OpAppendText, Text: text})
}

// replaceInBlock is [Block.Replace] on agent's own block.
func (c *Store) replaceInBlock(ctx context.Context, agent, label, old, new string) (found bool, err error) {
	err = c.applyEdit(ctx, agent, "", label, Edit{Op: blocks.OpReplaceText, Old: old, Text: new})
	return err == nil, err
}

// applyEdit implements [Block.Apply] for agent on owner's block (owner ""
// or agent: its own): first on the cached view, then, unless that write
// is final, on a checked one.
func (c *Store) applyEdit(ctx context.Context, agent, owner, label string, e Edit) error {
	if ent := c.writeView(ctx, agent, owner, label); ent != nil {
		// Only a write that succeeds on the cached view is final: anything
		// else (a refusal decided on a view that may be behind, a block
		// deleted and made again elsewhere) is tried again below on a
		// checked view. A failed attempt wrote nothing.
		doc := ent.doc.View(agent, ent.doc.Info().Permission)
		_, err := e.Apply(doc.WithContext(ctx), blocks.Agent)
		switch {
		case err == nil:
			return nil
		case err != nil && proposalDecided(err):
			// The store decided on the fresh state (entry.Propose): the
			// edit is proposed, or could not apply even if approved.
			return err
		case err != nil && (errors.Is(err, ErrPersist) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrClosed) || ctx.Err() != nil):
			return err // the write itself failed: trying again could write it twice
		}
	}
	_, doc, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// A Partner/Human edit the approver did not allow is kept as a
	// proposal by the view's store (entry.Propose), as for any view.
	// Edit.Apply reports every refusal as an error (found is err == nil).
	_, err = e.Apply(doc.WithContext(ctx), blocks.Agent)
	return err
}

// proposalDecided reports whether err is the store's decision on an edit
// that needs approval: a *ProposalError, or why it could not apply even if
// approved. (A function of its own, so the write path allocates nothing
// for it when there is no error.)
func proposalDecided(err error) bool {
	var pe *ProposalError
	var inv *InapplicableEditError
	return errors.As(err, &pe) || errors.As(err, &inv)
}

// writeView returns the cached entry of the agent's own block for a write
// without the freshness query a read needs (nil: take the checked path).
// The write's transaction checks the row anyway — an edit applied to a
// cached state that is behind is taken back and applied again on the
// fresh one — so the query would only cost a read transaction per write.
func (c *Store) writeView(ctx context.Context, agent, owner, label string) *entry {
	if owner != "" && owner != agent {
		return nil // a share: its permission is read first anyway
	}
	if c.checkOpen(ctx) != nil || checkIDs(agent, label) != nil || ctx.Err() != nil {
		return nil // the checked path reports it
	}
	return c.cachedEntry(agent, label)
}

// RotateLog implements blockseam.LogRotator: an append to a Log block whose
// schema sets a Retention removes the oldest entries in its own change
// (past the retention, or to make room under the character limit), and
// the running Write stores them in the owner's archival memory (tagged
// "log" and "log:<label>") in the transaction that stores the append, so
// the trim and the rows commit together or not at all, whatever path the
// append took (ApplyEdit, the tools, a view from GetBlock). Caller (the
// Write's apply) holds e.mu.
func (e *entry) RotateLog(removed []blocks.LogEntry) { e.rotated = removed }

// rotates reports whether an append to doc may rotate entries out: it is
// a Log block, or a Composite with a Log section, whose log sets a
// Retention.
func rotates(doc *blocks.Document) bool {
	s := doc.Schema()
	if _, ok := blocks.LogRetention(s, ""); ok {
		return true
	}
	if comp, ok := schema.Deref(s).(schema.Composite); ok {
		for _, sec := range comp.Sections {
			if _, ok := blocks.LogRetention(s, sec.Name); ok {
				return true
			}
		}
	}
	return false
}

// insertRotated writes the entries the running Write's append rotated out
// (see RotateLog) as archival rows in its transaction. They are stored
// without vectors, marked for the embedder worker (migration 0014): the
// append never waits for an embedder, and one that is slow or down cannot
// keep a full log from taking entries; a store without one leaves the
// marks to a process that has one. Caller holds e.mu.
func (c *Store) insertRotated(ctx context.Context, tx *sql.Tx, e *entry) error {
	if len(e.rotated) == 0 {
		return nil
	}
	// The owner's archival: after the block's lock, as the order wants.
	if err := c.lock(ctx, tx, driver.AgentLock(e.owner)); err != nil {
		return fmt.Errorf("memory: rotate log %q of agent %q: %w", e.label, e.owner, err)
	}
	rows, err := c.logRows(e, e.rotated, c.opts.Now().UTC())
	if err != nil {
		return fmt.Errorf("memory: rotate log %q of agent %q: %w", e.label, e.owner, err)
	}
	if err := c.checkQuota(ctx, tx, e.owner, rowsBytes(rows)); err != nil {
		return fmt.Errorf("memory: rotate log %q of agent %q into archival: %w", e.label, e.owner, err)
	}
	if err := c.insertArchivalRows(ctx, tx, rows, nil); err != nil {
		return fmt.Errorf("memory: rotate log %q of agent %q: %w", e.label, e.owner, err)
	}
	// Marked whether or not this store has an embedder: another process
	// on the database may, and its worker computes the vectors (as
	// vec_blocks_dirty's triggers mark every block write).
	for chunk := range slices.Chunk(rows, archivalInsertRows) {
		args := make([]any, len(chunk))
		for i, r := range chunk {
			args[i] = r.e.ID
		}
		q := `INSERT INTO vec_archival_dirty (id) VALUES ` + strings.TrimSuffix(strings.Repeat(`(?), `, len(chunk)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("memory: rotate log %q of agent %q: mark entries for embedding: %w", e.label, e.owner, err)
		}
	}
	return nil
}

// logRows are the archival rows of log entries rotated out of block ent.
//
// A block holds entries archival would refuse: an empty or blank message,
// or text with a NUL byte (a log entry's strings are only checked to be
// UTF-8). Refusing one here would refuse the append that rotates it, and
// every append after it, for good: the entry stays the oldest. So each is
// made storable instead: a blank message is stored as emptyLogMessage
// (the row's metadata keeps the message as it was), and text archival
// cannot hold has its bad bytes replaced by U+FFFD.
func (c *Store) logRows(ent *entry, entries []blocks.LogEntry, now time.Time) ([]*archivalRow, error) {
	rows := make([]*archivalRow, len(entries))
	for i, le := range entries {
		meta := map[string]any{"block": ent.label, "timestamp": le.Timestamp.Format(time.RFC3339Nano)}
		for k, v := range le.Fields {
			meta[storableString(k)] = storableValue(v)
		}
		content := storableString(le.Message)
		if strings.TrimSpace(content) == "" {
			meta["message"] = content
			content = emptyLogMessage
		}
		// Not held to the per-entry caps: the block's character limit
		// bounds the entry, and refusing it would refuse every append.
		r, err := c.prepareArchival(ent.owner, ArchivalEntry{Content: content, Metadata: meta,
			Tags: []string{"log", "log:" + ent.label}, CreatedAt: le.Timestamp}, now, false)
		if err != nil {
			return nil, err
		}
		r.key = "" // a log entry is an event: each one is kept, repeated or not
		rows[i] = r
	}
	return rows, nil
}

// emptyLogMessage is the archival content of a rotated log entry whose
// message is empty or blank (archival refuses blank content).
const emptyLogMessage = "(log entry without a message)"

// storableString is s with what storableText refuses (invalid UTF-8, NUL
// bytes) replaced by U+FFFD.
func storableString(s string) string {
	if storableText(s) == "" {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// storableValue is v (a log entry field's value) with storableString
// applied to every string in it.
func storableValue(v any) any {
	switch x := v.(type) {
	case string:
		return storableString(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = storableValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[storableString(k)] = storableValue(e)
		}
		return out
	}
	return v
}

// Apply runs the edit on doc as actor, exactly as [Block.Apply]
// does (without the store's persistence and proposals, which happen
// around it; a Log block's rotation is the store's, part of its write). Run it on a view of a fork (doc.Fork) to try an edit
// without touching the block.
//
// found is false when the edit did not apply, and err then says why: for
// OpReplaceText whose old text does not occur, an error wrapping
// ErrNoMatch, as from Document.ReplaceText and [Block.Apply]. An unknown op is
// an error wrapping ErrInvalidArgument.
func (e Edit) Apply(doc *blocks.Document, actor blocks.Actor) (found bool, err error) {
	found, err = e.apply(doc, actor)
	return found && err == nil, err
}

func (e Edit) apply(doc *blocks.Document, actor blocks.Actor) (found bool, err error) {
	sec := doc.Section(e.Section) // "" is the whole block
	switch e.Op {
	case blocks.OpSetText:
		return true, sec.SetText(e.Text, actor)
	case blocks.OpAppendText:
		return true, sec.AppendText(e.Text, actor)
	case blocks.OpReplaceText:
		return sec.ReplaceText(e.Old, e.Text, actor)
	case blocks.OpInsertText:
		return true, sec.InsertLine(e.Index, e.Text, actor)
	case blocks.OpSetField:
		return true, sec.SetField(e.Field, e.Value, actor)
	case blocks.OpAppendToListField:
		return true, sec.AppendToListField(e.Field, e.Value, actor)
	case blocks.OpIncrementCounter:
		return true, sec.IncrementCounter(e.Field, e.Delta, actor)
	case blocks.OpPushItem:
		return true, sec.PushItem(e.Value, actor)
	case blocks.OpInsertItem:
		return true, sec.InsertItem(e.Index, e.Value, actor)
	case blocks.OpDeleteItem:
		return true, sec.DeleteItem(e.Index, actor)
	case blocks.OpCheckItem:
		checked, ok := e.Value.(bool)
		if !ok {
			return false, fmt.Errorf("%w: check_item needs value true (checked) or false (unchecked), got %T %v", schema.ErrInvalid, e.Value, e.Value)
		}
		return true, sec.CheckItem(e.Index, checked, actor)
	case blocks.OpAppendLogEntry:
		entry, ok := e.Value.(map[string]any)
		if !ok {
			entry = map[string]any{"message": e.Text}
		}
		return true, sec.AppendLogEntry(entry, actor)
	case blocks.OpSetValue:
		return true, doc.SetValue(e.Value, actor)
	}
	return false, fmt.Errorf("%w: unsupported edit op %q", ErrInvalidArgument, e.Op)
}

// persistBlock implements [Block.Persist] (agent is the owner).
func (c *Store) persistBlock(ctx context.Context, agent, label string) error {
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	if err := checkIDs(agent, label); err != nil {
		return err
	}
	e, err := c.entryFor(ctx, agent, label)
	if err != nil {
		return err
	}
	return c.persist(ctx, e)
}

// setBlockPinned implements [Block.SetPinned] (as an OpSetField, which
// ReadWrite may do).
func (c *Store) setBlockPinned(ctx context.Context, agent, label string, pinned bool) error {
	return c.reconfigure(ctx, blocks.Agent, agent, label, blocks.OpSetField, func(info *blocks.Info) { info.Pinned = pinned })
}

// setBlockType implements [Block.SetType] (a reconfiguration: Admin).
func (c *Store) setBlockType(ctx context.Context, agent, label string, t blocks.Type) error {
	if _, err := blocks.ParseType(string(t)); err != nil {
		return err
	}
	return c.reconfigure(ctx, blocks.Agent, agent, label, blocks.OpReconfigure, func(info *blocks.Info) { info.Type = t })
}

// updateBlockSchema implements [Block.SetSchema] (a reconfiguration:
// Admin).
func (c *Store) updateBlockSchema(ctx context.Context, agent, label string, s schema.Schema) error {
	if err := schema.Check(s); err != nil {
		return fmt.Errorf("memory: schema for block %q of %q: %w", label, agent, err)
	}
	return c.reconfigure(ctx, blocks.Agent, agent, label, blocks.OpReconfigure, func(info *blocks.Info) { info.Schema = s })
}

// setBlockPermission implements [Block.SetPermission] (a reconfiguration:
// Admin).
func (c *Store) setBlockPermission(ctx context.Context, agent, label string, p blocks.Permission) error {
	return c.setBlockPermissionAs(ctx, blocks.Agent, agent, label, p)
}

// setBlockPermissionAs sets the owner's permission on agent's block label
// with actor's rights (the system: Admin.SetBlockPermission).
func (c *Store) setBlockPermissionAs(ctx context.Context, actor blocks.Actor, agent, label string, p blocks.Permission) error {
	if !p.Valid() {
		return invalidArg("block %q of agent %q: permission %d", label, agent, int(p))
	}
	return c.reconfigure(ctx, actor, agent, label, blocks.OpReconfigure, func(info *blocks.Info) { info.Permission = p })
}

func (c *Store) reconfigure(ctx context.Context, actor blocks.Actor, agent, label string, op blocks.Op, change func(*blocks.Info)) error {
	// The checks are made on the cached document; the UPDATE takes only if
	// the row is still the one that document reflects, or another
	// process's write that landed in between (content the new schema
	// refuses, say) would be kept under a schema it was never checked
	// against, and its rendering overwritten. Met, the block is reloaded
	// and checked again. Beside another process's unbroken writes the
	// document is always a write behind: after reconfigureOptimistic
	// tries, the block's lock is taken for the read, the checks and the
	// UPDATE, so its writers wait for one reconfiguration.
	for attempt := 0; ; attempt++ {
		again, err := c.reconfigureOnce(ctx, actor, agent, label, op, change, attempt >= reconfigureOptimistic)
		if !again {
			return err
		}
		if attempt > reconfigureOptimistic {
			return fmt.Errorf("%w: reconfigure block %q of %q: the block kept changing under it", ErrPersist, label, agent)
		}
	}
}

// reconfigureOptimistic is how many times a reconfiguration checks the
// cached document and updates the row if unchanged before it takes the
// block's lock for both.
const reconfigureOptimistic = 2

// reconfigureOnce is one attempt of reconfigure; again reports that the
// block's row changed since the document it checked was read. Under
// locked the block's write lock is held from reading the row to the
// UPDATE.
func (c *Store) reconfigureOnce(ctx context.Context, actor blocks.Actor, agent, label string, op blocks.Op, change func(*blocks.Info), locked bool) (again bool, err error) {
	ent, doc, err := c.view(ctx, agent, "", label)
	if err != nil {
		return false, err
	}
	if c.beforeWriteLock != nil {
		c.beforeWriteLock(ent)
	}
	// Held from the checks to the UPDATE: this process's writes wait.
	ent.lock()
	held := true
	release := func() {}
	defer func() {
		if held {
			release()
			ent.unlock()
		}
	}()
	if c.opts.WriteBack {
		// Checked against the copy with every pending edit of the block
		// (another copy's are flushed first; see holdCopy).
		if release, err = c.holdCopy(ctx, ent); err != nil {
			return false, fmt.Errorf("memory: reconfigure block %q of %q: %w", label, agent, err)
		}
	}
	if locked {
		updated := false // the UPDATE ran: a failed commit leaves doc ahead of the row
		err = c.write(ctx, blockLock(ent.id), func(ctx context.Context, tx *sql.Tx) error {
			r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+stateCols+` FROM blocks WHERE id = ?`, ent.id))
			if errors.Is(err, sql.ErrNoRows) {
				c.lru.Remove(ent.id)
				return notFound("block %q of agent %q", label, agent)
			}
			if err != nil {
				return err
			}
			if err := c.refresh(ctx, tx, ent, r); err != nil {
				return err
			}
			doc = ent.doc.View(agent, ent.doc.Info().Permission)
			again, err = c.reconfigureRow(ctx, ent, doc, actor, agent, label, op, change, func(query string, args ...any) (int64, error) {
				res, err := tx.ExecContext(ctx, query, args...)
				if err != nil {
					return 0, err
				}
				n, err := res.RowsAffected()
				updated = err == nil && n > 0
				return n, err
			})
			return err
		})
		if err != nil && updated {
			c.dropBlock(agent, label)
			err = fmt.Errorf("%w: reconfigure block %q of %q: %w", ErrPersist, label, agent, err)
		}
	} else {
		again, err = c.reconfigureRow(ctx, ent, doc, actor, agent, label, op, change, func(query string, args ...any) (int64, error) {
			return c.exec(ctx, blockLock(ent.id), query, args...)
		})
	}
	if again || err != nil {
		return again, err
	}
	ent.set(func(e *entry) { e.metaVer++ })
	c.changes.fire()
	release()
	ent.unlock()
	held = false
	// SetInfo may have created containers for new fields.
	return false, c.persist(ctx, ent)
}

// reconfigureRow checks change against ent's document (authorized as
// doc, the owner's view of it), applies it and updates the block's row
// through exec, if the row is still the one ent reflects (again
// otherwise, with the document as it was). Caller holds ent.mu.
func (c *Store) reconfigureRow(ctx context.Context, ent *entry, doc *blocks.Document, actor blocks.Actor, agent, label string, op blocks.Op, change func(*blocks.Info), exec func(query string, args ...any) (int64, error)) (again bool, err error) {
	seq, epoch, metaVer, broken := ent.freshness()
	if broken != nil {
		c.dropBlock(agent, label)
		return true, nil
	}
	if err := doc.Authorize(actor, op); err != nil {
		return false, err
	}
	// The content is checked and rendered on the managed document, which
	// reads the live state, not on the view, which reads the state before
	// any write in flight: under ent.mu none is, but the check does not
	// depend on it. Checked on an older state, a new schema could pass
	// against content it refuses; rendered from it, the stored rendering
	// would lack an edit until the block's next write.
	live := ent.doc
	info := live.Info()
	old := info.Schema
	change(&info)
	if err := info.Check(); err != nil {
		return false, err
	}
	if info.Schema.Kind() == old.Kind() && !reflect.DeepEqual(old, info.Schema) {
		// (A change of kind is SetInfo's to refuse.) The content must be valid under the new schema, every part of
		// it (SetInfo only needs it readable).
		v, err := live.Value()
		if err == nil {
			err = blocks.CheckValue(info.Schema, v)
		}
		if err != nil {
			return false, fmt.Errorf("memory: block %q of %q: the content does not fit the new schema: %w", label, agent, err)
		}
	}
	prev := live.Info()
	if err := live.SetInfo(info); err != nil {
		return false, err
	}
	schemaJSON, err := schema.Marshal(info.Schema)
	if err != nil {
		_ = live.SetInfo(prev)
		return false, err
	}
	n, err := exec(`UPDATE blocks SET description = ?, block_type = ?, permission = ?, schema_json = ?,
		char_limit = ?, pinned = ?, priority = ?, meta_ver = meta_ver + 1, rendered = ?, updated_at = ?
		WHERE id = ? AND incarnation = ? AND last_seq = ? AND epoch = ? AND meta_ver = ?`,
		info.Description, string(info.Type), info.Permission.String(), string(schemaJSON), info.CharLimit, info.Pinned,
		info.Priority, live.Render(), c.nanos(), ent.id, ent.incarnation, seq, epoch, metaVer)
	if err != nil {
		c.dropBlock(agent, label)
		return false, fmt.Errorf("%w: reconfigure block %q of %q: %v", ErrPersist, label, agent, err)
	}
	if n == 0 {
		// Another writer (or a delete) since the document was read: the
		// document must not keep the metadata the row did not take.
		_ = live.SetInfo(prev)
		c.dropBlock(agent, label)
		return true, nil
	}
	return false, nil
}

// compactBlock implements [Block.Compact].
func (c *Store) compactBlock(ctx context.Context, agent, label string) error {
	e, err := c.entryFor(ctx, agent, label)
	if err != nil {
		return err
	}
	e.lock()
	defer e.unlock()
	var p pendingWrite
	err = c.write(ctx, blockLock(e.id), func(ctx context.Context, tx *sql.Tx) error {
		if _, err := c.compactNow(ctx, tx, e, &p); err != nil {
			return fmt.Errorf("memory: compact block %q: %w", label, err)
		}
		return nil
	})
	if err == nil {
		p.done(c, e)
	}
	return err
}

// withFields fills into an initial map value the fields it leaves out,
// from base (the new block's own value).
func withFields(v, base any) any {
	in, ok := v.(map[string]any)
	b, ok2 := base.(map[string]any)
	if !ok || !ok2 {
		return v
	}
	out := make(map[string]any, len(b))
	for k, x := range b {
		out[k] = x
	}
	for k, x := range in {
		out[k] = x
	}
	return out
}

// mergeChanges implements [Block.Merge]: mergeChangesAs with the merge
// recorded as agent's.
func (c *Store) mergeChanges(ctx context.Context, agent, owner, label string, data []byte) error {
	return c.mergeChangesAs(ctx, agent, owner, label, data, agent)
}

// mergeChangesAs implements [Block.MergeAs]: agent's permission is
// checked, as is recorded.
func (c *Store) mergeChangesAs(ctx context.Context, agent, owner, label string, data []byte, as string) error {
	if err := checkAgent(as); err != nil {
		return fmt.Errorf("memory: merge changes into block %q: recorded as: %w", label, err)
	}
	ent, doc, err := c.view(ctx, agent, owner, label)
	if err != nil {
		return err
	}
	if doc.Permission() < blocks.Append {
		return fmt.Errorf("%w: agent %q may not merge changes into block %q of agent %q: permission %s (merging needs Append or above)",
			blocks.ErrPermission, agent, label, ent.owner, doc.Permission())
	}
	var undo func() error
	req := blockseam.WriteRequest{Label: label, Accessor: agent, Actor: as, Op: blocks.OpMerge, Permission: doc.Permission()}
	// Write takes a failed merge back itself, while it still holds the
	// block (see entry.Write).
	req.Undo = func() error {
		u := undo
		undo = nil
		if u == nil {
			return nil
		}
		return u()
	}
	err = ent.Write(ctx, req, func(current blocks.Permission) error {
		if current < blocks.Append {
			return fmt.Errorf("%w: agent %q may not merge changes into block %q of agent %q: permission is now %s",
				blocks.ErrPermission, agent, label, ent.owner, current)
		}
		var fresh blockseam.Merged
		fresh, undo, err = ent.replica.Merge(data, blocks.Origin{Agent: agent, Permission: current})
		if err != nil {
			return err
		}
		ent.merged = fresh
		return nil
	})
	if err != nil && undo != nil {
		if uerr := undo(); uerr != nil {
			err = fmt.Errorf("%w (and rolling back failed: %v)", err, uerr)
		}
	}
	if _, epoch, _, _ := ent.freshness(); err != nil && epoch > 0 {
		switch {
		case errors.Is(err, blocks.ErrUnrelated):
			err = fmt.Errorf("%w (block %q of agent %q is on epoch %d)", err, label, ent.owner, epoch)
		case errors.Is(err, blocks.ErrCorrupt):
			err = fmt.Errorf("%w (block %q of agent %q is on epoch %d since its history was rebased: changes made on an earlier epoch cannot be merged; load the block's current document and make the edits again)",
				err, label, ent.owner, epoch)
		}
	}
	return err
}

// localRendering puts this process's unflushed write-back edits of block m
// into m.Rendered, so a process reads its own writes (Options.WriteBack
// keeps them out of the database until Flush). Without write-back, or for
// a block with nothing pending, it does nothing.
func (c *Store) localRendering(m *BlockMeta) {
	if !c.opts.WriteBack {
		return
	}
	c.mu.Lock()
	var doc *blocks.Document
	for e := range c.dirty {
		if e.owner == m.Owner && e.label == m.Label {
			doc = e.doc
			break
		}
	}
	c.mu.Unlock()
	if doc != nil {
		m.Rendered = doc.Render()
	}
}
