package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

// Meta keys under which the Index records its embedder in table meta.
const (
	MetaEmbedderName = "embedder.name"
	MetaEmbedderDims = "embedder.dims"
)

// IndexOptions tune an Index. The zero value (or nil) is the defaults.
type IndexOptions struct {
	// SnippetTokens is the most tokens in an FTS snippet (default 16,
	// at most 64).
	SnippetTokens int
	// ReembedBatch is how many texts Reembed sends to the embedder at once
	// (default 64).
	ReembedBatch int
	// VectorCacheBytes bounds the in-process copy of the vectors (unit
	// float32s grouped by content type and owner: 4 × dimensions + ~100
	// bytes per row) over which KNN runs by brute force in the searching
	// agent's partition instead of in the database. The exact scan in
	// SQLite (sqlite-vec's vec_distance_cosine row by row) is much slower
	// than this scan (docs/performance.md). On SQLite the copy is kept by default, up to
	// DefaultVectorCacheBytes (256 MiB: 100k 384-dim vectors); negative:
	// none. It is loaded in the background from the first vector search on
	// (WarmVectorCache waits for it), SQL answering until it is ready. A
	// database whose vectors need more than the bound (counted before any
	// is read), or that outgrows it later, gets a partial copy for the
	// Index's lifetime: each agent's partition is read on its first vector
	// search and the least recently searched are evicted to stay within
	// the bound, so an agent's searches cost what its own vectors cost
	// however many agents the store holds; a search over every owner
	// (Scope.All), or by an agent whose vectors alone exceed the bound,
	// runs KNN in SQL, and WarmVectorCache reports ErrCacheBudget. On
	// PostgreSQL with pgvector there is no
	// copy by default; a positive bound asks for one (pgvector answering
	// while it loads or once it is outgrown). On PostgreSQL without
	// pgvector the copy is the only KNN: kept whatever its size, loaded by
	// the first vector search. The database stays the source of truth:
	// each search first replays the committed vector-change log
	// (search_vec_log, one indexed lookup when nothing changed), so writes
	// from other connections and processes are seen. Isolation is
	// unchanged: only the agent's partition is scanned and the row fetch
	// re-checks the owner in SQL.
	VectorCacheBytes int64
	// TextCacheBytes bounds the in-process copy of the full-text indexes
	// (default DefaultTextCacheBytes, 64 MiB; negative: no copy). The copy
	// holds the same terms FTS5 does, with each row's column-weighted
	// frequencies (about 8 bytes per distinct term per row, plus ~70 bytes
	// per row; measured sizes in docs/performance.md), and full-text legs
	// rank over it with FTS5's bm25 formula: the same results in the same
	// order, faster than FTS5 ranks them. SQLite stays the source of truth: each search first
	// replays the committed full-text change log (search_text_log,
	// migration 0009; one indexed lookup when nothing changed), so writes
	// from other connections and processes are seen. The first full-text
	// search starts building the copy in the background and ranks in SQL,
	// as every search does until the copy is ready (WarmTextCache waits for
	// it). Whether the whole store fits is decided before it is read, from
	// each table's row count and a sample of 256 rows analyzed. A store
	// whose copy would outgrow the bound (and one that outgrows it later)
	// is held partially: per-owner partitions of each content type,
	// loaded by the owner's first full-text search (in that search, about
	// what ranking its rows in SQL costs) and evicted least recently used,
	// ranked with the store-wide row count, token total and document
	// frequencies. Where the dialect reads the engine's bm25 statistics
	// (TextStats: SQLite) they are FTS5's, so the order stays FTS5's: each
	// content type's whole vocabulary with its counts is read once in the
	// background (TextVocabulary: FTS5's fts5vocab, a read of the whole
	// index: 1.9 s for 200,000 archival entries under modernc;
	// WarmTextCache waits for it) and moved along
	// by the catch-ups, so an agent's first search reads no store-wide
	// count; until then, and after a write the catch-ups cannot follow
	// (a pass runs again after nine times the last one's duration), they
	// are read per query term and cached. Without driver.TextStats (PostgreSQL) the cache computes them
	// itself: a background pass per content type over every row's indexed
	// text gives the complete document frequencies, and the partitions
	// rank exactly as a whole copy would; until a type's pass is done (at
	// the start, and again after a write its catch-ups cannot follow: a
	// delete, an edit of a row no partition holds, a block's new text;
	// the pass runs after nine times the last one's duration) its
	// searches rank in SQL, and a type whose frequencies would take more
	// than an eighth of the bound ranks in SQL (the pass stops as soon as
	// it finds out) until a pass tried after a long back-off (ten
	// minutes, doubling to an hour) finds they fit. The bound covers all
	// partitions and those frequencies together: per agent a copy
	// costs what its own rows do (about 1.3 KB per archival entry of
	// 12-41 words with its text; docs/performance.md), and an
	// agent whose rows alone exceed the bound, and every search over all
	// owners (Scope.All), rank in SQL. WarmTextCache reports
	// ErrCacheBudget for a partial cache (on PostgreSQL after waiting for
	// the passes). Searches with tag or metadata filters always run in
	// SQL. Without the log (SQLite migration 0009, PostgreSQL migration
	// 0008 of package memory/postgres) there is no copy (an error if
	// TextCacheBytes is positive).
	//
	// On PostgreSQL the copy ranks with the same BM25 as on SQLite over
	// its own analysis of the text (FTS5's unicode61 tokens and Porter
	// stems), not with the tsvector ranking the SQL leg uses (BM25-style
	// IDF over ts_rank): the two agree on what matches (but for metadata
	// booleans, which the copy indexes as 1 and 0, as FTS5 does on
	// SQLite), closely but not exactly on the order, so a search answered
	// in SQL while the copy loads can order its results a little
	// differently (on Cranfield the copy scores nDCG@10 0.549, the SQL leg
	// 0.528).
	TextCacheBytes int64
	// TextStatsDrift, between 0 and 1, has a partial text cache keep
	// ranking with its store-wide statistics after a write it cannot
	// follow (another process's delete or rewrite of a row no resident
	// partition holds), instead of dropping them: a dialect without
	// driver.TextStats (PostgreSQL) would rank that content type in SQL
	// until a pass over every row counted them again, SQLite's next
	// search would count its terms in FTS5 again (a term in most of
	// 200,000 rows: 8-13 ms). Such a row is then followed approximately
	// (a deleted row stops counting with the mean row's tokens; the
	// frequencies of its terms stay as counted; each term of a row that
	// stays counts at least once, and a drifting count is never below
	// the rows of the searched partition holding the term) and counted
	// as drift, and a pass starts once the drift exceeds this share of
	// the type's rows (its rest, nine times the last pass's time, still
	// holding; past twenty times the share meanwhile they are dropped).
	// Until then the scores are those of a store whose counts are off by
	// the drifting rows, not exact; WarmTextCache still waits for exact
	// statistics. 0 (the default): exact statistics, dropped at the
	// first such write.
	TextStatsDrift float64
	// Reranker, when set, rescores the first RerankDepth results of every
	// search's fused list (a cross-encoder or an LLM reading each text
	// beside the query; HTTPReranker calls a /rerank endpoint) and orders
	// them by its scores; the results past them follow in the fused order.
	// Nil (the default): no reranking. See Reranker for what a failure
	// does.
	Reranker search.Reranker
	// RerankDepth is how many of the fused list's first results the
	// Reranker scores (0: DefaultRerankDepth; at most MaxRerankDepth, and
	// NewIndex fails for a negative one when a Reranker is set).
	RerankDepth int
	// RerankStrict makes a failed reranking fail the search (ErrReranker)
	// instead of returning the fused order.
	RerankStrict bool
	// RerankBackoff is how long searches skip the Reranker after a failed
	// reranking (0: DefaultRerankBackoff; negative: never skip), so a
	// reranker that is down costs one search its timeout and retries, not
	// every search; each failure in a row doubles it, up to 16 times its
	// length.
	// With RerankStrict every search asks the Reranker.
	RerankBackoff time.Duration
	// Logger receives what the caches do in the background: a load that
	// failed (error), a cache dropped for its bound (warning), a catch-up
	// done (debug), and reranker failures the search outlived (warning).
	// Nil discards.
	Logger *slog.Logger
	// Write, when set, runs the Index's write transactions (vector and
	// index maintenance) as the caller's writes run, as driver.Backend
	// does: holding the store's write lock where it has one (SQLite), and
	// where writers run in parallel (PostgreSQL) locking what they write
	// (driver.Dialect.LockWrites, inside the transaction). Without it the Index
	// begins its own (driver.Dialect.BeginWrite).
	Write func(ctx context.Context, fn func(*sql.Tx) error) error
	// WriteLocked, when set, is used instead of Write: a write
	// transaction taking locks (see driver.WriteLock) in its first statement, as
	// memory/postgres's Backend.WriteLocked does. The transactions that
	// hold the whole store (StoreLock: Reembed's swap, setting up the
	// vector tables) need it where every write holds the store shared:
	// one that took it shared first and then exclusively would wait for
	// another doing the same.
	WriteLocked func(ctx context.Context, locks []driver.WriteLock, fn func(*sql.Tx) error) error
	// DataVersion, when set, reports a number that changes whenever a
	// connection other than its own commits to db (SQLite's PRAGMA
	// data_version read on a connection that never writes, as
	// memory's SQLite backend keeps one); ok false when it cannot tell.
	// The in-process caches then skip reading their change logs on a
	// search while it is unchanged (two indexed queries a full-text
	// search, for one cheaper read).
	DataVersion func(ctx context.Context) (v int64, ok bool, err error)
}

