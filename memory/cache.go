package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/migrations"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"

	_ "modernc.org/sqlite" // the SQL engine
)

// Options configure a Cache. The zero value (or nil) means the documented
// defaults.
type Options struct {
	// CacheSize is how many block documents stay in memory (default 256).
	CacheSize int
	// WriteBack defers persisting changes until PersistBlock, Flush, Close or
	// eviction. The default is write-through: a mutating call returns only
	// after its change is durable.
	WriteBack bool
	// Approver decides Partner/Human writes; nil denies them (they are kept
	// as proposals).
	Approver blocks.Approver
	// Embedder, when set, embeds blocks, archival entries and messages for
	// vector and hybrid search. The database records its name and
	// dimensions; opening with a different one fails with
	// search.ErrEmbedderMismatch until Reembed runs.
	Embedder search.Embedder
	// BusyTimeout is how long a write waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
	// CompactAfter folds a block's incremental updates into its snapshot once
	// this many have accumulated (default 128).
	CompactAfter int
	// VectorCache keeps an in-memory copy of the vectors for vector and
	// hybrid search: about 150 MB per 100k 384-dim vectors and a few seconds
	// to load on first use, in exchange for ~5× faster KNN than vec0's scan
	// inside SQLite (hybrid over 100k entries: ~15 ms instead of ~75 ms).
	VectorCache bool
	// OpenForReembed lets Open succeed when the database records another
	// embedder than Embedder: FTS works and Reembed switches the database
	// over; vector work fails with search.ErrEmbedderMismatch until then.
	// Without it, such an Open fails with search.ErrEmbedderMismatch.
	OpenForReembed bool
	// Logger receives debug and error logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock for timestamps (default time.Now).
	Now func() time.Time
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.CacheSize <= 0 {
		out.CacheSize = 256
	}
	if out.BusyTimeout <= 0 {
		out.BusyTimeout = 10 * time.Second
	}
	if out.CompactAfter <= 0 {
		out.CompactAfter = 128
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out
}

// Cache is the default Store: block documents are loaded lazily from SQLite,
// kept in an LRU of Options.CacheSize, and their changes are written through
// to SQLite as incremental automerge changes. Several Caches (in one process
// or several) may share one database file. A Cache is safe for concurrent
// use.
type Cache struct {
	opts  Options
	wdb   *sql.DB // one connection, BEGIN IMMEDIATE transactions
	rdb   *sql.DB // readers (the same pool as wdb for ":memory:")
	index *search.Index
	log   *slog.Logger

	lru     *lru.Cache[int64, *entry]
	schemas sync.Map   // schema JSON → decoded schema.Schema (listings decode each row otherwise)
	stmts   sync.Map   // SQL → *sql.Stmt on rdb, for hot read queries (see prepared)
	loadMu  sync.Mutex // serializes cold loads so one block is loaded once
	mu      sync.Mutex // guards dirty, evicted, closed
	dirty   map[*entry]struct{}
	evicted []*entry
	closed  bool
}

// entry is one cached block document.
type entry struct {
	mu      sync.Mutex // serializes refresh and persist of this block here
	state   sync.Mutex // guards writes of lastSeq, epoch, metaVer, broken (made under mu) against lock-free readers
	id      int64
	owner   string
	label   string
	doc     *blocks.Document // the owner's view
	lastSeq int64            // highest update sequence reflected in doc
	epoch   int64
	metaVer int64
	broken  error               // set when a persist failed; the entry is dropped
	actors  map[string]struct{} // who made the pending changes
}

// freshness reads the fields the cache-hit path compares without taking mu
// (which a persist may hold across a database write).
func (e *entry) freshness() (lastSeq, epoch, metaVer int64, broken error) {
	e.state.Lock()
	defer e.state.Unlock()
	return e.lastSeq, e.epoch, e.metaVer, e.broken
}

// set updates the freshness fields; callers hold mu.
func (e *entry) set(f func(e *entry)) {
	e.state.Lock()
	f(e)
	e.state.Unlock()
}

// Open opens (creating if needed) the store at path; ":memory:" gives a
// throw-away in-memory store. It applies migrations and sets WAL mode.
func Open(ctx context.Context, path string, opts *Options) (*Cache, error) {
	o := opts.withDefaults()
	c := &Cache{opts: o, log: o.Logger, dirty: map[*entry]struct{}{}}
	var err error
	if path == ":memory:" {
		// One connection shared by readers and the writer: each new
		// connection to ":memory:" would be a different database.
		c.wdb, err = sql.Open("sqlite", dsn(":memory:", o, false))
		if err != nil {
			return nil, fmt.Errorf("memory: open :memory:: %w", err)
		}
		c.wdb.SetMaxOpenConns(1)
		c.rdb = c.wdb
	} else {
		if err := enableWAL(ctx, path, o); err != nil {
			return nil, err
		}
		if c.wdb, err = sql.Open("sqlite", dsn(path, o, true)); err != nil {
			return nil, fmt.Errorf("memory: open %s: %w", path, err)
		}
		c.wdb.SetMaxOpenConns(1)
		if c.rdb, err = sql.Open("sqlite", dsn(path, o, false)); err != nil {
			c.wdb.Close()
			return nil, fmt.Errorf("memory: open %s: %w", path, err)
		}
		c.rdb.SetMaxOpenConns(4)
	}
	fail := func(err error) (*Cache, error) {
		c.closeDBs()
		return nil, err
	}
	// Migrations and the index's schema work take their own write locks;
	// they run on the reader pool, whose busy timeout is the long one.
	if _, _, err := migrations.Apply(ctx, c.rdb); err != nil {
		return fail(fmt.Errorf("memory: migrate %s: %w", path, err))
	}
	c.index, err = search.NewIndex(ctx, c.rdb, o.Embedder, &search.IndexOptions{VectorCache: o.VectorCache})
	if err != nil && !(o.OpenForReembed && c.index != nil && errors.Is(err, search.ErrEmbedderMismatch)) {
		return fail(fmt.Errorf("memory: search index for %s: %w (open with OpenForReembed and run Reembed to switch)", path, err))
	}
	c.lru, err = lru.NewWithEvict(o.CacheSize, c.onEvict)
	if err != nil {
		return fail(fmt.Errorf("memory: cache: %w", err))
	}
	c.log.Debug("engram store opened", "path", path, "cache_size", o.CacheSize, "write_back", o.WriteBack)
	return c, nil
}

func dsn(path string, o Options, immediate bool) string {
	q := url.Values{}
	busy := o.BusyTimeout.Milliseconds()
	if immediate {
		busy = 1 // the writer polls in Cache.write instead; see there
	}
	q.Set("_busy_timeout", fmt.Sprint(busy))
	q.Set("_foreign_keys", "1")
	if path != ":memory:" {
		q.Set("_journal_mode", "WAL")
		// NORMAL in WAL mode survives process crashes (kill -9); FULL would
		// also survive power loss at a large cost per commit.
		q.Set("_synchronous", "NORMAL")
	}
	if immediate {
		q.Set("_txlock", "immediate")
	}
	return path + "?" + q.Encode()
}

// enableWAL switches a file to WAL once. The switch needs an exclusive lock
// SQLite does not wait for, so concurrent openers retry briefly.
func enableWAL(ctx context.Context, path string, o Options) error {
	db, err := sql.Open("sqlite", path+"?_busy_timeout="+fmt.Sprint(o.BusyTimeout.Milliseconds()))
	if err != nil {
		return fmt.Errorf("memory: open %s: %w", path, err)
	}
	defer db.Close()
	deadline := time.Now().Add(o.BusyTimeout)
	for {
		var mode string
		err = db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil && strings.EqualFold(mode, "wal") {
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("memory: set WAL mode on %s: %v (mode %q)", path, err, mode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *Cache) closeDBs() {
	if c.rdb != nil && c.rdb != c.wdb {
		c.rdb.Close()
	}
	if c.wdb != nil {
		c.wdb.Close()
	}
}

// DB returns the read pool, for tools (CLI stats, tests) that need raw
// read-only SQL.
func (c *Cache) DB() *sql.DB { return c.rdb }

// Index returns the search index the store maintains.
func (c *Cache) Index() *search.Index { return c.index }

// Close flushes unpersisted changes (write-back mode) and closes the
// database. Further calls fail with ErrClosed.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	err := c.Flush(context.Background())
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.lru.Purge()
	c.closeStmts()
	c.closeDBs()
	return err
}

func (c *Cache) checkOpen(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// Flush persists every block with unpersisted changes (write-back mode).
func (c *Cache) Flush(ctx context.Context) error {
	c.mu.Lock()
	pending := make([]*entry, 0, len(c.dirty))
	for e := range c.dirty {
		pending = append(pending, e)
	}
	c.mu.Unlock()
	sort.Slice(pending, func(i, j int) bool { return pending[i].id < pending[j].id })
	var errs []error
	for _, e := range pending {
		if err := c.persist(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// onEvict runs inside the LRU's lock: only note the entry; flushing (I/O)
// happens after the LRU call returns, in flushEvicted.
func (c *Cache) onEvict(_ int64, e *entry) {
	c.mu.Lock()
	if _, dirty := c.dirty[e]; dirty {
		c.evicted = append(c.evicted, e)
	}
	c.mu.Unlock()
}

func (c *Cache) flushEvicted(ctx context.Context) {
	c.mu.Lock()
	ev := c.evicted
	c.evicted = nil
	c.mu.Unlock()
	for _, e := range ev {
		if err := c.persist(ctx, e); err != nil {
			// Still in c.dirty: Flush or Close retries it. Nothing is lost.
			c.log.Error("flush of evicted block failed", "block", e.label, "owner", e.owner, "err", err)
		}
	}
}

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
	rendered                      string
	createdAt, updatedAt          int64
}

const blockCols = `id, owner, label, description, block_type, permission, schema_json, char_limit,
	pinned, priority, meta_ver, epoch, snapshot_seq, last_seq, rendered, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

// scanBlock scans blockCols, then any extra columns selected after them.
func scanBlock(s scanner, extra ...any) (blockRow, error) {
	var r blockRow
	dest := append([]any{&r.id, &r.owner, &r.label, &r.description, &r.blockType, &r.permission, &r.schema, &r.charLimit,
		&r.pinned, &r.priority, &r.metaVer, &r.epoch, &r.snapshotSeq, &r.lastSeq, &r.rendered, &r.createdAt, &r.updatedAt}, extra...)
	err := s.Scan(dest...)
	return r, err
}

func (r blockRow) info() (blocks.Info, error) {
	return r.infoWith(nil)
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

func (c *Cache) nanos() int64 { return c.opts.Now().UnixNano() }

// entryFor returns the fresh cached entry of block (owner, label), loading
// it on a miss. On a hit the only SQL is the freshness check: one indexed
// row read of the block's sequence, epoch and metadata version.
func (c *Cache) entryFor(ctx context.Context, owner, label string) (*entry, error) {
	var id, lastSeq, epoch, metaVer, snapSeq int64
	st, err := c.prepared(ctx, `SELECT id, last_seq, epoch, meta_ver, snapshot_seq FROM blocks WHERE owner = ? AND label = ?`)
	if err != nil {
		return nil, fmt.Errorf("memory: look up block %q of %q: %w", label, owner, err)
	}
	err = st.QueryRowContext(ctx, owner, label).Scan(&id, &lastSeq, &epoch, &metaVer, &snapSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("block %q of agent %q", label, owner)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: look up block %q of %q: %w", label, owner, err)
	}
	if e, ok := c.lru.Get(id); ok {
		eSeq, eEpoch, eMeta, broken := e.freshness()
		if broken == nil && eEpoch == epoch && eSeq >= lastSeq && eMeta == metaVer {
			return e, nil
		}
		if broken == nil && eEpoch == epoch {
			if err := c.catchUp(ctx, e); err != nil {
				return nil, err
			}
			return e, nil
		}
		c.lru.Remove(id) // history was rebased elsewhere: reload
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if e, ok := c.lru.Get(id); ok {
		if _, eEpoch, _, broken := e.freshness(); broken == nil && eEpoch == epoch {
			return e, c.catchUp(ctx, e)
		}
	}
	e, err := c.load(ctx, id)
	if err != nil {
		return nil, err
	}
	c.lru.Add(id, e)
	c.flushEvicted(ctx)
	return e, nil
}

// load reads a block's snapshot and updates in one read transaction.
func (c *Cache) load(ctx context.Context, id int64) (*entry, error) {
	tx, err := c.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("memory: load block %d: %w", id, err)
	}
	defer tx.Rollback()
	var snap []byte
	row := tx.QueryRowContext(ctx, `SELECT `+blockCols+`, snapshot FROM blocks WHERE id = ?`, id)
	r, err := scanBlock(row, &snap)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("block %d", id)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: load block %d: %w", id, err)
	}
	info, err := r.infoWith(&c.schemas)
	if err != nil {
		return nil, err
	}
	doc, err := blocks.Load(info, snap, &blocks.Options{Approver: c.opts.Approver, Now: c.opts.Now})
	if err != nil {
		return nil, fmt.Errorf("memory: load block %q of %q: %w", r.label, r.owner, err)
	}
	e := &entry{id: id, owner: r.owner, label: r.label, doc: doc, lastSeq: r.snapshotSeq, epoch: r.epoch, metaVer: r.metaVer}
	if err := c.applyUpdates(ctx, tx, e, r.lastSeq); err != nil {
		return nil, err
	}
	if err := doc.MarkPersisted(doc.Heads()); err != nil {
		return nil, err
	}
	doc.Subscribe(func(ev blocks.Event) { c.onChange(e, ev) })
	return e, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// applyUpdates loads the updates after e.lastSeq (up to upTo) into e.doc.
// If a compaction elsewhere already folded some of them into the snapshot,
// the snapshot is merged in first. Caller holds e.mu or owns e exclusively.
func (c *Cache) applyUpdates(ctx context.Context, q querier, e *entry, upTo int64) error {
	if upTo <= e.lastSeq {
		return nil
	}
	var snapSeq int64
	if err := q.QueryRowContext(ctx, `SELECT snapshot_seq FROM blocks WHERE id = ?`, e.id).Scan(&snapSeq); err != nil {
		return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	if snapSeq > e.lastSeq {
		var snap []byte
		if err := q.QueryRowContext(ctx, `SELECT snapshot FROM blocks WHERE id = ?`, e.id).Scan(&snap); err != nil {
			return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		if err := e.doc.LoadIncremental(snap); err != nil {
			return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		e.set(func(e *entry) { e.lastSeq = snapSeq })
	}
	rows, err := q.QueryContext(ctx, `SELECT seq, data FROM block_updates WHERE block_id = ? AND seq > ? AND seq <= ? ORDER BY seq`, e.id, e.lastSeq, upTo)
	if err != nil {
		return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
		}
		if err := e.doc.LoadIncremental(data); err != nil {
			return fmt.Errorf("memory: catch up block %q update %d: %w", e.label, seq, err)
		}
		e.set(func(e *entry) { e.lastSeq = seq })
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("memory: catch up block %q: %w", e.label, err)
	}
	if e.lastSeq < upTo {
		e.set(func(e *entry) { e.lastSeq = upTo })
	}
	return nil
}

// catchUp applies what other writers persisted since e was last fresh and
// reloads changed metadata.
func (c *Cache) catchUp(ctx context.Context, e *entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	tx, err := c.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
	}
	defer tx.Rollback()
	r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+blockCols+` FROM blocks WHERE id = ?`, e.id))
	if errors.Is(err, sql.ErrNoRows) {
		c.lru.Remove(e.id)
		return notFound("block %q of agent %q", e.label, e.owner)
	}
	if err != nil {
		return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
	}
	if r.metaVer != e.metaVer {
		info, err := r.info()
		if err != nil {
			return err
		}
		if err := e.doc.SetInfo(info); err != nil {
			return fmt.Errorf("memory: refresh block %q: %w", e.label, err)
		}
		e.set(func(e *entry) { e.metaVer = r.metaVer })
	}
	return c.applyUpdates(ctx, tx, e, r.lastSeq)
}

// onChange persists local changes (write-through) or marks the block dirty
// (write-back). It runs on the writer's goroutine right after the commit, so
// a store method that made the change finds it durable when it returns.
func (c *Cache) onChange(e *entry, ev blocks.Event) {
	if ev.Remote {
		return
	}
	e.mu.Lock()
	if e.actors == nil {
		e.actors = map[string]struct{}{}
	}
	e.actors[ev.Actor] = struct{}{}
	e.mu.Unlock()
	c.mu.Lock()
	c.dirty[e] = struct{}{}
	c.mu.Unlock()
	if c.opts.WriteBack {
		return
	}
	if err := c.persist(context.Background(), e); err != nil {
		c.log.Error("write-through failed", "block", e.label, "owner", e.owner, "err", err)
	}
}

// persist writes e's pending changes as one update row, after applying
// whatever other writers added since, in one IMMEDIATE transaction.
func (c *Cache) persist(ctx context.Context, e *entry) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.broken != nil {
		return e.broken
	}
	data, heads, err := e.doc.PendingChanges()
	if err != nil {
		return c.breakEntry(e, err)
	}
	if len(data) == 0 {
		c.mu.Lock()
		delete(c.dirty, e)
		c.mu.Unlock()
		return nil
	}
	actors := make([]string, 0, len(e.actors))
	for a := range e.actors {
		actors = append(actors, a)
	}
	sort.Strings(actors)
	rendered, compacted, err := c.writeUpdate(ctx, e, data, strings.Join(actors, ","))
	if err != nil {
		return c.breakEntry(e, err)
	}
	if err := e.doc.MarkPersisted(heads); err != nil {
		return c.breakEntry(e, err)
	}
	e.actors = nil
	c.mu.Lock()
	delete(c.dirty, e)
	c.mu.Unlock()
	if compacted {
		c.log.Debug("compacted block", "block", e.label, "owner", e.owner, "seq", e.lastSeq)
	}
	c.indexBlock(ctx, e, rendered)
	return nil
}

func (c *Cache) writeUpdate(ctx context.Context, e *entry, data []byte, actors string) (rendered string, compacted bool, err error) {
	// The write must finish once started: a cancelled caller must not leave
	// the change half-acknowledged.
	wctx := context.WithoutCancel(ctx)
	err = c.write(wctx, func(tx *sql.Tx) error {
		var err error
		rendered, compacted, err = c.writeUpdateTx(wctx, tx, e, data, actors)
		return err
	})
	return rendered, compacted, err
}

func (c *Cache) writeUpdateTx(wctx context.Context, tx *sql.Tx, e *entry, data []byte, actors string) (rendered string, compacted bool, err error) {
	var lastSeq, snapSeq, epoch int64
	err = tx.QueryRowContext(wctx, `SELECT last_seq, snapshot_seq, epoch FROM blocks WHERE id = ?`, e.id).Scan(&lastSeq, &snapSeq, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, notFound("block %q of agent %q was deleted", e.label, e.owner)
	}
	if err != nil {
		return "", false, err
	}
	if epoch != e.epoch {
		return "", false, fmt.Errorf("block %q was rebased by another writer", e.label)
	}
	if err = c.applyUpdates(wctx, tx, e, lastSeq); err != nil {
		return "", false, err
	}
	seq := lastSeq + 1
	now := c.nanos()
	if _, err = tx.ExecContext(wctx, `INSERT INTO block_updates (block_id, seq, epoch, actor, data, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		e.id, seq, epoch, actors, data, now); err != nil {
		return "", false, err
	}
	rendered = e.doc.Render()
	heads := strings.Join(e.doc.Heads(), ",")
	if _, err = tx.ExecContext(wctx, `UPDATE blocks SET last_seq = ?, rendered = ?, heads = ?, updated_at = ? WHERE id = ?`,
		seq, rendered, heads, now, e.id); err != nil {
		return "", false, err
	}
	if seq-snapSeq >= int64(c.opts.CompactAfter) {
		if err = compactLocked(wctx, tx, e, seq); err != nil {
			return "", false, err
		}
		compacted = true
	}
	// The new sequence is only ours once the transaction commits; a retry
	// re-reads last_seq, so setting it early is harmless.
	e.set(func(e *entry) { e.lastSeq = seq })
	return rendered, compacted, nil
}

// compactLocked folds all updates up to seq into the snapshot, inside the
// caller's write transaction. Readers in other processes either see the old
// snapshot and the old updates or the new snapshot (WAL snapshot isolation).
func compactLocked(ctx context.Context, tx *sql.Tx, e *entry, seq int64) error {
	snap, err := e.doc.Save()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE blocks SET snapshot = ?, snapshot_seq = ? WHERE id = ?`, snap, seq, e.id); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM block_updates WHERE block_id = ? AND seq <= ?`, e.id, seq)
	return err
}

// breakEntry drops a block whose change could not be persisted, so the next
// read sees the last durable state.
func (c *Cache) breakEntry(e *entry, err error) error {
	err = fmt.Errorf("%w: block %q of agent %q: %w", ErrPersist, e.label, e.owner, err)
	e.set(func(e *entry) { e.broken = err })
	c.lru.Remove(e.id)
	c.mu.Lock()
	delete(c.dirty, e)
	c.mu.Unlock()
	return err
}

// indexBlock refreshes the block's vector after a persisted change. FTS is
// kept in sync by triggers on blocks.rendered; vectors need the embedder,
// which may be remote, so they are computed outside the write transaction.
func (c *Cache) indexBlock(ctx context.Context, e *entry, rendered string) {
	if c.index == nil || c.index.Embedder() == nil {
		return
	}
	info := e.doc.Info()
	item := search.VectorItem{ID: e.id, Owner: e.owner, Text: search.BlockText(info.Label, info.Description, rendered)}
	vecs, err := c.index.Embed(context.WithoutCancel(ctx), []string{item.Text})
	if err == nil {
		err = c.write(ctx, func(tx *sql.Tx) error {
			return c.index.PutEmbeddings(context.WithoutCancel(ctx), tx, search.Blocks, []search.EmbeddingItem{{ID: item.ID, Owner: item.Owner, Vector: vecs[0]}})
		})
	}
	if err != nil {
		c.log.Error("embedding block failed", "block", e.label, "owner", e.owner, "err", err)
	}
}
