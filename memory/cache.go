package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
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
	// search.ErrEmbedderMismatch until Reembed runs. The first embedder a
	// database that already holds content is opened with embeds that
	// content during Open (as Reembed does) before it is recorded; if that
	// fails, Open fails and nothing is recorded.
	Embedder search.Embedder
	// BusyTimeout is how long a write waits for another process's lock
	// (default 10s).
	BusyTimeout time.Duration
	// CompactAfter folds a block's incremental updates into its snapshot once
	// this many have accumulated (default 128), and for a large block only
	// once there is also one update per compactCharsPerUpdate (128)
	// characters of content: saving a snapshot costs time in proportion to
	// the block, so a large block is compacted less often than every 128
	// appends (figures in docs/design.md, "How a write works"), and loading those updates still costs no more than loading the
	// snapshot they would have been folded into.
	CompactAfter int
	// HistoryLimit bounds what a block's history costs to load: once the
	// automerge changes written in the block's current epoch exceed this
	// many bytes (default 64 KiB; negative: never), and both they and the
	// estimated cost of loading them are at least 4× the block's size,
	// compaction rebases the block onto a fresh document holding only its
	// current value (a new epoch). The retired history is archived:
	// BlockHistory and BlockAt still read it, but no load or write does. A
	// block that only grows, by appends of a line or so, does not qualify:
	// its history is mostly its content, and a rebase would rebuild all of
	// it to save little.
	HistoryLimit int
	// VectorCacheBytes bounds the in-memory copy of the vectors that vector
	// and hybrid legs scan instead of the database (faster KNN than the
	// exact scan inside SQLite; sizes and figures in docs/performance.md).
	// On SQLite it is kept by default up to 256 MiB (negative:
	// none), loaded in the background from the first vector search on
	// while SQL answers; a database whose vectors need more than the bound
	// searches in SQL. On
	// PostgreSQL pgvector answers by default; a positive bound asks for
	// the in-process copy (search.IndexOptions.VectorCacheBytes).
	VectorCacheBytes int64
	// TextCacheBytes bounds the in-memory copy of the full-text index that
	// full-text legs rank over (default 64 MiB, negative: no copy): FTS5's
	// bm25 over the same terms, returning what FTS5 would, faster. On
	// PostgreSQL the copy ranks with the same BM25 as on SQLite where the
	// tsvector query ranks with an IDF-weighted ts_rank, more slowly
	// (quality and speed in docs/performance.md); a search
	// answered in SQL while the copy loads may order its results a little
	// differently, and only the copy finds metadata booleans (as 1 and 0,
	// as FTS5 does on SQLite) (search.IndexOptions.TextCacheBytes). It costs about 8 bytes per distinct
	// word per row (measured sizes in docs/performance.md). The first
	// search starts building it in the background and searches rank in SQL until it
	// is ready; a database whose copy would exceed the bound ranks in SQL
	// (search.IndexOptions.TextCacheBytes).
	TextCacheBytes int64
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
	if out.HistoryLimit == 0 {
		out.HistoryLimit = 64 << 10
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
	opts Options
	be   Backend
	rdb  *sql.DB // be.DB(): reads
	// ownsBackend: Open made be, so Close closes it.
	ownsBackend bool
	index       *search.Index
	log         *slog.Logger

	lru     *lru.Cache[int64, *entry]
	schemas sync.Map // schema JSON → decoded schema.Schema (listings decode each row otherwise)
	wq      writeQueries
	// names maps nameKey(owner, label) to the cached entry last checked
	// under that name (remember), for the hits that skip the freshness
	// query: a write's (writeView) and, with notifications, a read's
	// (notifiedHit). Evicted entries leave it.
	names   sync.Map
	stmts   sync.Map   // SQL → *sql.Stmt on rdb, for hot read queries (see prepared)
	loadMu  sync.Mutex // serializes cold loads so one block is loaded once
	mu      sync.Mutex // guards dirty, evicted, closed
	dirty   map[*entry]struct{}
	evicted []*entry
	closed  bool

	watch *watch // nil unless the backend is a BlockNotifier

	localEdits atomic.Int64 // write-back edits made here (BlocksStamp.Local)
	// Reads remembered while nothing is committed (see versionMemo): the
	// stamps by agent, and message reads that found nothing (a context
	// build's incremental read, when no message came).
	stamps     versionMemo[string, BlocksStamp]
	noMessages versionMemo[messagesKey, struct{}]

	afterAhead func()      // tests: runs after an edit was applied ahead of the lock
	afterLoad  func(int64) // tests: runs after a block was loaded, before it is cached

	// The vector worker (only with an embedder): writes wake it, and it
	// embeds the blocks and rotated log entries they marked
	// (search.Index.FlushBlockVectors, FlushArchivalVectors).
	embedWake chan struct{}
	embedStop context.CancelFunc
	embedDone chan struct{}
}