// Index searches the engram tables (blocks, archival, messages) of one
// database through its driver.Dialect. Full-text indexes are the engine's (FTS5
// tables or tsvector columns), kept current by triggers; vectors are in
// tables (vec_blocks, vec_archival, vec_messages) set up for the
// embedder's dimensions by the dialect (driver.Vectors.Create) and filled by the
// caller with PutVectors or PutEmbeddings. An Index is safe for
// concurrent use.
type Index struct {
	db    *sql.DB
	d     driver.Dialect
	emb   search.Embedder
	opts  IndexOptions
	vec   driver.Vectors    // nil without an embedder
	vinfo driver.VectorInfo // vec.Info()
	// results are the kinds' result select lists in d's SQL.
	results map[search.ContentType]string
	cache   *vecCache  // nil: no vector cache (VectorCacheBytes, engine)
	text    *textCache // nil: no text cache (TextCacheBytes < 0, no log)
	// textAnswers counts full-text legs the text cache answered;
	// textFilters, vector legs whose filters it checked; textRows, pages
	// whose rows it supplied.
	textAnswers, textFilters, textRows atomic.Int64
	stems                              stemCache // snippets' stems, across queries
	// vecAnswers counts KNN runs the vector cache answered.
	vecAnswers atomic.Int64
	// rerankFailures counts rerankings that failed and left the fused order.
	rerankFailures atomic.Int64
	// rerankPause is when searches may ask the Reranker again after
	// failures (UnixNano; 0: now), rerankStreak how many failed in a row.
	rerankPause  atomic.Int64
	rerankStreak atomic.Int64
	rerankMu     sync.Mutex // serializes pauseReranker's read and update
	// now is the clock of the reranker's back-off (tests set it).
	now func() time.Time
	// beforeFill, set by tests, runs between ranking and the page fetch.
	beforeFill func()
	// vecReason says why the database's indexed KNN is not in use.
	vecReason string
	// reembedMu serialises Reembed within this process.
	reembedMu sync.Mutex
	// stmts holds prepared read statements by query text (at most
	// maxStmts): parsing a search's SQL was a large part of a query.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool // Close ran: no statements are kept any more
	// prewarm is the text cache's prewarming (StartPrewarm), nil when
	// none was started.
	prewarm        *prewarmer
	prewarmStopped bool       // Close ran: no prewarming starts
	prewarmMu      sync.Mutex // guards prewarm, prewarmStopped
	// warmEvery, set by tests, replaces warmRecordEvery.
	warmEvery time.Duration
}

// maxStmts bounds Index.stmts: filter combinations make distinct texts.
const maxStmts = 256

