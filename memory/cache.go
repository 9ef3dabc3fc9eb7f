package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storehook"
	"github.com/engram-go/engram/search"
)

// Store is the store Open and New return (builder.Store is another thing:
// what context builds reuse). Its own methods are store-wide (open and
// close, import and export, re-embedding, token counts);
// everything an agent does goes through its handle, [Store.Agent], and
// store administration through [Store.Admin]. Every method taking a
// context honours its cancellation. An agent sees its own blocks, archival
// entries and messages and the blocks shared with it, nothing else.
// Missing or invisible things return errors matching ErrNotFound;
// duplicates ErrExists; refused writes blocks.ErrPermission.
// memory/storetest checks a Store over any backend against this contract.
//
// Block documents are loaded
// lazily from its driver.Backend, kept in an LRU of Options.CacheSize, and their
// changes are written through to the backend as incremental automerge
// changes. Several Caches (in one process or several) may share one
// database. A Store is safe for concurrent use.
type Store struct {
	opts Options
	be   driver.Backend
	rdb  *sql.DB // be.DB(): reads
	// ownsBackend: Open made be, so Close closes it.
	ownsBackend bool
	index       *searchindex.Index
	log         *slog.Logger
	// writesPrepared: the write statements the backend keeps parsed
	// (driver.TxStatements) are, by the first write (prepareWrites);
	// prepareMu is held by the one parsing them.
	writesPrepared atomic.Bool
	prepareMu      sync.Mutex
	prepareRetry   atomic.Int64 // unix nanoseconds: no parse before it
	// consolidateCandidateBytes, when set (tests), replaces
	// maxCandidateBytes.
	consolidateCandidateBytes int

	lru *docCache
	// growth is what cached documents grew by since the cache was last
	// weighed (see grown); trimMu is held by the one weighing it.
	growth  atomic.Int64
	trimMu  sync.Mutex
	schemas sync.Map // schema JSON → decoded schema.Schema (listings decode each row otherwise)
	// handles holds the Agent handles Agent gave out (id → *Agent, up to
	// maxHandles), so the handles of one agent, and their Messages and
	// Archival, are the same pointers: what keys the builder's history
	// cache.
	handles    sync.Map
	handlesLen atomic.Int64
	wq         writeQueries
	// names maps nameKey(owner, label) to the cached entry last checked
	// under that name (remember), for the hits that skip the freshness
	// query: a write's (writeView) and, with notifications, a read's
	// (notifiedHit). Evicted entries leave it.
	names  sync.Map
	stmts  sync.Map   // SQL → *sql.Stmt on rdb, for hot read queries (see prepared)
	loadMu sync.Mutex // serializes cold loads so one block is loaded once
	// copyMu makes which copy of a block the cache holds, and whether a
	// copy has pending write-back edits, one decision: a write-back edit's
	// claim on its copy (claimCopy) and a load's caching of the copy it
	// read. Taken after loadMu and an entry's lock, before the cache's
	// and mu.
	copyMu sync.Mutex
	mu     sync.Mutex // guards dirty, claimed, evicted, closed, closing, rebasing
	dirty  map[*entry]struct{}
	// claimed holds the copies a write-back edit is under way on
	// (claimCopy): like dirty ones, a load takes them back rather than
	// read another copy, but no read shows their state as the block's.
	claimed map[*entry]struct{}
	evicted []*entry
	closed  bool
	closing chan struct{} // closed by Close; made by closed (on first use)
	// rebasing holds the epochs being started behind writes (see
	// startRebase), each closed when it is done; Flush and Close wait for
	// those under way when they are called.
	rebasing map[chan struct{}]struct{}

	watch *watch // nil unless the backend is a driver.BlockNotifier

	localEdits atomic.Int64 // write-back edits made here (BlocksStamp.Local)
	changes    changeSignal // closed at changes that may move a BlocksStamp (BlocksChanged)
	// Reads remembered while nothing is committed (see versionMemo): the
	// stamps by agent, and message reads that found nothing (a context
	// build's incremental read, when no message came).
	stamps     versionMemo[string, BlocksStamp]
	noMessages versionMemo[messagesKey, struct{}]

	afterAhead func() // tests: runs after an edit was applied ahead of the lock
	// tests: runs after an edit was refused ahead of the lock, before
	// refusalStands reads whether the refusal stands.
	afterRefusedAhead func()
	snapsAhead        atomic.Int64 // tests: compactions whose snapshot was saved ahead of the lock
	afterLoad         func(int64)  // tests: runs after a block was loaded, before it is cached
	beforeWriteLock   func(*entry) // tests: runs as a write is about to take its block's lock
	// tests: runs once a block write released the block, before it
	// returns to the document (its views read the edit already: the
	// write's hidden state ended with the store's hold).
	afterWrite func()
	// tests: runs when a block's lock was just released, before the
	// events it held back fire.
	afterUnlock func(*entry)
	// tests: runs when a new epoch started behind a write was built,
	// before its goroutine takes the block's lock to switch.
	rebaseBuilt func(*entry)
	// tests: a decide for every write that has none (see writeTx), to fail
	// a write inside its transaction.
	testDecide func(tx *sql.Tx) error

	// The vector worker (only with an embedder): writes wake it, and it
	// embeds the blocks and rotated log entries they marked
	// (searchindex.Index.FlushBlockVectors, FlushArchivalVectors).
	embedWake chan struct{}
	embedStop context.CancelFunc
	embedDone chan struct{}
}