// entry is one cached block document.
type entry struct {
	c       *Cache
	mu      sync.Mutex // serializes refresh, writes and persist of this block here
	state   sync.Mutex // guards writes of lastSeq, epoch, metaVer, broken (made under mu) against lock-free readers
	id      int64
	owner   string
	label   string
	doc     *blocks.Document // the owner's view
	replica *blocks.Replica  // how durable changes from other writers enter doc
	lastSeq int64            // highest update sequence reflected in doc
	epoch   int64
	metaVer int64
	// incarnation tells this block from others that had its id (see
	// newIncarnation); it never changes.
	incarnation int64
	broken      error               // set when the block cannot be served (corrupt rows); the entry is dropped
	actors      map[string]struct{} // who made the pending changes (write-back)
	merged      []byte              // external changes merged by the running Write, persisted with it
	rotated     []blocks.LogEntry   // log entries the running Write's append rotated out (see RotateLog)
	// Applying edits ahead of the lock (see applyAhead) backs off on a
	// contended block: undoing an edit that met another writer costs a
	// fork of the document. Guarded by mu.
	aheadSkip, aheadPenalty int
	// rebaseCheck: a compaction in this epoch found the history not worth
	// a rebase at a size that needed the change count (a walk over the
	// history); the next one asks again only once the history has grown
	// a quarter past it. Guarded by mu.
	rebaseCheck struct{ epoch, history int64 }
	stale       atomic.Bool // a notification said another writer changed the block (see watch)
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

// Open opens (creating if needed) the store at target: a SQLite file path,
// ":memory:" (a throw-away in-memory store) or sqlite://PATH, or a
// PostgreSQL URL (postgres://… or postgresql://…) or libpq keyword string
// ("host=db dbname=engram", recognised by a connection keyword and '=' at
// its start), which several processes on several machines may share. It
// applies the backend's migrations; any other URL scheme fails with
// ErrUnknownScheme, and a file name holding "password=" with
// ErrInvalidArgument. Errors name the target redacted.
func Open(ctx context.Context, target string, opts *Options) (*Cache, error) {
	o := opts.withDefaults()
	be, name, err := openBackend(ctx, target, o)
	if err != nil {
		if errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrUnknownScheme) {
			return nil, err
		}
		return nil, fmt.Errorf("memory: open %s: %w", name, err)
	}
	c, err := newCache(ctx, be, name, o)
	if err != nil {
		be.Close()
		return nil, err
	}
	c.ownsBackend = true
	return c, nil
}

// New builds a Cache over a Backend the caller opened (for example a
// postgres.Backend over its own pool). Close closes the Cache, not the
// backend.
func New(ctx context.Context, be Backend, opts *Options) (*Cache, error) {
	return newCache(ctx, be, be.Name(), opts.withDefaults())
}