// query runs a read query through a prepared statement kept for the
// Index's lifetime.
func (x *Index) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := x.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return x.db.QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// stmt returns the prepared statement for q, preparing it on first use;
// nil when the Index keeps maxStmts statements already, or is closed.
func (x *Index) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	x.stmtMu.Lock()
	st, ok := x.stmts[q]
	full := len(x.stmts) >= maxStmts || x.closed
	x.stmtMu.Unlock()
	if ok || full {
		return st, nil
	}
	// Prepared outside the lock: a prepare waiting for a pooled connection
	// must not hold up searches whose statements are ready.
	st, err := x.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	x.stmtMu.Lock()
	defer x.stmtMu.Unlock()
	if old, ok := x.stmts[q]; ok || len(x.stmts) >= maxStmts || x.closed {
		st.Close() // another search prepared it first, or no room
		return old, nil
	}
	if x.stmts == nil {
		x.stmts = map[string]*sql.Stmt{}
	}
	x.stmts[q] = st
	return st, nil
}

// Close stops the text cache's background work and releases the
// statements the Index prepared (database/sql keeps them until the *sql.DB
// closes otherwise). The Index still answers searches after Close, in SQL
// and preparing each query per call; the *sql.DB is the caller's.
func (x *Index) Close() error {
	x.stopPrewarm() // first: its record reads the partitions
	if x.text != nil {
		x.text.closeSaves() // first: they finish, not cancelled
		x.text.ld.close()   // stops and waits for a build in progress
		x.text.closePasses()
	}
	if x.cache != nil {
		x.cache.ld.close()
	}
	x.stmtMu.Lock()
	defer x.stmtMu.Unlock()
	var err error
	for _, st := range x.stmts {
		err = errors.Join(err, st.Close())
	}
	x.stmts, x.closed = nil, true
	return err
}

// kind describes one searchable content type's tables.
type kind struct {
	t     search.ContentType
	name  string    // "blocks"
	base  string    // base table
	alias string    // alias of the base table in queries
	owner string    // owner column of the base table
	fts   string    // FTS5 table
	vec   string    // vector table
	bm25  []float64 // full-text column weights, in FTS column order
	// result is the select list producing resultColumns, over alias, in
	// d's SQL (Index.results holds it per Index).
	result func(d driver.Dialect) string
	text   string // select list of columns that make the vector text
}

// resultColumns: id, owner, label, content, tags_json, metadata_json,
// created_at, superseded.
var kinds = map[search.ContentType]*kind{
	search.Blocks: {
		t: search.Blocks, name: "blocks", base: "blocks", alias: "b", owner: "owner",
		fts: "fts_blocks", vec: "vec_blocks", bm25: []float64{5.0, 2.0, 1.0},
		result: func(d driver.Dialect) string {
			return `b.id, b.owner, b.label, b.rendered, '[]',
			` + d.JSONObject(`'block_type', b.block_type, 'description', b.description`) + `, b.created_at, ` + d.False()
		},
		text: "b.label, b.description, b.rendered",
	},
	search.Archival: {
		t: search.Archival, name: "archival", base: "archival", alias: "a", owner: "agent",
		fts: "fts_archival", vec: "vec_archival", bm25: []float64{1.0, 2.0, 0.5, 0.5, 0.25},
		result: func(driver.Dialect) string {
			return `a.id, a.agent, '', a.content, a.tags_json, a.metadata_json, a.created_at,
			a.valid_to IS NOT NULL`
		},
		text: "a.content",
	},
	search.Messages: {
		t: search.Messages, name: "messages", base: "messages", alias: "m", owner: "agent",
		fts: "fts_messages", vec: "vec_messages", bm25: []float64{1.0, 0.5, 0.25, 0.5},
		result: func(d driver.Dialect) string {
			return `m.id, m.agent, '', m.content, '[]', ` + d.JSONObject(messageMeta) + `, m.created_at, ` + d.False()
		},
		text: "m.content",
	},
}

// messageMeta is a message result's Metadata object (driver.Dialect.JSONObject's
// pairs). The text columns are cast to text: on SQLite a hand edit can
// leave one a blob, which a JSON object cannot hold (every search over
// messages failed).
const messageMeta = `'role', CAST(m.role AS TEXT), 'name', CAST(m.name AS TEXT), 'batch_id', CAST(m.batch_id AS TEXT), 'seq', m.seq,
	'tool_call_id', CAST(m.tool_call_id AS TEXT)`

func kindOf(t search.ContentType) (*kind, error) {
	k, ok := kinds[t]
	if !ok {
		return nil, fmt.Errorf("%w: content type %v is not a single type (want Blocks, Archival or Messages)", search.ErrInvalidQuery, t)
	}
	return k, nil
}