// entry is one cached block document.
type entry struct {
	c *Store
	// mergedLast are the merge records MergedBy last read (mergedRead:
	// it has read them), which stand once the store is closed.
	mergedMu   sync.Mutex
	mergedLast map[string]string
	mergedRead bool
	mu         sync.Mutex // serializes refresh, writes and persist of this block here
	state      sync.Mutex // guards writes of lastSeq, epoch, metaVer, broken (made under mu) against lock-free readers
	id         int64
	owner      string
	label      string
	doc        *blocks.Document  // the owner's view
	replica    blockseam.Replica // how durable changes from other writers enter doc
	lastSeq    int64             // highest update sequence reflected in doc
	epoch      int64
	metaVer    int64
	// incarnation tells this block from others that had its id (see
	// newIncarnation); it never changes.
	incarnation int64
	broken      error               // set when the block cannot be served (corrupt rows); the entry is dropped
	actors      map[string]struct{} // who made the pending changes (write-back)
	// heldEvents fire at this entry's unlock, after its own: those of
	// another copy of the block flushed under its lock (holdCopy), whose
	// subscribers may call the store, and so take this lock. Guarded by mu.
	heldEvents []func()
	merged     blockseam.Merged  // external changes merged by the running Write, persisted (and attributed) with it
	rotated    []blocks.LogEntry // log entries the running Write's append rotated out (see RotateLog)
	// Applying edits ahead of the lock (see applyAhead) backs off on a
	// contended block: undoing an edit that met another writer costs a
	// fork of the document. Guarded by mu.
	aheadSkip, aheadPenalty int
	// snapHint is the block's snapshot sequence as the last write applied
	// ahead found it (0: unknown), to tell ahead whether the write will
	// compact (then its snapshot is saved ahead too).
	snapHint int64
	// rebaseCheck: a compaction in this epoch found the history not worth
	// a rebase at a size that needed the change count (a walk over the
	// history); the next one asks again only once the history has grown
	// a quarter past it. Guarded by mu.
	rebaseCheck struct{ epoch, history int64 }
	// rebasing: a new epoch is being built behind the writes (see
	// startRebase). Guarded by mu.
	rebasing bool
	stale    atomic.Bool // a notification said another writer changed the block (see watch)
	// weight is what the entry counts against Options.CacheBytes: its
	// document's estimated memory (DocumentBytes) when it was cached or
	// last released by a write.
	weight atomic.Int64
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
// its start), which several processes on several machines may share
// once memory/postgres is imported (see Register). It applies the
// backend's migrations; a scheme no backend registered fails with
// ErrUnknownScheme, and a file name holding "password=" with
// ErrInvalidArgument. Errors name the target redacted.
func Open(ctx context.Context, target string, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
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

// New builds a Store over a driver.Backend the caller opened (for example a
// postgres.Backend over its own pool). Close closes the Store, not the
// backend.
func New(ctx context.Context, be driver.Backend, opts *Options) (*Store, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	return newCache(ctx, be, be.Name(), o)
}

func newCache(ctx context.Context, be driver.Backend, name string, o Options) (*Store, error) {
	if o.WriteBack {
		o.CacheBytes = -1 // see Options.CacheBytes
	}
	c := &Store{opts: o, log: o.Logger, dirty: map[*entry]struct{}{}, claimed: map[*entry]struct{}{}, be: be, rdb: be.DB(),
		wq: newWriteQueries(be.PadsRows())}
	var err error
	io := &searchindex.IndexOptions{
		VectorCacheBytes: o.VectorCacheBytes, TextCacheBytes: o.TextCacheBytes, TextStatsDrift: o.TextStatsDrift, Write: be.Write,
		DataVersion: c.dataVersion, Logger: o.Logger, Reranker: o.Reranker, RerankDepth: o.RerankDepth, RerankStrict: o.RerankStrict, RerankBackoff: o.RerankBackoff}
	if lw, ok := be.(driver.LockingWriter); ok {
		io.WriteLocked = lw.WriteLocked
	}
	c.index, err = searchindex.NewIndex(ctx, c.rdb, be.SearchDialect(), o.Embedder, io)
	switch {
	case err == nil:
	case errors.Is(err, search.ErrEmbedderMismatch) && o.OpenForReembed && c.index != nil:
	case errors.Is(err, search.ErrEmbedderMismatch):
		return nil, fmt.Errorf("memory: search index for %s: %w (open with Options.OpenForReembed for that)", name, err)
	default:
		return nil, fmt.Errorf("memory: search index for %s: %w", name, err)
	}
	c.lru, err = newDocCache(o.CacheSize, c.onEvict)
	if err != nil {
		return nil, fmt.Errorf("memory: cache: %w", err)
	}
	// Entries written before write-time deduplication, or imported, get
	// their keys (one indexed read when there are none).
	if _, err := c.backfillKeys(ctx); err != nil {
		return nil, fmt.Errorf("memory: %s: %w", name, err)
	}
	if n, ok := be.(driver.BlockNotifier); ok {
		c.startWatch(n, c.blockChanged)
	}
	if o.Embedder != nil {
		c.startEmbedder()
	}
	if o.Prewarm {
		c.index.StartPrewarm()
	}
	c.log.Debug("engram store opened", "target", name, "backend", be.Name(), "cache_size", o.CacheSize, "write_back", o.WriteBack)
	return c, nil
}

// The store's backend and search index are no part of its surface (Admin
// has what tools need), nor is the way to keep rows beside the store's
// own (engram serve's access tokens, internal/accesstoken); engram's own
// packages and tests reach them through internal/storeaccess.
func init() {
	storehook.Backend = func(s any) driver.Backend { return s.(*Store).be }
	storehook.Index = func(s any) *searchindex.Index { return s.(*Store).index }
	storehook.TablesOf = func(s any) storehook.Tables {
		c := s.(*Store)
		return storehook.Tables{DB: c.rdb, Now: c.opts.Now, Check: c.checkOpen,
			Write: func(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
				return c.write(ctx, nil, fn)
			}}
	}
}

// WaitPrewarm waits until the prewarming Options.Prewarm started is done
// loading the search caches, so that a server may hold its readiness
// until the agents it served before a restart search at full speed. It
// returns nil at once for a store that does not prewarm (or has no text
// cache), and once prewarming is done, whether or not it loaded
// anything; ctx's error if ctx ends first. With a ctx already done it
// answers at once: nil if prewarming is done, ctx's error if not. A
// closed store's prewarming is over: nil.
func (c *Store) WaitPrewarm(ctx context.Context) error {
	if c.index == nil {
		return nil
	}
	return c.index.WaitPrewarm(ctx)
}

// SearchCacheStats returns what the store's in-process search caches
// hold and have done since it opened (all zero without caches).
func (c *Store) SearchCacheStats() search.CacheStats {
	if c.index == nil {
		return search.CacheStats{}
	}
	return c.index.CacheStats()
}

// Close flushes unpersisted changes (write-back mode) and closes the
// database. Further calls fail with ErrClosed.
func (c *Store) Close() error {
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
	if c.closing != nil {
		close(c.closing)
	}
	c.mu.Unlock()
	err := c.Flush(context.Background()) // waits for the epochs started behind writes too
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

func (c *Store) checkOpen(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.openLocked(ctx)
}

// closedMeanwhile is err, matching ErrClosed too when the store was
// closed while the operation that failed with it ran: a write or read
// under way when Close closes the database fails on it ("sql: database
// is closed"), and its caller should see why.
func (c *Store) closedMeanwhile(err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if !closed {
		return err
	}
	return fmt.Errorf("%w: %w", ErrClosed, err)
}

// openLocked is checkOpen for a caller holding c.mu.
func (c *Store) openLocked(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c.closed {
		return ErrClosed
	}
	return nil
}

func (c *Store) nanos() int64 { return c.opts.Now().UnixNano() }

// lock takes e.mu, the block's lock here, and holds back the Remote events
// its replica fires meanwhile (blockseam.Replica.Hold): a subscriber may call
// the store — read the block, close the store — and must not run while
// e.mu is held. unlock releases both, then fires what was held back. The
// hold ends first: a reader that took e.mu between the two would hold the
// replica again before this hold ended, and read the state before a merge
// this lock's writer committed (the merge's stable state lasts until the
// last hold ends).
func (e *entry) lock() {
	e.mu.Lock()
	e.replica.Hold()
}

func (e *entry) unlock() { e.unlockThen(nil) }

// unlockThen is unlock calling then (if not nil) after the lock is
// released and before the events it held back fire.
func (e *entry) unlockThen(then func()) {
	fireEvent, held := e.release()
	if then != nil {
		then()
	}
	fireHeld(fireEvent, held)
}

// unlockHeld releases the lock and returns what fires the events it held
// back (heldEvents among them), for the caller to run when it may.
func (e *entry) unlockHeld() (fire func()) {
	fireEvent, held := e.release()
	return func() { fireHeld(fireEvent, held) }
}

// fireHeld fires what release returned.
func fireHeld(fireEvent func(), held []func()) {
	if fireEvent != nil {
		fireEvent()
	}
	for _, f := range held {
		f()
	}
}

// release releases the lock and returns the events it held back: the
// replica's, and heldEvents. (No closure: every unlock of a write runs
// it.)
func (e *entry) release() (fireEvent func(), held []func()) {
	fireEvent = e.replica.Release()
	held = e.heldEvents
	e.heldEvents = nil
	var grew int64
	if e.doc != nil {
		w := DocumentBytes(blockseam.KnownSize(e.doc))
		grew = w - e.weight.Swap(w)
	}
	e.mu.Unlock()
	if grew > 0 {
		e.c.grown(grew)
	}
	if h := e.c.afterUnlock; h != nil {
		h(e)
	}
	return fireEvent, held
}