func newCache(ctx context.Context, be Backend, name string, o Options) (*Cache, error) {
	c := &Cache{opts: o, log: o.Logger, dirty: map[*entry]struct{}{}, be: be, rdb: be.DB(),
		wq: newWriteQueries(be.Name() == "sqlite")}
	var err error
	c.index, err = search.NewIndex(ctx, c.rdb, be.SearchDialect(), o.Embedder, &search.IndexOptions{
		VectorCacheBytes: o.VectorCacheBytes, TextCacheBytes: o.TextCacheBytes, Write: be.Write,
		DataVersion: c.dataVersion, Logger: o.Logger})
	switch {
	case err == nil:
	case errors.Is(err, search.ErrEmbedderMismatch) && o.OpenForReembed && c.index != nil:
	case errors.Is(err, search.ErrEmbedderMismatch):
		return nil, fmt.Errorf("memory: search index for %s: %w (open with Options.OpenForReembed for that)", name, err)
	default:
		return nil, fmt.Errorf("memory: search index for %s: %w", name, err)
	}
	if ts, ok := be.(txStatements); ok {
		if err := ts.Prepare(ctx, writeStateQuery, insertUpdateQuery, c.wq.updateRendered, c.wq.claimAhead); err != nil {
			return nil, fmt.Errorf("memory: %s: %w", name, err)
		}
	}
	c.lru, err = lru.NewWithEvict(o.CacheSize, c.onEvict)
	if err != nil {
		return nil, fmt.Errorf("memory: cache: %w", err)
	}
	if n, ok := be.(BlockNotifier); ok {
		c.startWatch(n, c.blockChanged)
	}
	if o.Embedder != nil {
		c.startEmbedder()
	}
	c.log.Debug("engram store opened", "target", name, "backend", be.Name(), "cache_size", o.CacheSize, "write_back", o.WriteBack)
	return c, nil
}

// Backend returns the backend the store persists to.
func (c *Cache) Backend() Backend { return c.be }

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
	// Closed before the last flush lists the dirty blocks: a write-back
	// edit either marked its block dirty before (and is flushed) or finds
	// the store closed when it would (writeBack) and is refused. Close does
	// not wait for writes under way: it may be called from a subscriber
	// inside one.
	c.closed = true
	c.mu.Unlock()
	err := c.Flush(context.Background())
	c.stopEmbedder()
	c.lru.Purge()
	c.stopWatch()
	c.closeStmts()
	if c.index != nil {
		err = errors.Join(err, c.index.Close())
	}
	if c.ownsBackend {
		err = errors.Join(err, c.be.Close())
	}
	return err
}

func (c *Cache) checkOpen(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.openLocked(ctx)
}

// openLocked is checkOpen for a caller holding c.mu.
func (c *Cache) openLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
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
	c.names.CompareAndDelete(nameKey(e.owner, e.label), e)
	c.mu.Lock()
	if _, dirty := c.dirty[e]; dirty {
		c.evicted = append(c.evicted, e)
	}
	c.mu.Unlock()
}

// evictedDirty returns the entry of block id (this incarnation) that left
// the LRU with unpersisted edits, if there is one.
func (c *Cache) evictedDirty(id, incarnation int64) *entry {
	var found []*entry
	c.mu.Lock()
	for e := range c.dirty {
		if e.id == id && e.incarnation == incarnation {
			found = append(found, e)
		}
	}
	c.mu.Unlock()
	// (The LRU is asked without c.mu: its evictions take c.mu in onEvict.)
	for _, e := range found {
		if cur, ok := c.lru.Peek(id); !ok || cur != e {
			return e
		}
	}
	return nil
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
		&r.pinned, &r.priority, &r.metaVer, &r.epoch, &r.snapshotSeq, &r.lastSeq, &r.historyBytes, &r.rendered, &r.createdAt, &r.updatedAt, &r.incarnation}, extra...)
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

func (c *Cache) nanos() int64 { return c.opts.Now().UnixNano() }

// entryFor returns the fresh cached entry of block (owner, label), loading
// it on a miss. On a hit the only SQL is the freshness check: one indexed
// row read of the block's sequence, epoch and metadata version.
func (c *Cache) entryFor(ctx context.Context, owner, label string) (*entry, error) {
	if e := c.notifiedHit(owner, label); e != nil {
		return e, nil
	}
	e, err := c.checkedEntry(ctx, owner, label)
	if err != nil {
		c.afterFailedCheck(owner, label)
		return nil, err
	}
	c.remember(e)
	return e, nil
}