// NewIndex opens the search index of db, whose schema must already be
// migrated by its backend; d is db's SQL dialect (a backend's
// SearchDialect). emb may be nil: then only FTS works and Auto means FTS.
//
// With an embedder, the first NewIndex on a database records its Name and
// Dimensions in table meta (MetaEmbedderName, MetaEmbedderDims) and has
// the dialect create the vector tables and their clean-up triggers where
// its schema lacks them (driver.Vectors.Create). If the database already
// records a different embedder, NewIndex returns the Index together with an
// error wrapping ErrEmbedderMismatch: the Index is usable for FTS and for
// Reembed, while vector searches and vector writes keep failing with
// ErrEmbedderMismatch until Reembed has switched the database over.
func NewIndex(ctx context.Context, db *sql.DB, d driver.Dialect, emb search.Embedder, opts *IndexOptions) (*Index, error) {
	if db == nil {
		return nil, errors.New("search: NewIndex: nil *sql.DB")
	}
	if d == nil {
		return nil, errors.New("search: NewIndex: nil driver.Dialect (pass the backend's SearchDialect)")
	}
	x := &Index{db: db, d: d, emb: emb, results: map[search.ContentType]string{}}
	for t, k := range kinds {
		x.results[t] = k.result(d)
	}
	if opts != nil {
		x.opts = *opts
	}
	if x.opts.SnippetTokens <= 0 {
		x.opts.SnippetTokens = 16
	}
	x.opts.SnippetTokens = min(x.opts.SnippetTokens, 64)
	if x.opts.ReembedBatch <= 0 {
		x.opts.ReembedBatch = search.DefaultBatchSize
	}
	// A negative depth would leave the reranker unused without a word, and
	// a huge one is every leg's fetch size (it overflowed the text cache's
	// top-k bound and panicked).
	if x.opts.Reranker != nil && (x.opts.RerankDepth < 0 || x.opts.RerankDepth > MaxRerankDepth) {
		return nil, fmt.Errorf("search: NewIndex: RerankDepth %d: want 0 (default %d) or 1..%d",
			x.opts.RerankDepth, DefaultRerankDepth, MaxRerankDepth)
	}
	textLog, err := d.CheckSchema(ctx, db)
	switch {
	case errors.Is(err, search.ErrSchema):
		return nil, err // names what is missing already
	case err != nil:
		return nil, fmt.Errorf("search: NewIndex: %s dialect: %w", d.Name(), err)
	}
	if err := x.openTextCache(ctx, textLog); err != nil {
		return nil, err
	}
	if emb == nil {
		return x, nil
	}
	if v := reflect.ValueOf(emb); v.Kind() == reflect.Pointer && v.IsNil() {
		// A constructor's nil result passed on with its error unchecked:
		// say so here rather than panic in the first call.
		return nil, fmt.Errorf("search: NewIndex: the embedder is a nil %T (did its constructor return an error?)", emb)
	}
	dims := emb.Dimensions()
	if dims <= 0 || dims > search.MaxDimensions {
		return nil, fmt.Errorf("search: NewIndex: embedder %q has %d dimensions (want 1..%d)", emb.Name(), dims, search.MaxDimensions)
	}
	if emb.Name() == "" {
		return nil, errors.New("search: NewIndex: embedder has an empty Name")
	}
	write := func(ctx context.Context, fn func(ctx context.Context, ex driver.Execer) error) error {
		return x.withWriteLock(ctx, nil, fn)
	}
	if x.vec, err = d.OpenVectors(ctx, db, &driver.VectorParams{Dims: dims, Write: write}); err != nil {
		return nil, fmt.Errorf("search: NewIndex: open vectors: %w", err)
	}
	x.vinfo = x.vec.Info()
	x.vecReason = x.vinfo.Reason
	if x.vinfo.Engine != "" && !x.vinfo.CacheByDefault && x.opts.VectorCacheBytes > 0 {
		x.vecReason = fmt.Sprintf("IndexOptions.VectorCacheBytes asks for in-process KNN (%s answers while it loads)", x.vinfo.Engine)
	}
	limit := x.opts.VectorCacheBytes
	if limit == 0 && x.vinfo.CacheByDefault {
		limit = DefaultVectorCacheBytes // an indexed KNN needs no copy
	}
	iso := d.SnapshotIsolation()
	switch {
	case x.vinfo.Engine == "":
		x.cache = newVecCache(dims, 0, false, iso, newChangeLog(d, "search_vec_log"), x.opts.Logger) // the only KNN there is
	case limit > 0:
		x.cache = newVecCache(dims, limit, true, iso, newChangeLog(d, "search_vec_log"), x.opts.Logger)
	}
	if x.cache != nil {
		x.cache.fresh.read = x.opts.DataVersion
		x.cache.log.prep = x.stmt
	}
	// Fast path: already recorded and set up.
	recorded := x.checkEmbedder(ctx, db)
	if err := recorded; err == nil {
		if ok, err := x.vecTablesExist(ctx, db); err != nil {
			return nil, err
		} else if ok {
			return x, nil
		}
	} else if errors.Is(err, search.ErrEmbedderMismatch) {
		return x, err
	} else if !errors.Is(err, errNotRecorded) {
		return nil, err
	}
	// The first embedder of a database that already holds content embeds
	// that content before it is recorded (Reembed does both, atomically):
	// recorded alone, it would leave every earlier row out of vector search
	// for good, silently. Should it fail, nothing is recorded.
	if errors.Is(recorded, errNotRecorded) {
		if has, err := x.hasContent(ctx); err != nil {
			return nil, err
		} else if has {
			if l := x.opts.Logger; l != nil {
				l.Info("embedding the existing content with the database's first embedder", "embedder", emb.Name())
			}
			if err := x.reembed(ctx, nil); err != nil {
				return nil, fmt.Errorf("search: NewIndex: embed the existing content with %q, the database's first embedder: %w", emb.Name(), err)
			}
			return x, nil
		}
	}
	// Record the embedder and create the tables holding the store.
	err = x.withWriteLock(ctx, []driver.WriteLock{driver.StoreLock()}, func(ctx context.Context, conn driver.Execer) error {
		err := x.checkEmbedder(ctx, conn)
		switch {
		case errors.Is(err, errNotRecorded):
			if err := x.recordEmbedder(ctx, conn); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		return x.vec.Create(ctx, conn)
	})
	if err != nil {
		if errors.Is(err, search.ErrEmbedderMismatch) {
			return x, err
		}
		return nil, err
	}
	return x, nil
}

// hasContent reports whether any block, archival entry or message exists.
func (x *Index) hasContent(ctx context.Context) (bool, error) {
	for _, t := range contentKinds {
		var n int
		if err := x.db.QueryRowContext(ctx, "SELECT count(*) FROM (SELECT 1 FROM "+kinds[t].base+" LIMIT 1) AS one").Scan(&n); err != nil {
			return false, fmt.Errorf("search: NewIndex: look for existing %s: %w", kinds[t].name, err)
		}
		if n > 0 {
			return true, nil
		}
	}
	return false, nil
}

// Embedder returns the embedder the Index was opened with (nil if none).
func (x *Index) Embedder() search.Embedder { return x.emb }

// Mismatch returns nil when the Index has an embedder and the database's
// vectors are from that embedder, an error wrapping ErrEmbedderMismatch
// when they are from another one, and ErrNoEmbedder without an embedder.
func (x *Index) Mismatch(ctx context.Context) error {
	if x.emb == nil {
		return search.ErrNoEmbedder
	}
	return x.checkEmbedder(ctx, x.db)
}

var errNotRecorded = errors.New("search: no embedder recorded")

// checkEmbedder compares the recorded embedder with x.emb.
func (x *Index) checkEmbedder(ctx context.Context, q driver.Execer) error {
	query := q.QueryContext
	if q == driver.Execer(x.db) {
		query = x.query // every search asks: a prepared statement
	}
	name, dims, err := recordedEmbedder(ctx, query)
	if err != nil {
		return err
	}
	if name == "" {
		return errNotRecorded
	}
	if name != x.emb.Name() || dims != x.emb.Dimensions() {
		return fmt.Errorf("%w: the database's vectors are from %q (%d dimensions), this embedder is %q (%d dimensions); run Reembed to switch",
			search.ErrEmbedderMismatch, name, dims, x.emb.Name(), x.emb.Dimensions())
	}
	return nil
}

// RecordedEmbedder returns the embedder name and dimensions recorded in db's
// meta table, or "", 0 if none.
func RecordedEmbedder(ctx context.Context, db driver.Execer) (name string, dims int, err error) {
	return recordedEmbedder(ctx, db.QueryContext)
}

func recordedEmbedder(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error)) (name string, dims int, err error) {
	rows, err := query(ctx, `SELECT key, value FROM meta WHERE key IN (?, ?)`, MetaEmbedderName, MetaEmbedderDims)
	if err != nil {
		return "", 0, fmt.Errorf("search: read embedder record: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return "", 0, fmt.Errorf("search: read embedder record: %w", err)
		}
		switch k {
		case MetaEmbedderName:
			name = v
		case MetaEmbedderDims:
			if dims, err = strconv.Atoi(v); err != nil {
				return "", 0, fmt.Errorf("search: meta %s = %q is not a number", MetaEmbedderDims, v)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return "", 0, fmt.Errorf("search: read embedder record: %w", err)
	}
	return name, dims, nil
}

func (x *Index) recordEmbedder(ctx context.Context, ex driver.Execer) error {
	for _, kv := range [][2]string{
		{MetaEmbedderName, x.emb.Name()},
		{MetaEmbedderDims, strconv.Itoa(x.emb.Dimensions())},
	} {
		if _, err := ex.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, kv[0], kv[1]); err != nil {
			return fmt.Errorf("search: record embedder: %w", err)
		}
	}
	return nil
}

func (x *Index) vecTablesExist(ctx context.Context, q driver.Execer) (bool, error) {
	ok, err := x.vec.Ready(ctx, q)
	if err != nil {
		return false, fmt.Errorf("search: read schema: %w", err)
	}
	return ok, nil
}

// logVectorChanges records changed rows in search_vec_log (read by vector
// caches) and trims the log to about its last vecLogKeep entries
// (driver.ChangeLog.Trim). Rows go in vecLogRows to a statement: one statement
// per row was a sixth of a bulk load's vector writes.
func (x *Index) logVectorChanges(ctx context.Context, ex driver.Execer, t search.ContentType, ids []int64) error {
	for chunk := range slices.Chunk(ids, vecLogRows) {
		q := `INSERT INTO search_vec_log (kind, id) VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?), ", len(chunk)), ", ")
		args := make([]any, 0, 2*len(chunk))
		for _, id := range chunk {
			args = append(args, int(t), id)
		}
		if _, err := ex.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("search: log vector changes: %w", err)
		}
	}
	if _, err := ex.ExecContext(ctx, x.d.ChangeLog("search_vec_log").Trim, vecLogKeep); err != nil {
		return fmt.Errorf("search: trim vector log: %w", err)
	}
	return nil
}

// vecLogRows is how many log entries one INSERT writes (well under
// SQLite's and PostgreSQL's bound-parameter limits).
const vecLogRows = 250

// withWriteLock runs fn inside a write transaction holding locks:
// IndexOptions.WriteLocked's, IndexOptions.Write's, or the dialect's
// (driver.Dialect.BeginWrite) on one pinned connection, the locks taken first
// (driver.Dialect.LockWrites). ctx governs only the waits for locks: fn gets a
// context that is never cancelled: a transaction once begun is finished,
// so a cancelled caller never leaves half a batch to roll back (and,
// while vectors were in vec0, an interrupted statement could crash it: a
// nil statement in vec0_get_chunk_position). fn may take more locks
// (after these, see driver.WriteLock).
func (x *Index) withWriteLock(ctx context.Context, locks []driver.WriteLock, fn func(ctx context.Context, conn driver.Execer) error) (err error) {
	wctx := context.WithoutCancel(ctx)
	if x.opts.WriteLocked != nil {
		return x.opts.WriteLocked(ctx, locks, func(tx *sql.Tx) error { return fn(wctx, tx) })
	}
	if x.opts.Write != nil {
		return x.opts.Write(ctx, func(tx *sql.Tx) error {
			if err := x.d.LockWrites(ctx, tx, locks); err != nil {
				return err
			}
			return fn(wctx, tx)
		})
	}
	conn, err := x.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("search: get connection: %w", err)
	}
	defer conn.Close()
	if err := x.d.BeginWrite(ctx, conn); err != nil {
		return fmt.Errorf("search: take write lock: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if err := x.d.LockWrites(ctx, conn, locks); err != nil {
		return err
	}
	if err := fn(wctx, conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("search: commit: %w", err)
	}
	committed = true
	return nil
}

// VectorItem is one row to embed: the base table's id, its owner (the
// vector partition: blocks.owner, archival.agent or messages.agent) and the
// text to embed (for blocks, BlockText; otherwise the content).
type VectorItem struct {
	ID    int64
	Owner string
	Text  string
}

// EmbeddingItem is a row with a precomputed vector.
type EmbeddingItem struct {
	ID     int64
	Owner  string
	Vector []float32
	// New says the row was inserted in the caller's transaction, so it has
	// no vector to replace: the insert skips the upsert's conflict
	// handling. A stale vector under a New id makes the insert fail;
	// nothing is overwritten silently.
	New bool
}

// Embed embeds texts with the Index's embedder and checks the result's
// count and dimensions. Use it to compute vectors before a transaction and
// PutEmbeddings inside it, so no write lock is held across an HTTP call.
func (x *Index) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if x.emb == nil {
		return nil, search.ErrNoEmbedder
	}
	vecs, err := x.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("%w: %s returned %d vectors for %d texts", search.ErrEmbedder, x.emb.Name(), len(vecs), len(texts))
	}
	for i, v := range vecs {
		if err := vecmath.Check(v, x.emb.Dimensions()); err != nil {
			return nil, fmt.Errorf("%w: %s: vector %d %v", search.ErrEmbedder, x.emb.Name(), i, err)
		}
	}
	return vecs, nil
}

// PutVectors embeds the items' texts and stores their vectors (replacing
// any earlier ones) through ex, typically the caller's transaction that
// wrote the rows. Items with blank text get no vector (an old one is
// deleted). The embedder is called while ex may hold the write lock; with a
// slow embedder prefer Embed before the transaction and PutEmbeddings in it.
// The Index does not notice content changes: call PutVectors again after
// changing a row's text. Deleting a row (or changing its owner) drops its
// vector by trigger.
func (x *Index) PutVectors(ctx context.Context, ex driver.Execer, t search.ContentType, items []VectorItem) error {
	if x.emb == nil {
		return search.ErrNoEmbedder
	}
	var texts []string
	var keep []VectorItem
	var blank []int64
	for _, it := range items {
		if strings.TrimSpace(it.Text) == "" {
			blank = append(blank, it.ID)
			continue
		}
		texts = append(texts, it.Text)
		keep = append(keep, it)
	}
	if len(blank) > 0 {
		if err := x.DeleteVectors(ctx, ex, t, blank...); err != nil {
			return err
		}
	}
	if len(keep) == 0 {
		return nil
	}
	vecs, err := x.Embed(ctx, texts)
	if err != nil {
		return err
	}
	emb := make([]EmbeddingItem, len(keep))
	for i, it := range keep {
		emb[i] = EmbeddingItem{ID: it.ID, Owner: it.Owner, Vector: vecs[i]}
	}
	return x.PutEmbeddings(ctx, ex, t, emb)
}

// PutEmbeddings stores precomputed vectors (replacing earlier ones) through
// ex. The vectors must come from the Index's embedder: it checks their
// dimensions and that the database records this embedder.
func (x *Index) PutEmbeddings(ctx context.Context, ex driver.Execer, t search.ContentType, items []EmbeddingItem) error {
	if x.emb == nil {
		return search.ErrNoEmbedder
	}
	k, err := kindOf(t)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		return nil
	}
	if err := x.checkEmbedder(ctx, ex); err != nil {
		if errors.Is(err, errNotRecorded) {
			return fmt.Errorf("%w: the database records no embedder (was it opened with NewIndex?)", search.ErrEmbedderMismatch)
		}
		return err
	}
	dims := x.emb.Dimensions()
	for _, it := range items {
		if err := vecmath.Check(it.Vector, dims); err != nil {
			return fmt.Errorf("search: vector for %s %d %v", k.name, it.ID, err)
		}
	}
	ids := make([]int64, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	// Many rows per INSERT: SQLite opens a statement savepoint for every
	// statement, and FTS5 answers each savepoint by flushing its pending
	// terms to disk, so one vector per statement in a transaction that
	// also wrote text made one FTS5 segment (and later merges) per row.
	// Several chunks parse their statement once (the SQLite driver parses
	// every Exec, and parsing the 64-row INSERTs showed in a bulk load's
	// profile: docs/performance.md), as memory's archival batches do.
	stmts := &stmtSet{ex: ex, reuse: len(items) > vecInsertRows}
	defer stmts.close()
	for chunk := range slices.Chunk(items, vecInsertRows) {
		var args []any
		upsert := false
		for _, it := range chunk {
			a, err := x.vec.InsertArgs(it.ID, it.Owner, vecmath.Blob(it.Vector), false)
			if err != nil {
				return fmt.Errorf("search: put %s vector %d: %w", k.name, it.ID, err)
			}
			args = append(args, a...)
			upsert = upsert || !it.New
		}
		if err := stmts.exec(ctx, x.vec.Insert(k.vec, len(chunk), upsert, false), args...); err != nil {
			return fmt.Errorf("search: put %s vectors %d..%d: %w", k.name, chunk[0].ID, chunk[len(chunk)-1].ID, err)
		}
	}
	return x.logVectorChanges(ctx, ex, t, ids)
}

// stmtSet runs statements on a driver.Execer, preparing each distinct text once
// when it reuses them; close releases what it prepared.
type stmtSet struct {
	ex    driver.Execer
	reuse bool
	stmts map[string]*sql.Stmt
}

func (s *stmtSet) exec(ctx context.Context, q string, args ...any) error {
	if !s.reuse {
		_, err := s.ex.ExecContext(ctx, q, args...)
		return err
	}
	st := s.stmts[q]
	if st == nil {
		var err error
		if st, err = s.ex.PrepareContext(ctx, q); err != nil {
			return err
		}
		if s.stmts == nil {
			s.stmts = map[string]*sql.Stmt{}
		}
		s.stmts[q] = st
	}
	_, err := st.ExecContext(ctx, args...)
	return err
}

func (s *stmtSet) close() {
	for _, st := range s.stmts {
		st.Close()
	}
	s.stmts = nil
}

// vecInsertRows is how many vectors one INSERT writes (PutEmbeddings).
const vecInsertRows = 64

// DeleteVectors removes the vectors of the given rows (missing ones are
// ignored). Deleting the rows themselves does this by trigger already.
func (x *Index) DeleteVectors(ctx context.Context, ex driver.Execer, t search.ContentType, ids ...int64) error {
	k, err := kindOf(t)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if ok, err := x.d.VectorTableExists(ctx, ex, k.vec); err != nil {
		return fmt.Errorf("search: delete %s vectors: %w", k.name, err)
	} else if !ok {
		return nil
	}
	stmt, err := ex.PrepareContext(ctx, fmt.Sprintf(`DELETE FROM %s WHERE rowid = ?`, k.vec))
	if err != nil {
		return fmt.Errorf("search: delete %s vectors: %w", k.name, err)
	}
	defer stmt.Close()
	for _, id := range ids {
		if _, err := stmt.ExecContext(ctx, id); err != nil {
			return fmt.Errorf("search: delete %s vector %d: %w", k.name, id, err)
		}
	}
	return x.logVectorChanges(ctx, ex, t, ids)
}

// textHash fingerprints a row's vector text for Reembed.
func textHash(s string) int64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return int64(h.Sum64())
}

// flushBlocks re-indexes the blocks changed since they were last indexed
// (migration 0003: writers only mark them dirty). It runs before every
// search over blocks; when nothing is dirty it costs one indexed read.
// The blocks are locked while they are indexed (their writers wait), up
// to flushBlocksBatch in a transaction.
func (x *Index) flushBlocks(ctx context.Context) error {
	var dirty bool
	if err := x.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM fts_blocks_dirty)`).Scan(&dirty); err != nil {
		return fmt.Errorf("search: check block index: %w", err)
	}
	for dirty {
		err := x.withWriteLock(ctx, nil, func(ctx context.Context, conn driver.Execer) error {
			rows, err := conn.QueryContext(ctx, `SELECT id FROM fts_blocks_dirty ORDER BY id LIMIT ?`, flushBlocksBatch)
			if err != nil {
				return err
			}
			var ids []int64
			var locks []driver.WriteLock
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
				locks = append(locks, driver.BlockLock(id))
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			dirty = len(ids) == flushBlocksBatch
			if err := x.d.LockWrites(ctx, conn, locks); err != nil {
				return err
			}
			return x.d.IndexBlocks(ctx, conn, ids)
		})
		if err != nil {
			return fmt.Errorf("search: re-index changed blocks: %w", err)
		}
	}
	return nil
}

// flushBlocksBatch is how many marked blocks one transaction of
// flushBlocks indexes.
const flushBlocksBatch = 1000

// flushBlockVectorsBatch is how many changed blocks one embedder call
// covers.
const flushBlockVectorsBatch = 64

// FlushBlockVectors computes the vectors of blocks whose text changed since
// their vector was (migration 0004: writers only mark them, so no write
// waits for an embedder). A store runs it in the background after writes;
// vector and hybrid searches over blocks run it first, so they still see
// every persisted change. The embedder is called outside any transaction;
// a block that changed again meanwhile stays marked for the next round. It
// is a no-op without an embedder or while the database records another.
func (x *Index) FlushBlockVectors(ctx context.Context) error {
	if x.emb == nil {
		return nil
	}
	for {
		var dirty bool
		if err := x.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM vec_blocks_dirty)`).Scan(&dirty); err != nil {
			return fmt.Errorf("search: check block vectors: %w", err)
		}
		if !dirty {
			return nil
		}
		if err := x.checkEmbedder(ctx, x.db); err != nil {
			return nil // Reembed will compute every vector
		}
		cleared, err := x.flushBlockVectors(ctx)
		if err != nil {
			return fmt.Errorf("search: embed changed blocks: %w", err)
		}
		if cleared == 0 {
			return nil // every marked block changed again meanwhile: next round
		}
	}
}

type dirtyBlock struct {
	id          int64
	owner, text string
}

func (x *Index) flushBlockVectors(ctx context.Context) (cleared int, err error) {
	rows, err := x.db.QueryContext(ctx, `SELECT d.id, COALESCE(b.owner, ''), COALESCE(b.label, ''), COALESCE(b.description, ''), COALESCE(b.rendered, '')
		FROM vec_blocks_dirty d LEFT JOIN blocks b ON b.id = d.id ORDER BY d.id LIMIT ?`, flushBlockVectorsBatch)
	if err != nil {
		return 0, err
	}
	var todo []dirtyBlock
	for rows.Next() {
		var b dirtyBlock
		var label, desc, rendered string
		if err := rows.Scan(&b.id, &b.owner, &label, &desc, &rendered); err != nil {
			rows.Close()
			return 0, err
		}
		b.text = search.BlockText(label, desc, rendered)
		todo = append(todo, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	var texts []string
	for _, b := range todo {
		if strings.TrimSpace(b.text) != "" {
			texts = append(texts, b.text)
		}
	}
	var vecs [][]float32
	if len(texts) > 0 {
		if vecs, err = x.Embed(ctx, texts); err != nil {
			return 0, err
		}
	}
	// The blocks' writers wait: the text read below stays the one stored
	// until the mark is cleared.
	locks := make([]driver.WriteLock, len(todo))
	for i, b := range todo {
		locks[i] = driver.BlockLock(b.id)
	}
	err = x.withWriteLock(ctx, locks, func(ctx context.Context, conn driver.Execer) error {
		cleared = 0
		next := 0
		for _, b := range todo {
			var vec []float32
			if strings.TrimSpace(b.text) != "" {
				vec = vecs[next]
				next++
			}
			// Only what was embedded may clear the mark: a block written
			// since keeps it.
			var label, desc, rendered, owner string
			err := conn.QueryRowContext(ctx, `SELECT owner, label, description, rendered FROM blocks WHERE id = ?`, b.id).Scan(&owner, &label, &desc, &rendered)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				// deleted: its trigger dropped the vector
			case err != nil:
				return err
			case owner != b.owner || search.BlockText(label, desc, rendered) != b.text:
				continue
			case vec == nil:
				if err := x.DeleteVectors(ctx, conn, search.Blocks, b.id); err != nil {
					return err
				}
			default:
				if err := x.PutEmbeddings(ctx, conn, search.Blocks, []EmbeddingItem{{ID: b.id, Owner: b.owner, Vector: vec}}); err != nil {
					return err
				}
			}
			if _, err := conn.ExecContext(ctx, `DELETE FROM vec_blocks_dirty WHERE id = ?`, b.id); err != nil {
				return err
			}
			cleared++
		}
		return nil
	})
	return cleared, err
}

// openTextCache sets up the text cache (IndexOptions.TextCacheBytes) when
// the database has its log (textLog).
func (x *Index) openTextCache(ctx context.Context, textLog bool) error {
	if x.opts.TextCacheBytes < 0 {
		return nil
	}
	if d := x.opts.TextStatsDrift; !(d >= 0 && d <= 1) {
		return fmt.Errorf("search: NewIndex: TextStatsDrift %v: want a share between 0 and 1", d)
	}
	switch limit := cmp.Or(x.opts.TextCacheBytes, DefaultTextCacheBytes); {
	case textLog:
		x.text = newTextCache(limit, textRows(x.d), x.d.SnapshotIsolation(), newChangeLog(x.d, "search_text_log"), x.opts.Logger)
		x.text.driftShare = x.opts.TextStatsDrift
		if jk, ok := x.d.(JSONBKeyer); ok {
			x.text.jsonbKeys = jk.JSONBConversationKeys()
		}
		x.text.fresh.read = x.opts.DataVersion
		x.text.prep = x.stmt
		x.text.log.prep = x.stmt
		pr, _ := x.d.(PerRunPlanner)
		x.text.prepPositions = pr != nil && pr.PlansEachRun()
		// Stored partitions where the schema has their table (a database
		// migrated by this version's backends does) and the dialect can
		// make a save see every write that would change the part
		// (TextPartLocker): a save holds the part's lock (SQLite: the
		// write transaction holds the whole database), which the triggers
		// that drop the part take too, so that a delete in flight makes
		// the save write nothing and a later one waits and drops it.
		var one int
		err := x.db.QueryRowContext(ctx, `SELECT 1 FROM search_text_parts WHERE kind = 0 AND owner = ''`).Scan(&one)
		locker, _ := x.d.(TextPartLocker)
		sv, _ := x.d.(SchemaVersioner)
		if (err != nil && !errors.Is(err, sql.ErrNoRows)) || sv == nil || locker == nil {
			x.text.saves.off = true
		} else {
			x.text.saves.write = func(ctx context.Context, t search.ContentType, owner string, fn func(ctx context.Context, ex driver.Execer) error) error {
				return x.withWriteLock(ctx, nil, func(ctx context.Context, ex driver.Execer) error {
					switch ok, err := locker.TryLockTextPart(ctx, ex, int(t), owner); {
					case err != nil:
						return err
					case !ok:
						return errPartBusy
					}
					return fn(ctx, ex)
				})
			}
		}
		if !x.text.saves.off {
			if err := x.db.QueryRowContext(ctx, sv.SchemaVersionQuery()).Scan(&x.text.saves.schema); err != nil {
				x.text.saves.off = true
			}
		}
		x.text.stats, _ = x.d.(driver.TextStats)
		if x.text.stats != nil {
			x.text.vocab, _ = x.d.(driver.TextVocabulary)
		}
	case x.opts.TextCacheBytes > 0:
		return fmt.Errorf("search: NewIndex: TextCacheBytes needs search_text_log: apply the %s backend's migrations first", x.d.Name())
	}
	return nil
}

// CacheStats returns what the caches hold and have done so far.
func (x *Index) CacheStats() search.CacheStats {
	s := search.CacheStats{TextLegs: x.textAnswers.Load(), TextPages: x.textRows.Load(),
		TextFilters: x.textFilters.Load(), VectorLegs: x.vecAnswers.Load()}
	if c := x.text; c != nil {
		c.mu.RLock()
		s.TextPartial, s.TextLimit = c.partial, c.limit
		s.TextStatsPasses, s.TextStatsDrops = c.passes.Load(), c.drops.Load()
		s.TextLoadsStored, s.TextLoadsRows, s.TextEvictions = c.loadsStored.Load(), c.loadsRows.Load(), c.evictions.Load()
		if c.partial {
			s.TextBytes = c.partialBytes()
			for _, owned := range c.owned {
				s.TextPartitions += len(owned)
			}
			for _, st := range c.gstats {
				s.TextStatsDrift += st.drift
			}
		} else {
			s.TextBytes = c.bytes()
		}
		c.mu.RUnlock()
	}
	if c := x.cache; c != nil {
		c.mu.RLock()
		s.VectorPartial, s.VectorBytes, s.VectorLimit = c.partial, int64(c.rows)*c.vecRowBytes(), c.limit
		s.VectorEvictions = c.evictions.Load()
		if c.partial {
			for _, parts := range c.parts {
				s.VectorPartitions += len(parts)
			}
		}
		c.mu.RUnlock()
	}
	s.Prewarming = !x.prewarmDone()
	return s
}

// FlushArchivalVectors computes the vectors of archival entries stored
// without one and marked for it (migration 0014: a Log block's rotation
// writes its entries in the append's transaction without waiting for an
// embedder). A store runs it in the background after such writes; vector
// and hybrid searches over archival entries run it first, so they still
// see every rotated entry. The embedder is called outside any transaction.
// It is a no-op without an embedder or while the database records another
// (Reembed then computes every vector).
func (x *Index) FlushArchivalVectors(ctx context.Context) error {
	if x.emb == nil {
		return nil
	}
	for {
		var dirty bool
		if err := x.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM vec_archival_dirty)`).Scan(&dirty); err != nil {
			return fmt.Errorf("search: check archival vectors: %w", err)
		}
		if !dirty {
			return nil
		}
		if err := x.checkEmbedder(ctx, x.db); err != nil {
			return nil
		}
		if err := x.flushArchivalVectors(ctx); err != nil {
			return fmt.Errorf("search: embed archival entries: %w", err)
		}
	}
}