// cachedEntry returns the cached entry of block (owner, label) without
// any query, or nil when it is not cached (or broken). It may be behind
// other processes' writes: only a write may use it, because the write
// transaction checks the block's row again (claimAhead, writeState).
func (c *Cache) cachedEntry(owner, label string) *entry {
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

func (c *Cache) checkedEntry(ctx context.Context, owner, label string) (*entry, error) {
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
func (c *Cache) loadLocked(ctx context.Context, id, incarnation int64) (e *entry, fresh bool, err error) {
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if e, ok := c.lru.Get(id); ok {
		if _, _, _, broken := e.freshness(); broken == nil && e.incarnation == incarnation {
			return e, false, nil
		}
	}
	if e := c.evictedDirty(id, incarnation); e != nil {
		// Evicted with edits its flush could not write (write-back): it
		// comes back instead of a second copy loaded beside it, which
		// would hide those edits and check limits without them.
		c.lru.Add(id, e)
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
	c.lru.Add(id, e)
	return e, true, nil
}

// readTx begins a read-only transaction that sees one snapshot of the
// database: a block's row, snapshot and updates read in it agree even while
// another process compacts or rebases the block. (SQLite's WAL readers do
// by default; PostgreSQL's default, READ COMMITTED, lets each statement see
// a newer commit.)
func (c *Cache) readTx(ctx context.Context) (*sql.Tx, error) {
	opts := &sql.TxOptions{ReadOnly: true}
	if c.be.Name() == "postgres" {
		opts.Isolation = sql.LevelRepeatableRead
	}
	return c.rdb.BeginTx(ctx, opts)
}

// load reads a block's snapshot and updates in one read transaction.
func (c *Cache) load(ctx context.Context, id int64) (*entry, error) {
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
	if err := doc.MarkPersisted(doc.Heads()); err != nil {
		return nil, err
	}
	return e, nil
}

// manage makes the entry that serves doc (block id, durable up to seq) and
// hands the document to it: from now on every write through any view of
// doc runs through entry.Write.
func (c *Cache) manage(doc *blocks.Document, id, seq int64) (*entry, error) {
	info := doc.Info()
	e := &entry{c: c, id: id, owner: info.Owner, label: info.Label, doc: doc, lastSeq: seq}
	rep, err := doc.Manage(e)
	if err != nil {
		return nil, fmt.Errorf("memory: block %q of %q: %w", info.Label, info.Owner, err)
	}
	e.replica = rep
	return e, nil
}

// putSnapshot stores block id's snapshot with its checksum, in
// block_snapshots (its own table since migration 0013, so a write that
// does not compact leaves it alone).
func putSnapshot(ctx context.Context, tx *sql.Tx, id int64, snap []byte) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO block_snapshots (block_id, snapshot, snapshot_crc) VALUES (?, ?, ?)
		ON CONFLICT (block_id) DO UPDATE SET snapshot = excluded.snapshot, snapshot_crc = excluded.snapshot_crc`, id, snap, checksum(snap))
	return err
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
func (c *Cache) applyUpdates(ctx context.Context, q querier, e *entry, upTo int64) error {
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
func (c *Cache) readUpdates(ctx context.Context, q querier, e *entry, upTo int64) (seqs []int64, chunks [][]byte, err error) {
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
func (c *Cache) catchUp(ctx context.Context, e *entry) error {
	e.lock()
	defer e.unlock()
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
func (c *Cache) refresh(ctx context.Context, q querier, e *entry, r blockRow) error {
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

// Write runs one mutation of the block for blocks.Document (entry is the
// managed document's blocks.Writer). In write-through mode it holds the
// database's write lock throughout: it applies whatever other writers
// persisted, lets the edit validate itself against that fresh state with
// the accessor's current permission, and commits the change in the same
// transaction, so limits and permissions hold across processes and a
// write is acknowledged only once it is durable. If anything fails the
// document rolls the edit back and the error says why. In write-back mode
// the edit applies to the cached state and persists on Flush.
func (e *entry) Write(ctx context.Context, req blocks.WriteRequest, apply func(blocks.Permission) error) error {
	c := e.c
	if err := c.checkOpen(ctx); err != nil {
		return err
	}
	e.lock()
	defer e.unlock()
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
	if c.opts.WriteBack && txHookFrom(ctx) == nil && req.Op != blocks.OpMerge && !(req.Op == blocks.OpAppendLogEntry && rotates(e.doc)) {
		// (An edit that carries more work, such as an approval's status,
		// is written through even in write-back mode: both or neither. So
		// is a merge: its changes are not this replica's own, so a later
		// persist, which writes only those, would never store them. So is
		// an append that may rotate log entries into archival: the
		// entries and the trim commit together.)
		return c.writeBack(ctx, e, req, apply)
	}
	var (
		applyErr error
		heads    []string
		seq      int64
		compact  compaction
	)
	pre := c.applyAhead(ctx, e, req, apply)
	// Once the transaction starts it runs to the end whatever ctx does.
	err := c.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
			pre = nil
			e.aheadPenalty = min(max(2*e.aheadPenalty, 64), 4096)
			e.aheadSkip = e.aheadPenalty
			if err := req.Undo(); err != nil {
				return err
			}
		}
		r, perm, err := c.writeState(ctx, tx, true, e, req)
		if err != nil {
			return err
		}
		if err := c.refresh(ctx, tx, e, r); err != nil {
			return err
		}
		if err := perm.err; err != nil {
			applyErr = err
			return err
		}
		if applyErr = apply(perm.p); applyErr != nil {
			return applyErr
		}
		if hook := txHookFrom(ctx); hook != nil {
			if applyErr = hook(tx); applyErr != nil {
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
		if merged := e.merged; len(merged) > 0 {
			// Changes from an external peer (MergeChanges) are not this
			// replica's own, so PendingChanges leaves them out; they go
			// into the same row (concatenated chunks load as one).
			e.merged = nil
			data = append(merged, data...)
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
		return err
	})
	e.merged = nil
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
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("%w: %s on block %q of agent %q: %w", ErrPersist, req.Op, e.label, e.owner, err)
	}
	if heads == nil {
		return nil
	}
	c.committed(ctx, e, seq, heads, compact)
	return nil
}

// txHookKey carries a txHook in a write's context.
type txHookKey struct{}

// txHook is more work for the transaction that writes an edit, run after
// the edit applied: the write commits both or neither (an approval's
// status with the approved edit, rotated log entries with the trim).
type txHook func(tx *sql.Tx) error

func withTxHook(ctx context.Context, h txHook) context.Context {
	return context.WithValue(ctx, txHookKey{}, h)
}

func txHookFrom(ctx context.Context) txHook {
	h, _ := ctx.Value(txHookKey{}).(txHook)
	return h
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
		WHERE id = ? AND incarnation = ? AND last_seq = ? AND epoch = ? AND meta_ver = ? AND CASE
			WHEN ? THEN TRUE
			WHEN owner = ? THEN permission = ?
			ELSE EXISTS (SELECT 1 FROM shares WHERE block_id = blocks.id AND agent = ? AND permission = ?) END
		RETURNING snapshot_seq, history_bytes`

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

// writeState reads, inside the write transaction, the block's row and the
// accessor's current permission on it (the owner's, or the share's).
// In a Write transaction (inWrite) it uses the backend's prepared
// statement, which belongs to the writer connection.
func (c *Cache) writeState(ctx context.Context, tx *sql.Tx, inWrite bool, e *entry, req blocks.WriteRequest) (blockRow, sharePerm, error) {
	var shared sql.NullString
	row := tx.QueryRowContext
	if inWrite {
		row = func(ctx context.Context, q string, args ...any) *sql.Row { return c.txQueryRow(ctx, tx, q, args...) }
	}
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
// It returns nil when the edit must run under the lock from the start: a
// refused or empty edit (decided again on the fresh state), extra work in
// the transaction (a txHook), merged external changes, or a caller that
// cannot undo. Caller holds e.mu.
func (c *Cache) applyAhead(ctx context.Context, e *entry, req blocks.WriteRequest, apply func(blocks.Permission) error) *aheadEdit {
	if req.Undo == nil || req.Op == blocks.OpMerge || len(e.merged) > 0 || txHookFrom(ctx) != nil {
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
		}
		return nil
	}
	var err error
	if a.data, a.heads, err = e.doc.PendingChanges(); err != nil || len(a.data) == 0 {
		if uerr := req.Undo(); uerr != nil {
			c.log.Error("undo of an edit applied ahead", "block", e.label, "owner", e.owner, "err", uerr)
		}
		return nil
	}
	a.headsText = strings.Join(a.heads, ",")
	a.rendered = e.doc.Render()
	if c.afterAhead != nil {
		c.afterAhead()
	}
	return a
}

// claimAhead stores the rendering and heads of an edit applied ahead, in
// the caller's write transaction, if and only if the block's row and the
// accessor's permission are still what the edit was applied to: one
// statement that both checks and writes (the check is its WHERE clause).
// It reports false, having changed nothing, when something came between.
// On success it leaves in a the row's snapshot sequence and history size
// that the compaction check needs.
func (c *Cache) claimAhead(ctx context.Context, tx *sql.Tx, e *entry, req blocks.WriteRequest, a *aheadEdit) (bool, error) {
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

// insertAhead writes the update row of an edit claimAhead claimed, and
// compacts when due.
func (c *Cache) insertAhead(ctx context.Context, tx *sql.Tx, e *entry, a *aheadEdit, actors string) (int64, compaction, error) {
	if _, err := c.txExec(ctx, tx, insertUpdateQuery, e.id, a.seq, a.epoch, actors, a.data, checksum(a.data), a.now); err != nil {
		return 0, 0, err
	}
	compacted, err := c.compactIfDue(ctx, tx, e, a.seq, a.snapshotSeq, a.historyBytes)
	return a.seq, compacted, err
}

// insertUpdate appends data as the block's next update row and stores the
// new rendering and heads, inside the caller's write transaction (r is the
// row read in it). It returns the new sequence and whether it compacted
// (compactRebase when the compacted history is due for a new epoch).
func (c *Cache) insertUpdate(ctx context.Context, tx *sql.Tx, e *entry, r blockRow, data []byte, actors, rendered, heads string) (seq int64, compacted compaction, err error) {
	seq = r.lastSeq + 1
	now := c.nanos()
	if _, err = c.txExec(ctx, tx, insertUpdateQuery, e.id, seq, r.epoch, actors, data, checksum(data), now); err != nil {
		return 0, 0, err
	}
	args := append([]any{seq, rendered, heads, now, len(data)}, c.wq.padArgs(rendered, heads)...)
	if _, err = c.txExec(ctx, tx, c.wq.updateRendered, append(args, e.id)...); err != nil {
		return 0, 0, err
	}
	compacted, err = c.compactIfDue(ctx, tx, e, seq, r.snapshotSeq, r.historyBytes+int64(len(data)))
	return seq, compacted, err
}

// compactIfDue compacts block e, just written at seq, when enough updates
// accumulated since its snapshot (see compactAfter), and says whether the
// compacted history (history bytes in this epoch, this write included) is
// due for a new epoch.
func (c *Cache) compactIfDue(ctx context.Context, tx *sql.Tx, e *entry, seq, snapshotSeq, history int64) (compaction, error) {
	if seq-snapshotSeq < c.compactAfter(e) {
		return 0, nil
	}
	if err := compactLocked(ctx, tx, e, seq); err != nil {
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
func (c *Cache) compactAfter(e *entry) int64 {
	return int64(max(c.opts.CompactAfter, e.doc.Size()/compactCharsPerUpdate))
}

// lock takes e.mu, the block's lock here, and holds back the Remote events
// its replica fires meanwhile (blocks.Replica.Hold): a subscriber may call
// the store — read the block, close the store — and must not run while
// e.mu is held. unlock releases both, then fires what was held back.
func (e *entry) lock() {
	e.mu.Lock()
	e.replica.Hold()
}

func (e *entry) unlock() {
	e.mu.Unlock()
	e.replica.Release()
}

// committed records a change that is now durable at seq. Caller holds
// e.mu.
func (c *Cache) committed(ctx context.Context, e *entry, seq int64, heads []string, compacted compaction) {
	if err := e.doc.MarkPersisted(heads); err != nil {
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
		c.rebase(ctx, e, seq)
	}
	c.wakeEmbedder()
}

// writeBack applies an edit to the cached state and marks the block dirty
// (Options.WriteBack). It reads the accessor's current permission, but
// limits hold only against the state this process has seen: other
// processes' writes merge in at Flush.
func (c *Cache) writeBack(ctx context.Context, e *entry, req blocks.WriteRequest, apply func(blocks.Permission) error) error {
	tx, err := c.readTx(ctx)
	if err != nil {
		return fmt.Errorf("memory: %s on block %q: %w", req.Op, e.label, err)
	}
	defer tx.Rollback()
	r, perm, err := c.writeState(ctx, tx, false, e, req)
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
	c.dirty[e] = struct{}{}
	c.mu.Unlock()
	e.actors[req.Actor] = struct{}{}
	c.localEdits.Add(1)
	return nil
}

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
// so Flush or Close retries them; nothing is dropped.
func (c *Cache) persist(ctx context.Context, e *entry) error {
	e.lock()
	defer e.unlock()
	if _, _, _, broken := e.freshness(); broken != nil {
		return broken
	}
	var p pendingWrite
	err := c.write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		_, p, err = c.writePending(ctx, tx, e)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotFound) {
			return err
		}
		return fmt.Errorf("%w: block %q of agent %q: %w", ErrPersist, e.label, e.owner, err)
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
func (c *Cache) writePending(ctx context.Context, tx *sql.Tx, e *entry) (blockRow, pendingWrite, error) {
	var p pendingWrite
	r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+stateCols+` FROM blocks WHERE id = ?`, e.id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, p, notFound("block %q of agent %q was deleted", e.label, e.owner)
	}
	if err != nil {
		return r, p, err
	}
	if err := c.refresh(ctx, tx, e, r); err != nil {
		return r, p, err
	}
	data, heads, err := e.doc.PendingChanges()
	if err != nil || len(data) == 0 {
		return r, p, err
	}
	seq, compact, err := c.insertUpdate(ctx, tx, e, r, data, e.pendingActors(), e.doc.Render(), strings.Join(heads, ","))
	if err != nil {
		return r, p, err
	}
	r.lastSeq, r.historyBytes = seq, r.historyBytes+int64(len(data))
	if compact != 0 {
		r.snapshotSeq = seq
	}
	return r, pendingWrite{seq: seq, heads: heads, compact: compact}, nil
}

// compactLocked folds all updates up to seq into the snapshot, inside the
// caller's write transaction. Readers in other processes either see the old
// snapshot and the old updates or the new snapshot (WAL snapshot isolation).
//
// The snapshot is e's document, so the row must still be on e's epoch
// (the UPDATE checks it): saving one epoch's document as another's
// snapshot would lose every later write.
func compactLocked(ctx context.Context, tx *sql.Tx, e *entry, seq int64) error {
	snap, err := e.doc.Save()
	if err != nil {
		return err
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

// startEmbedder starts the worker that computes block vectors after writes
// (a write only marks its block; see search.Index.FlushBlockVectors), and
// the vectors of log entries rotated into archival (marked in the append's
// transaction; see search.Index.FlushArchivalVectors), so no write waits
// for an embedder. Searches that need the vectors flush first.
func (c *Cache) startEmbedder() {
	ctx, cancel := context.WithCancel(context.Background())
	c.embedWake = make(chan struct{}, 1)
	c.embedStop = cancel
	c.embedDone = make(chan struct{})
	go func() {
		defer close(c.embedDone)
		backoff := time.Second
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.embedWake:
			}
			err := c.index.FlushBlockVectors(ctx)
			if err == nil {
				err = c.index.FlushArchivalVectors(ctx)
			}
			if err != nil && ctx.Err() == nil {
				c.log.Error("embedding changed blocks or rotated log entries failed; retrying", "err", err, "in", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, time.Minute)
				c.wakeEmbedder()
				continue
			}
			backoff = time.Second
		}
	}()
	c.wakeEmbedder() // blocks marked before this process started
}

func (c *Cache) wakeEmbedder() {
	if c.embedWake == nil {
		return
	}
	select {
	case c.embedWake <- struct{}{}:
	default:
	}
}

func (c *Cache) stopEmbedder() {
	if c.embedStop == nil {
		return
	}
	c.embedStop()
	<-c.embedDone
}