func (x *Index) flushArchivalVectors(ctx context.Context) error {
	rows, err := x.db.QueryContext(ctx, `SELECT d.id, COALESCE(a.agent, ''), COALESCE(a.content, '')
		FROM vec_archival_dirty d LEFT JOIN archival a ON a.id = d.id ORDER BY d.id LIMIT ?`, flushBlockVectorsBatch)
	if err != nil {
		return err
	}
	var todo []VectorItem
	for rows.Next() {
		var it VectorItem
		if err := rows.Scan(&it.ID, &it.Owner, &it.Text); err != nil {
			rows.Close()
			return err
		}
		todo = append(todo, it)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var texts []string
	for _, it := range todo {
		if strings.TrimSpace(it.Text) != "" {
			texts = append(texts, it.Text)
		}
	}
	var vecs [][]float32
	if len(texts) > 0 {
		if vecs, err = x.Embed(ctx, texts); err != nil {
			return err
		}
	}
	// The agents' archival writers (a deletion) wait.
	locks := make([]driver.WriteLock, len(todo))
	for i, it := range todo {
		locks[i] = driver.AgentLock(it.Owner)
	}
	return x.withWriteLock(ctx, locks, func(ctx context.Context, conn driver.Execer) error {
		next := 0
		for _, it := range todo {
			var vec []float32
			if strings.TrimSpace(it.Text) != "" {
				vec = vecs[next]
				next++
			}
			// Under the lock, only a mark still there is cleared: another
			// process may have flushed it (and the entry may be gone). And
			// only for the text embedded: the entry may have been deleted
			// and its id taken by another entry since it was read (SQLite
			// reuses the highest rowid), of this agent or another, whose
			// vector this is not; its mark stays for the next round.
			var owner, text string
			err := conn.QueryRowContext(ctx, `SELECT a.agent, a.content FROM vec_archival_dirty d JOIN archival a ON a.id = d.id WHERE d.id = ?`, it.ID).Scan(&owner, &text)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			case owner != it.Owner || text != it.Text:
				continue
			case vec != nil:
				// An upsert: a vector stored meanwhile (Reembed) is replaced
				// by one of the same embedder.
				if err := x.PutEmbeddings(ctx, conn, search.Archival, []EmbeddingItem{{ID: it.ID, Owner: owner, Vector: vec}}); err != nil {
					return err
				}
			}
			if _, err := conn.ExecContext(ctx, `DELETE FROM vec_archival_dirty WHERE id = ?`, it.ID); err != nil {
				return err
			}
		}
		return nil
	})
}
