package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/unixnanos"
	"github.com/engram-go/engram/search"
)

// FTS5's bm25 constants (fts5_aux.c). Variables, not constants: C
// computes k1 + 1.0 in float64 arithmetic, which can round differently
// from Go's exact constant arithmetic.
var (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// textCache is the optional in-process copy of the FTS5 indexes
// (IndexOptions.TextCacheBytes): for each content type, an inverted index of
// the same terms FTS5 holds (analyzer.Analyze), each posting carrying the term's
// column-weighted frequency in that row. It ranks with FTS5's bm25 formula
// over the same global statistics (row count, average row length, rows per
// term), so a search ranks as the SQL path does (scores equal up to the
// rounding of log(); compared in TestTextCacheRanksLikeFTS5), in a fraction
// of the time: FTS5 computes
// bm25 through its auxiliary-function API row by row (figures in
// docs/performance.md).
//
// The database stays the source of truth. Every change to indexed text or
// to a filtered column is logged in search_text_log by triggers in the
// writer's transaction (SQLite migration 0009, PostgreSQL migration 0008 of
// memory/postgres), and each search first replays the log
// since the cache's position (one indexed lookup when nothing changed), so
// writes from other connections and processes are seen.
type textCache struct {
	mu    sync.RWMutex
	pos   logPos // log position applied; not valid: not loaded
	parts map[search.ContentType]*textPart
	pool  sync.Pool // *scoreBuf
	// limit is the most bytes the parts may hold (estimated: textPart.bytes
	// and bodyBytes). A build or catch-up that would exceed it drops the
	// rows' bodies first (pages are then read from SQL; noBodies), and the
	// whole cache for good if the index alone would: searches rank in SQL,
	// as without a cache.
	limit    int64
	noBodies bool
	// scanFault, set by tests only, fails the read of the rows it returns
	// an error for: a load or catch-up that cannot read a row.
	scanFault atomic.Pointer[func(id int64) error]
	rows      map[search.ContentType]textRowQuery // the dialect's (textRows)
	// jsonbKeys: the dialect keys archival conversations by jsonb's text
	// (JSONBKeyer).
	jsonbKeys bool
	logIso    sql.IsolationLevel // the dialect's SnapshotIsolation
	log       *changeLog         // search_text_log
	// prep returns the Index's prepared statement for a query (nil: none),
	// for the statements every partition load runs.
	prep func(ctx context.Context, q string) (*sql.Stmt, error)
	// byID are the prepared reads of a few rows by id that catch-ups
	// run (readByID), by kind and padded count; byIDWant the ones a
	// catch-up wanted and did not have, prepared before the next one
	// opens its transaction (see prepareByID). Guarded by byIDMu.
	byIDMu   sync.Mutex
	byID     map[byIDKey]*sql.Stmt
	byIDWant map[byIDKey]bool

	// Catch-ups run in the background (ld): a catch-up reads and analyzes
	// rows without holding mu, then applies them under mu in one step, so a
	// failed one leaves the cache as it was; searches rank in SQL meanwhile.
	ld *loader
	// Analyzer scratch of the running flight (partition loads and
	// catch-ups bring their own: they run beside each other).
	scratch textScratch
	// saves write loaded partitions to search_text_parts for other
	// processes' first searches (textpartstore.go).
	saves partSaves
	// prepPositions: statements naming a log position may be prepared
	// (PerRunPlanner): catch-ups and loads read them whether or not
	// partitions are saved.
	prepPositions bool

	// beforeCatchUp, set by tests, runs at the start of every background
	// catch-up (a build included) with the flight's context.
	beforeCatchUp func(context.Context)
	fresh         logFreshness
	logReads      atomic.Int64 // searches that read the log (for tests)

	// The partial cache (textpartial.go): a store whose copy would
	// outgrow limit is held as per-owner partitions of the owners searched
	// lately, ranked with the engine's store-wide statistics (stats), or
	// without driver.TextStats with the cache's own (textstatspass.go).
	partialState
}

// textPart is one content type's inverted index. Rows are slots; a changed
// or deleted row's slot is marked dead (skipped by queries, subtracted from
// the statistics) and reclaimed when dead slots outnumber live ones.
//
// Slots are grouped by owner: maybeCompact (and reload) number an owner's
// rows consecutively, and each owner keeps the runs of slots its rows
// occupy, so a posting list (in slot order) holds an owner's postings in
// a few contiguous stretches found by binary search. A search for one
// agent then reads only that agent's postings (and those of the owners of
// blocks shared with it), not every agent's: the cost of a per-agent
// query does not grow with the number of agents in the store. The bm25
// statistics stay store-wide (rows, tokens, df), as FTS5's are, so the
// scores and the order are those of the SQL path.
type textPart struct {
	weights []float64 // bm25 column weights, in FTS column order
	// t is the kind of row held; jsonb, whether its dialect keys archival
	// conversations by jsonb's text (JSONBKeyer): a body's session is
	// read from its metadata as it is added (bodySession).
	t     search.ContentType
	jsonb bool
	docs  []textDoc
	slots map[int64]int32 // live row id -> slot
	// post numbers the terms (term ids: what textBody.toks hold), lists
	// holds each term's postings in slot order, df how many live rows hold
	// it (FTS5's nHit); a term no live row holds any more is dropped by
	// maybeCompact and its id reused (free).
	post  map[string]int32
	names []string // term id -> term (post inverted; "" for a free id)
	lists [][]posting
	// packed holds a decoded part's names and lists until its first
	// change (names and lists are nil meanwhile; name, list and
	// termCount read either).
	packed *packedTerms
	df     []int32
	free   []int32
	// terms holds each slot's term ids (textDoc.terms indexes it), so a
	// removed row's terms leave df without a walk over the lists.
	terms  []int32
	owners map[string]*textOwner
	runs   int // runs over all owners (fragmentation, for maybeCompact)
	live   int
	tokens int64 // tokens in live rows, all columns
	// bodies holds, per slot, what a result shows of the row (Archival and
	// Messages: every change to their rows is logged, so the copy is as
	// current as the ranking; blocks' rendered text changes without a log
	// entry until the lazy re-index, so their rows are read from SQL).
	bodies    []textBody
	dead      int
	bytes     int64 // estimated heap the index holds, dead slots included (textCost*)
	bodyBytes int64 // and the bodies
	// used is when a search last read it: an owner's partition of a
	// partial cache (LRU); no row it holds is newer than log position
	// hiPos (moveStats).
	used  atomic.Int64
	hiPos logPos
}

// textOwner is one owner's share of a textPart: the runs of slots its
// rows occupy, in slot order (dead slots included, skipped by queries).
type textOwner struct {
	name string
	runs []slotRun
	live int
}

// slotRun is the slots lo to hi-1.
type slotRun struct{ lo, hi int32 }

// What a textPart holds, estimated from Go's layouts (checked against the
// heap in TestTextCacheBudgetEstimate): a slot's textDoc plus its entry in
// slots; a posting with its slice's growth slack and its term id in
// terms; a term's map entry (string and slice headers, df, hash-table
// share) plus its bytes, and in a part its name in names; a packed term
// (packedTerms: its name's and postings' ends, its count and df, its
// name's bytes in the shared string); an owner's entry and a run.
const (
	textCostDoc     = 80
	textCostPosting = 16
	textCostTerm    = 68
	textCostName    = 16 // a string header in textPart.names
	textCostPacked  = 16
	textCostOwner   = 96
	textCostRun     = 8
	textCostBody    = 96 // four string headers, a slice header and a byte
	textCostTok     = 1  // a byte of textBody.toks
)

type textDoc struct {
	id         int64
	owner      string
	created    int64
	length     int32 // tokens, all columns (FTS5's xColumnSize(-1))
	termsAt    int32 // its term ids are textPart.terms[termsAt : termsAt+nTerms]
	nTerms     int32
	superseded bool
	dead       bool
}

// textBody is a row's result columns beyond textDoc: content, tags_json
// and the metadata object (resultColumns), and, when content is ASCII,
// its tokens as term ids (toks, nil otherwise): snippets of a cached row
// then find the query's terms by number instead of tokenizing and
// stemming the text (snippeter.snippetOfTokens). For ASCII text the
// analyzer's tokens are the snippeter's, one term each.
type textBody struct {
	content, tags, meta string
	// toks holds the term ids packed (packToks): most take one byte, not
	// four, and a stored part's are its encoding's bytes, copied whole.
	toks []byte
	// sess is the row's session key (session.go) and sessOf what sess
	// holds: sessNone (a session of its own), sessKey, or sessEngine (the
	// engine is to say; read in SQL).
	sess   string
	sessOf uint8
}

// packToks packs term ids as uvarints into a slice of exactly their size
// (the cache keeps it), never nil.
func packToks(ids []uint32) []byte {
	n := 0
	for _, id := range ids {
		n += uvarintLen(uint64(id))
	}
	b := make([]byte, 0, n)
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
	}
	return b
}

// uvarintLen is the length of v's uvarint encoding.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// nextTok reads the first term id packed in toks and the rest after it;
// ok is false at the end or at a malformed id (toks then ends there).
func nextTok(toks []byte) (id uint32, rest []byte, ok bool) {
	if len(toks) > 0 && toks[0] < 0x80 { // most are one byte
		return uint32(toks[0]), toks[1:], true
	}
	v, n := binary.Uvarint(toks)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, false
	}
	return uint32(v), toks[n:], true
}

// cost is what the body holds on the heap.
func (b textBody) cost() int64 {
	return textCostBody + int64(len(b.content)+len(b.tags)+len(b.meta)) + textCostTok*int64(len(b.toks))
}

type posting struct {
	slot int32
	freq float32 // column-weighted count; exact (sums of halves)
}

type scoreBuf struct {
	scores  []float64
	touched []int32
}

// textWeights are FTS5's column weights per content type (kind.bm25).
var textWeights = map[search.ContentType][]float64{
	search.Blocks:   {5.0, 2.0, 1.0},
	search.Archival: {1.0, 2.0, 0.5, 0.5, 0.25},
	search.Messages: {1.0, 0.5, 0.25, 0.5},
}

// textRowQuery selects one kind's indexed columns: id, owner, created_at,
// superseded, then the FTS columns in order (what the full-text index
// holds), then for the kinds with bodies (textBodies) tags_json and the
// metadata object as kinds' result lists make them; content is the first
// FTS column. key is the id column, for reading changed rows by id.
type textRowQuery struct {
	sel, key string
	// own, when set, selects one owner's rows (the owner its one
	// argument) with each row's conversation key where sel has the
	// neighbours' text, ordered by key and place in the conversation
	// ((COALESCE(conversation_pos, id), id)): a partition load finds the
	// neighbours among the owner's rows itself (ownNeighbours) rather
	// than per row in SQL.
	own string
	// neighbours sets the context columns of the rows own read (one
	// owner's, in its order) from their keys (ownRow.key, ownRow.next).
	neighbours func([]ownRow)
	// ctxAt is the first of the two context columns, where own selects
	// each row's keys.
	ctxAt int
	// unplaced: a row own gives no key has neighbours the engine finds
	// that neighbours cannot (its keys are of types Go does not compare
	// as the engine does); it is read again by id with sel.
	unplaced bool
	// stamped: own selects, where sel has the second context column, 1
	// for a row whose created_at is not an integer (a hand edit on
	// SQLite), which the engine's arithmetic reads otherwise than Go
	// (archival entries' neighbours in their stream depend on it): the
	// owner's rows are then all read again by id with sel.
	stamped bool
	// bulkOwn: statistics passes and whole builds read the kind owner by
	// owner with own (eachOwnRow), not all at once with sel. For archival
	// entries sel's join of each entry's neighbours cost PostgreSQL about
	// 100 µs a row; messages' join is an index probe per neighbour, which
	// costs less than a query per owner of few messages.
	bulkOwn bool
	// dateAt, when not 0, is the column own leaves NULL for the row's
	// date where created_at is an integer, which readOwn fills from it
	// (messageDateText): the engine's date functions cost more than the
	// rest of the row's read.
	dateAt int
}

// byID reads the indexed rows among n ids.
func (q textRowQuery) byID(n int) string {
	return q.sel + ` WHERE ` + q.key + ` IN (` + placeholders(n) + `)`
}

// textRows are each kind's textRowQuery in dialect d: what its full-text
// index holds (driver.Dialect.IndexedBlocks; metadata values as
// driver.Dialect.MetadataText reads them).
func textRows(d driver.Dialect) map[search.ContentType]textRowQuery {
	blocks, key := d.IndexedBlocks()
	ownDate, dateAt := `''`, 0
	if _, ok := d.(driver.MessageDater); ok {
		// NULL where created_at is an integer (readOwn writes the date);
		// the engine's date of what a hand edit left otherwise.
		ownDate, dateAt = `CASE WHEN `+notInteger("m.created_at")+` THEN COALESCE(`+messageDate(d, "m.created_at")+`, '') END`, 3
	}
	var own string
	if ac, ok := d.(driver.ArchivalConversationer); ok {
		// Ordered in SQL as archival_links orders a conversation: a
		// place is what the engine holds (SQLite keeps a hand-edited
		// real or text as it is, and orders it among the numbers).
		conv := ac.ArchivalConversation("a")
		own = `SELECT a.id, a.agent, a.created_at, a.valid_to IS NOT NULL, a.content, a.tags_text,
			` + d.MetadataText("a.metadata_json") + `, ` + conv + `, CASE WHEN ` + notInteger("a.created_at") + ` THEN 1 END,
			a.tags_json, a.metadata_json
			FROM archival a WHERE a.agent = ? ORDER BY ` + conv + `, COALESCE(a.conversation_pos, a.id), a.id`
	}
	return map[search.ContentType]textRowQuery{
		search.Blocks: {sel: blocks, key: key},
		search.Archival: {sel: `SELECT a.id, a.agent, a.created_at, a.valid_to IS NOT NULL, a.content, a.tags_text,
			` + d.MetadataText("a.metadata_json") + `, ` + archivalContext + `,
			a.tags_json, a.metadata_json
			FROM archival a JOIN archival_links l ON l.id = a.id`, key: "a.id", own: own, neighbours: ownNeighbours, ctxAt: 3, stamped: true, bulkOwn: own != ""},
		search.Messages: {sel: `SELECT m.id, m.agent, m.created_at, ` + d.False() + `, m.content, ` + messageContext + `, ` + messageDate(d, "m.created_at") + `, '[]', ` +
			d.JSONObject(messageMeta) + ` FROM messages m ` + d.MessageNeighbours(), key: "m.id",
			// The batch and sequence number where sel has the neighbours'
			// text: one read of the owner's messages, no join per row.
			// A message whose batch is not text or whose sequence number
			// is not an integer (SQLite keeps what a hand edit leaves,
			// and its join steps and compares it as SQLite does) has no
			// batch here: its neighbours are read through the join.
			own: `SELECT m.id, m.agent, m.created_at, ` + d.False() + `, m.content, CASE WHEN ` + messagePlaced + ` THEN m.batch_id END, m.seq, ` +
				ownDate + `, '[]', ` +
				d.JSONObject(messageMeta) + ` FROM messages m WHERE m.agent = ? ORDER BY m.id`,
			neighbours: ownMessageNeighbours, ctxAt: 1, unplaced: true, dateAt: dateAt},
	}
}

// A message is indexed with the two messages before and the two after it
// in its batch as two weaker columns (SQLite migration 0033, PostgreSQL
// 0033): a turn alone is a poor document when the words that find it are
// in the turns around it. driver.Dialect.MessageNeighbours joins them as
// p2, p, n and n2; messageContext selects their text in the index's
// column order, each pair joined by a space where both exist.
const messageContext = `COALESCE(p2.content || ' ', '') || COALESCE(p.content, ''), COALESCE(n.content, '') || COALESCE(' ' || n2.content, '')`

// messagePlaced holds for a message whose neighbours ownMessageNeighbours
// finds as MessageNeighbours joins them: its batch is text and its
// sequence number an integer. On PostgreSQL the columns' types make it
// always true; on SQLite a hand edit may leave a real or text sequence
// number (the join steps it as a number: 1.5 is next to 2.5, '2x' next
// to 1) or a blob batch (equal to no text). No message it holds for is
// next to one it does not hold for.
const messagePlaced = `CAST(m.seq AS BIGINT) = m.seq AND CAST(m.batch_id AS TEXT) = m.batch_id`

// notInteger is true where col (a created_at) holds other than an
// integer, as a hand edit can leave it on SQLite (a real, text, a blob).
// The CAST's integer affinity keeps the comparison from converting
// either side.
func notInteger(col string) string {
	return col + ` <> CAST(` + col + ` AS BIGINT)`
}

// messageDateText is the date words both engines' MessageDate make of
// created (Unix nanoseconds), in Go: the UTC day without a leading zero,
// the month's English name and the four-digit year ("8 May 2023"); ""
// before 1970. An int64 of nanoseconds ends in 2262.
func messageDateText(created int64) string {
	if created < 0 {
		return ""
	}
	return time.Unix(created/1e9, 0).UTC().Format("2 January 2006")
}

// messageDate is d's MessageDate of col, or ” (no date words) for a
// dialect that does not index messages' dates.
func messageDate(d driver.Dialect, col string) string {
	if md, ok := d.(driver.MessageDater); ok {
		return md.MessageDate(col)
	}
	return `''`
}

// An archival entry is indexed with the two entries before it and the one
// after it in its conversation as two weaker columns (SQLite 0035,
// PostgreSQL 0036), for the reason messages are: the
// same owner's entries naming the same conversation, live ones around a
// live entry (SQLite migrations 0023, 0028 and 0031,
// PostgreSQL 0018, 0025 and 0028); an entry naming none, the entries
// naming none next to it written 1 second to 30 minutes from it
// (SQLite 0032, PostgreSQL 0029; archivalStreamGap). The view
// archival_links (l) gives each entry's neighbours under the rule the
// engines index by; archivalContext selects their text in the index's
// column order.
const archivalContext = `COALESCE((SELECT p2.content FROM archival p2 WHERE p2.id = (SELECT l2.before_id FROM archival_links l2 WHERE l2.id = l.before_id)) || ' ', '') ||
		COALESCE((SELECT p.content FROM archival p WHERE p.id = l.before_id), ''),
	COALESCE((SELECT n.content FROM archival n WHERE n.id = l.after_id), '')`

// textBodies are the kinds whose rows the cache holds whole (textPart.bodies).
var textBodies = map[search.ContentType]bool{search.Archival: true, search.Messages: true}

// DefaultTextCacheBytes is the text cache's default budget
// (IndexOptions.TextCacheBytes): about 70k entries of 20 to 60 words with
// their rows (see TestTextCacheBudgetEstimate); past that the rows go and
// the index alone serves up to about twice as many.
const DefaultTextCacheBytes = 64 << 20

func newTextCache(limit int64, rows map[search.ContentType]textRowQuery, iso sql.IsolationLevel, cl *changeLog, log *slog.Logger) *textCache {
	return &textCache{limit: limit, rows: rows, logIso: iso, log: cl, ld: newLoader("text cache", log)}
}

// errTextCacheLoading: the cache is not ready (being built, backing off
// after a failed catch-up, over its budget, or closed); the search ranks
// in SQL.
var errTextCacheLoading = errors.New("search: text cache loading")

// bytes is the estimated heap the parts hold; callers hold mu.
func (c *textCache) bytes() int64 {
	var n int64
	for _, p := range c.parts {
		n += p.bytes + p.bodyBytes
	}
	return n
}

// dropBodies lets the parts' bodies go, for good, to stay within the
// bound; callers hold mu (or own parts).
func (c *textCache) dropBodies(parts map[search.ContentType]*textPart) {
	for _, p := range parts {
		p.bodies, p.bodyBytes = nil, 0
	}
	if !c.noBodies {
		c.noBodies = true
		c.ld.log.Warn("search: text cache no longer holds rows to stay within its bound; pages are read from SQL",
			"cache", c.ld.name, "limit", c.limit)
	}
}

func (c *textCache) overBudget(n int64) error {
	return fmt.Errorf("%w: the text cache needs more than %d bytes (IndexOptions.TextCacheBytes %d); full-text search ranks in SQL",
		ErrCacheBudget, n, c.limit)
}

// sync brings the cache up to date with the log as it is now. A cache
// never loaded starts loading in the background and returns
// errTextCacheLoading at once (SQL answers until it is ready); a loaded
// one waits for the catch-up unless ctx ends first. Whatever goes wrong
// with the cache, the search falls back to SQL: sync returns
// errTextCacheLoading, and the cause is kept for WarmTextCache.
func (c *textCache) sync(ctx context.Context, db *sql.DB, stmt func(context.Context, string) (*sql.Stmt, error)) error {
	c.mu.RLock()
	loaded, partial, at := c.pos.valid(), c.partial, c.pos
	c.mu.RUnlock()
	if !loaded {
		// Building (or over its bound, closed, backing off: start does
		// nothing then); no need to read the log.
		c.start(db)
		return errTextCacheLoading
	}
	ver, versioned, current := c.fresh.check(ctx)
	if current {
		return nil // nothing committed since the log was last read up to date
	}
	c.logReads.Add(1)
	var cur logPos
	var floor int64
	var changed bool
	q, args := c.log.changedSince(at)
	var st *sql.Stmt
	if stmt != nil {
		var err error
		if st, err = stmt(ctx, q); err != nil {
			return fmt.Errorf("search: text cache: read log: %w", err)
		}
	}
	var row *sql.Row
	if st != nil {
		row = st.QueryRowContext(ctx, args...)
	} else {
		row = db.QueryRowContext(ctx, q, args...)
	}
	if err := scanBounds(row, &cur, &floor, &changed); err != nil {
		return fmt.Errorf("search: text cache: read log: %w", err)
	}
	if !changed && !at.trimmed(floor) {
		c.fresh.upToDate(ver, versioned)
		return nil // up to date (the common case: one indexed lookup)
	}
	if partial {
		return c.partialSync(ctx, db, cur, ver, versioned)
	}
	// At most two flights: one started after cur was read covers it.
	for {
		c.mu.RLock()
		pos := c.pos
		c.mu.RUnlock()
		if pos.valid() && pos.covers(cur) {
			c.fresh.upToDate(ver, versioned)
			return nil
		}
		f := c.start(db)
		if f == nil || !pos.valid() {
			return errTextCacheLoading
		}
		select {
		case <-f.done:
			if f.err != nil {
				return errTextCacheLoading
			}
		case <-ctx.Done():
			return errTextCacheLoading
		}
	}
}

// start returns the running catch-up, or starts one; nil when the cache
// is closed, over its bound, or backing off after a failure.
func (c *textCache) start(db *sql.DB) *loadFlight {
	return c.ld.start(func(ctx context.Context) error {
		if c.beforeCatchUp != nil {
			c.beforeCatchUp(ctx)
		}
		err := c.catchUp(ctx, db)
		if errors.Is(err, ErrCacheBudget) {
			c.mu.Lock()
			if !c.partial {
				c.parts, c.pos = nil, logPos{} // no more catch-ups will come
			}
			c.mu.Unlock()
		}
		return err
	})
}

// WarmTextCache builds the text cache (IndexOptions.TextCacheBytes) now, or
// catches it up, and waits until it is ready or ctx ends; searches rank in
// SQL until then. It returns why the cache is not ready when a build
// failed (searches keep ranking in SQL, and a new build is tried after a
// back-off) or the Index is closed. A cache that is partial (over its
// bound) reports ErrCacheBudget; without the dialect's driver.TextStats
// (PostgreSQL) it first waits for the passes that compute its statistics.
// It does nothing without a text cache.
func (x *Index) WarmTextCache(ctx context.Context) error {
	if x.text == nil {
		return nil
	}
	c := x.text
	for {
		err := c.sync(ctx, x.db, x.stmt)
		if err == nil && c.isPartial() {
			if c.stats == nil || c.vocab != nil {
				// The statistics of every content type, computed now.
				if err := c.warmStats(ctx, x.db); err != nil {
					return err
				}
			}
			return c.ld.wait(ctx) // why it is partial (ErrCacheBudget)
		}
		if !errors.Is(err, errTextCacheLoading) {
			return err
		}
		if err := c.ld.wait(ctx); err != nil {
			if (c.stats == nil || c.vocab != nil) && errors.Is(err, ErrCacheBudget) && c.isPartial() {
				continue // gone partial: compute its statistics
			}
			return fmt.Errorf("search: text cache: %w", err)
		}
	}
}

// textRow is one row read for the cache: its document and term
// frequencies, or gone (deleted, or no longer indexed).
type textRow struct {
	t     search.ContentType
	id    int64
	gone  bool
	doc   textDoc
	body  textBody
	terms rowTerms
}

// rowTerms is one row's analysis: its distinct terms (index: term ->
// position in freqs), each one's column-weighted count, and for a row
// whose body is kept and ASCII, the content's tokens as positions in
// freqs (textPart.add turns them into term ids).
type rowTerms struct {
	index map[string]int32
	freqs []float32
	toks  []uint32
}

// catchUp reads what changed since the cache's position (everything when
// it was never loaded, or fell behind the log's trimming) in one read
// transaction, and applies it.
func (c *textCache) catchUp(ctx context.Context, db *sql.DB) error {
	c.prepareByID(ctx)
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	c.mu.RLock()
	at := c.pos
	c.mu.RUnlock()
	if at.valid() && at.covers(cur) {
		return nil
	}
	if !at.valid() || at.trimmed(floor) {
		return c.reload(ctx, tx, cur)
	}
	where, args := c.log.since(at)
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT kind, id FROM search_text_log WHERE `+where, args...)
	if err != nil {
		return fmt.Errorf("search: text cache: read log: %w", err)
	}
	changed := map[search.ContentType][]int64{}
	n := 0
	for rows.Next() {
		var t search.ContentType
		var id int64
		if err := rows.Scan(&t, &id); err != nil {
			rows.Close()
			return fmt.Errorf("search: text cache: read log: %w", err)
		}
		changed[t] = append(changed[t], id)
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search: text cache: read log: %w", err)
	}
	if n > 10_000 {
		return c.reload(ctx, tx, cur)
	}
	var staged []textRow
	for _, t := range contentKinds {
		if staged, err = c.stage(ctx, tx, t, changed[t], &c.scratch, staged); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range staged {
		p := c.parts[r.t]
		p.remove(r.id)
		if !r.gone {
			p.add(r.doc, r.body, r.terms)
		}
	}
	for _, p := range c.parts {
		p.maybeCompact()
	}
	if n := c.bytes(); n > c.limit && !c.noBodies {
		c.dropBodies(c.parts)
	}
	if n := c.bytes(); n > c.limit {
		// Partial on every dialect: with driver.TextStats the engine's
		// statistics, else the cache's own (statsPass).
		c.rowCosts(c.parts)
		c.goPartial(cur)
		return c.partialOver(n)
	}
	c.pos = cur
	return nil
}

// stage reads kind t's rows ids (changed in the log) with sc's buffers
// and appends them to staged, those no longer there as gone.
func (c *textCache) stage(ctx context.Context, tx *sql.Tx, t search.ContentType, ids []int64, sc *textScratch, staged []textRow) ([]textRow, error) {
	found := map[int64]bool{}
	err := c.readByID(ctx, tx, t, ids, sc, func(r textRow) error {
		found[r.id] = true
		staged = append(staged, r)
		return nil
	})
	if err != nil {
		return staged, err
	}
	for _, id := range ids {
		if !found[id] {
			staged = append(staged, textRow{t: t, id: id, gone: true})
		}
	}
	return staged, nil
}

// readByID is read over kind t's rows ids, in chunks of 500. A chunk of
// at most textByIDPrepared ids (a catch-up after a few writes: the common
// case) runs a prepared statement when one is ready, its ids padded with
// the last to a power of two (a few statements per kind); parsing the
// statement, with its joins and views, cost more than reading the rows.
func (c *textCache) readByID(ctx context.Context, tx *sql.Tx, t search.ContentType, ids []int64, sc *textScratch, fn func(textRow) error) error {
	for chunk := range slices.Chunk(ids, 500) {
		n := len(chunk)
		var st *sql.Stmt
		if n <= textByIDPrepared {
			n = 1 << bits.Len(uint(n-1))
			st = c.byIDStmt(byIDKey{t, n})
		}
		args := make([]any, n)
		for i := range args {
			args[i] = chunk[min(i, len(chunk)-1)]
		}
		src, done := inTx(ctx, tx, st)
		err := c.read(ctx, src, t, c.rows[t].byID(n), args, sc, fn)
		done()
		if err != nil {
			return err
		}
	}
	return nil
}

// textByIDPrepared is the most ids readByID reads with a prepared
// statement.
const textByIDPrepared = 64

// byIDKey names a prepared read of count rows of kind t by id.
type byIDKey struct {
	t     search.ContentType
	count int
}

// byIDStmt returns the prepared read k, or nil (then wanted: see
// prepareByID).
func (c *textCache) byIDStmt(k byIDKey) *sql.Stmt {
	c.byIDMu.Lock()
	defer c.byIDMu.Unlock()
	st, ok := c.byID[k]
	if !ok && c.prep != nil {
		if c.byIDWant == nil {
			c.byIDWant = map[byIDKey]bool{}
		}
		c.byIDWant[k] = true
	}
	return st
}

// prepareByID prepares the reads by id a catch-up wanted. It runs before
// a catch-up opens its transaction, and not under c.mu: preparing takes
// a pooled connection, which over a pool of one the transaction, or a
// search waiting for c.mu with its snapshot open, would hold. A prepare
// that fails is wanted again by the next catch-up that reads as many.
func (c *textCache) prepareByID(ctx context.Context) {
	c.byIDMu.Lock()
	want := c.byIDWant
	c.byIDWant = nil
	c.byIDMu.Unlock()
	for k := range want {
		st, err := c.prep(ctx, c.rows[k.t].byID(k.count))
		if err != nil {
			continue // (a search's context ended): wanted again next time
		}
		c.byIDMu.Lock()
		if c.byID == nil {
			c.byID = map[byIDKey]*sql.Stmt{}
		}
		c.byID[k] = st // nil: no room in the Index's statements, read unprepared
		c.byIDMu.Unlock()
	}
}

// reload builds the whole cache from the current index contents and swaps
// it in.
func (c *textCache) reload(ctx context.Context, tx *sql.Tx, pos logPos) error {
	err := c.build(ctx, tx, pos, c.readBySel)
	if errors.Is(err, errOwnersMissed) {
		err = c.build(ctx, tx, pos, true)
	}
	return err
}

// build is reload, reading the rows of the kinds with their own query
// (textRowQuery.own) owner by owner (eachOwnRow) unless bySel.
func (c *textCache) build(ctx context.Context, tx *sql.Tx, pos logPos, bySel bool) error {
	if est, err := c.estimate(ctx, tx); err != nil {
		return err
	} else if (c.limit <= math.MaxInt64/textEstimateSlack && est > c.limit*textEstimateSlack) || c.forcePartial {
		// (A bound past MaxInt64/textEstimateSlack holds any estimate.)
		// Decided from counts and a sample, unread: the whole store cannot
		// be held.
		c.mu.Lock()
		defer c.mu.Unlock()
		c.goPartial(pos)
		return c.partialOver(est)
	}
	parts := map[search.ContentType]*textPart{}
	var idx, bodies int64 // bytes of the index, of the bodies
	for _, t := range contentKinds {
		p := newTextPart(t, textBodies[t] && !c.noBodies)
		p.jsonb = c.jsonbKeys
		parts[t] = p
		add := func(r textRow) error {
			before, beforeBodies := p.bytes, p.bodyBytes
			p.add(r.doc, r.body, r.terms)
			idx += p.bytes - before
			bodies += p.bodyBytes - beforeBodies
			if idx+bodies > c.limit && !c.noBodies {
				c.dropBodies(parts)
				bodies = 0
			}
			if idx+bodies > c.limit {
				c.rowCosts(parts)
				c.mu.Lock()
				defer c.mu.Unlock()
				c.goPartial(pos)
				return c.partialOver(idx + bodies)
			}
			return nil
		}
		var err error
		if q := c.rows[t]; q.bulkOwn && !bySel {
			err = c.eachOwnRow(ctx, tx, t, q, c.limit/textStatsShare, func(r *ownRow) error { return add(c.ownTextRow(t, r, &c.scratch)) })
		} else {
			err = c.read(ctx, tx, t, q.sel, nil, &c.scratch, add)
		}
		if err != nil {
			return err
		}
		p.regroup() // the rows came in table order: number them by owner
	}
	c.mu.Lock()
	c.parts, c.pos = parts, pos
	c.mu.Unlock()
	return nil
}

// ownTextRow analyzes row r of kind t, read by ownRows, as read analyzes
// the row the store-wide query gives: a context column held as pieces is
// the pieces joined with single spaces.
func (c *textCache) ownTextRow(t search.ContentType, r *ownRow, sc *textScratch) textRow {
	for i, pieces := range r.pieces {
		if i > 0 && pieces != nil {
			r.cols[i] = sql.NullString{String: strings.Join(pieces, " "), Valid: true}
		}
	}
	rt, length := c.analyzeRow(t, r.cols, sc)
	c.analyzed.Add(1)
	d := r.d
	d.length = int32(min(length, math.MaxInt32))
	return textRow{t: t, id: d.id, doc: d, body: r.body, terms: rt}
}

// textScratch is one analysis's reusable buffers: a flight's, a
// catch-up's or a partition load's, never two at once.
type textScratch struct {
	buf  []byte
	toks []uint32
	// part: the rows are for partitions, which always hold their bodies
	// (c.noBodies is the whole-store copy's, changed by its flight).
	part bool
	// textPart.addRow's: a row's terms (partition term ids) in the order
	// first met, their frequencies, and each term id's place among them
	// (-1: not in the row).
	order []int32
	freqs []float32
	at    []int32
	// seen, when not nil: the partition term ids of texts addRow analyzed
	// lately, by text. A conversation's rows hold each other's contents
	// as context (and rows share metadata values), so a load analyzes a
	// text once, not once per column it fills.
	seen map[string][]uint32
	ids  []uint32
}

// seenKeep bounds textScratch.seen: rows come in conversation order, so
// the texts met again are those of the last few rows.
const seenKeep = 256

// read analyzes the rows q returns with sc's buffers and passes them to
// fn; each row's frequency map is fn's to keep.
func (c *textCache) read(ctx context.Context, tx queryer, t search.ContentType, q string, args []any, sc *textScratch, fn func(textRow) error) error {
	return c.scan(ctx, tx, t, q, args, func(d textDoc, body textBody, cols []sql.NullString) error {
		rt, length := c.analyzeRow(t, cols, sc)
		c.analyzed.Add(1)
		d.length = int32(min(length, math.MaxInt32))
		return fn(textRow{t: t, id: d.id, doc: d, body: body, terms: rt})
	})
}

// scan passes the rows q returns to fn unanalyzed: each row's document
// (its length not yet known), body (for the kinds with bodies) and FTS
// columns in textWeights' order, valid until fn returns.
func (c *textCache) scan(ctx context.Context, tx queryer, t search.ContentType, q string, args []any, fn func(textDoc, textBody, []sql.NullString) error) error {
	weights := textWeights[t]
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("search: text cache: load %s: %w", kinds[t].name, err)
	}
	defer rows.Close()
	cols := make([]sql.NullString, len(weights))
	var d textDoc
	var tags, meta string
	dest := []any{&d.id, &d.owner, unixnanos.Scanner{N: &d.created}, &d.superseded}
	for i := range cols {
		dest = append(dest, &cols[i])
	}
	if textBodies[t] {
		dest = append(dest, &tags, &meta)
	}
	fault := c.scanFault.Load()
	for rows.Next() {
		d = textDoc{}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("search: text cache: load %s: %w", kinds[t].name, err)
		}
		if fault != nil {
			if err := (*fault)(d.id); err != nil {
				return fmt.Errorf("search: text cache: load %s: %w", kinds[t].name, err)
			}
		}
		var body textBody
		if textBodies[t] {
			body = textBody{content: cols[0].String, tags: internJSON(tags), meta: internJSON(meta)}
		}
		if err := fn(d, body, cols); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search: text cache: load %s: %w", kinds[t].name, err)
	}
	return nil
}

// analyzeRow analyzes one row's FTS columns of kind t (cols, in weights'
// order) with sc's buffers and returns its terms and how many tokens it
// has.
func (c *textCache) analyzeRow(t search.ContentType, cols []sql.NullString, sc *textScratch) (rowTerms, int) {
	weights := textWeights[t]
	n := 0
	for _, col := range cols {
		n += len(col.String)
	}
	// Sized for a term per 8 bytes (words and the spaces between them,
	// repeats counted): a row's map is then seldom grown and rehashed as
	// it fills, which took about a third of analyzing it.
	rt := rowTerms{index: make(map[string]int32, min(n/8, 1<<12))}
	length := 0
	bodies := textBodies[t] && (sc.part || !c.noBodies)
	for i, col := range cols {
		w := float32(weights[i])
		toks := i == 0 && bodies && isASCII(col.String)
		sc.toks = sc.toks[:0]
		sc.buf = analyzer.Analyze(col.String, sc.buf, func(term []byte) {
			n, ok := rt.index[string(term)] // no allocation for a lookup
			if !ok {
				n = int32(len(rt.freqs))
				rt.index[string(term)] = n
				rt.freqs = append(rt.freqs, 0)
			}
			rt.freqs[n] += w
			if toks {
				sc.toks = append(sc.toks, uint32(n))
			}
			length++
		})
		if toks {
			rt.toks = slices.Clone(sc.toks) // staged with the row; packed when added
			if rt.toks == nil {
				rt.toks = []uint32{}
			}
		}
	}
	// A flight's scratch lives as long as the cache, outside its budget:
	// a huge row's buffers are let go rather than held for good.
	if cap(sc.toks) > scratchKeepTokens {
		sc.toks = nil
	}
	if cap(sc.buf) > scratchKeepBytes {
		sc.buf = nil
	}
	return rt, length
}

// The most analyzer scratch a text cache keeps between rows (see
// analyzeRow): enough for rows of tens of thousands of words.
const (
	scratchKeepTokens = 64 << 10
	scratchKeepBytes  = 256 << 10
)

// internJSON returns the empty JSON values as constants: most rows have
// no tags or metadata, and the cache need not hold a copy of "[]" each.
func internJSON(s string) string {
	switch s {
	case "":
		return ""
	case "[]":
		return "[]"
	case "{}":
		return "{}"
	}
	return s
}

// newTextPart is an empty index of kind t, holding rows' bodies if bodies.
func newTextPart(t search.ContentType, bodies bool) *textPart {
	p := &textPart{weights: textWeights[t], t: t, slots: map[int64]int32{},
		post: map[string]int32{}, owners: map[string]*textOwner{}}
	if bodies {
		p.bodies = []textBody{}
	}
	return p
}

// add indexes one row (its previous version must have been removed).
func (p *textPart) add(d textDoc, body textBody, rt rowTerms) {
	p.indexTerms()
	slot, d := p.place(d, len(rt.freqs))
	var ids []uint32 // position in rt.freqs -> term id
	if rt.toks != nil && p.bodies != nil {
		ids = make([]uint32, len(rt.freqs))
	}
	for term, n := range rt.index {
		id, ok := p.termID(term)
		if !ok {
			id = p.newTerm(term)
		}
		p.lists[id] = append(p.lists[id], posting{slot: slot, freq: rt.freqs[n]})
		p.df[id]++
		p.terms[d.termsAt+n] = id
		if ids != nil {
			ids[n] = uint32(id)
		}
	}
	if p.bodies != nil {
		if ids != nil {
			for i, n := range rt.toks {
				rt.toks[i] = ids[n]
			}
			body.toks = packToks(rt.toks)
		}
		body.sess, body.sessOf = bodySession(p.t, body.meta, p.jsonb)
		p.bodies = append(p.bodies, body)
		p.bodyBytes += body.cost()
	}
}

// addRow analyzes one row's FTS columns (cols, in p.weights' order) with
// sc's buffers and indexes it as add indexes analyzeRow's terms, without
// a map of the row's own terms: each token is looked up once, in p.
// pieces, when not nil, gives a column other than the first as the texts
// it joins with single spaces (a row's neighbours' contents, as
// ownNeighbours finds them): the tokenizer never joins tokens across a
// space, so the column's terms are its pieces' terms in turn, and each
// piece is analyzed once however many rows hold it (sc.seen).
func (p *textPart) addRow(d textDoc, body textBody, cols []sql.NullString, pieces [][]string, sc *textScratch) {
	p.indexTerms()
	sc.order, sc.freqs = sc.order[:0], sc.freqs[:0]
	length := 0
	for i, col := range cols {
		w := float32(p.weights[i])
		toks := i == 0 && p.bodies != nil && isASCII(col.String)
		sc.toks = sc.toks[:0]
		count := func(id int32) {
			for int(id) >= len(sc.at) {
				sc.at = append(sc.at, -1)
			}
			n := sc.at[id]
			if n < 0 {
				n = int32(len(sc.order))
				sc.at[id] = n
				sc.order = append(sc.order, id)
				sc.freqs = append(sc.freqs, 0)
			}
			sc.freqs[n] += w
			length++
		}
		if i > 0 && i < len(pieces) && pieces[i] != nil {
			for _, text := range pieces[i] {
				p.analyzeText(text, false, count, sc)
			}
			continue
		}
		p.analyzeText(col.String, toks, count, sc)
		if toks {
			body.toks = packToks(sc.toks)
		}
	}
	d.length = int32(min(length, math.MaxInt32))
	slot, d := p.place(d, len(sc.order))
	for n, id := range sc.order {
		p.lists[id] = append(p.lists[id], posting{slot: slot, freq: sc.freqs[n]})
		p.df[id]++
		p.terms[d.termsAt+int32(n)] = id
		sc.at[id] = -1
	}
	if p.bodies != nil {
		body.sess, body.sessOf = bodySession(p.t, body.meta, p.jsonb)
		p.bodies = append(p.bodies, body)
		p.bodyBytes += body.cost()
	}
	if cap(sc.toks) > scratchKeepTokens {
		sc.toks = nil
	}
	if cap(sc.buf) > scratchKeepBytes {
		sc.buf = nil
	}
}

// analyzeText passes each term of text to count as a partition term id,
// adding terms p does not hold, and appends them to sc.toks when toks is
// set. A non-empty text met lately (sc.seen) is not analyzed again.
func (p *textPart) analyzeText(text string, toks bool, count func(int32), sc *textScratch) {
	p.indexTerms() // it adds terms
	if ids, ok := sc.seen[text]; ok && text != "" {
		for _, id := range ids {
			count(int32(id))
		}
		if toks {
			sc.toks = append(sc.toks, ids...)
		}
		return
	}
	remember := sc.seen != nil && text != ""
	if remember {
		sc.ids = sc.ids[:0]
	}
	sc.buf = analyzer.Analyze(text, sc.buf, func(term []byte) {
		id, ok := p.post[string(term)] // no allocation for a lookup
		if !ok {
			id = p.newTerm(string(term))
		}
		count(id)
		if toks {
			sc.toks = append(sc.toks, uint32(id))
		}
		if remember {
			sc.ids = append(sc.ids, uint32(id))
		}
	})
	if remember {
		if len(sc.seen) >= seenKeep {
			clear(sc.seen)
		}
		sc.seen[text] = slices.Clone(sc.ids)
	}
}

// place appends d's document with room for its n terms in p.terms (from
// the returned d.termsAt) and returns its slot.
func (p *textPart) place(d textDoc, n int) (int32, textDoc) {
	d.termsAt, d.nTerms = int32(len(p.terms)), int32(n)
	p.terms = slices.Grow(p.terms, n)[:len(p.terms)+n]
	p.bytes += textCostPosting * int64(n)
	return p.appendDoc(d)
}

// appendDoc appends d's document, its terms' place in p.terms set by the
// caller, and returns its slot.
func (p *textPart) appendDoc(d textDoc) (int32, textDoc) {
	o, ok := p.owners[d.owner]
	if !ok {
		o = &textOwner{name: d.owner}
		p.owners[d.owner] = o
		p.bytes += textCostOwner + int64(len(d.owner))
	}
	d.owner = o.name
	slot := int32(len(p.docs))
	p.docs = append(p.docs, d)
	p.slots[d.id] = slot
	p.live++
	o.live++
	if r := len(o.runs); r > 0 && o.runs[r-1].hi == slot {
		o.runs[r-1].hi++
	} else {
		o.runs = append(o.runs, slotRun{slot, slot + 1})
		p.runs++
		p.bytes += textCostRun
	}
	p.tokens += int64(d.length)
	p.bytes += textCostDoc
	return slot, d
}

// termIDs returns the ids of query terms' stems as the snippeter stems
// them (noTerm for a term no row holds).
func (p *textPart) termIDs(terms []string) []uint32 {
	ids := make([]uint32, len(terms))
	for i, t := range terms {
		ids[i] = noTerm
		if id, ok := p.termID(queryStem(t)); ok {
			ids[i] = uint32(id)
		}
	}
	return ids
}

// newTerm numbers a term the part does not hold yet and charges it.
func (p *textPart) newTerm(term string) int32 {
	p.indexTerms()
	p.bytes += textCostTerm + textCostName + int64(len(term))
	var id int32
	if n := len(p.free); n > 0 {
		id, p.free = p.free[n-1], p.free[:n-1]
	} else {
		id = int32(len(p.lists))
		p.lists = append(p.lists, nil)
		p.df = append(p.df, 0)
		p.names = append(p.names, "")
	}
	p.post[term] = id
	p.names[id] = term
	return id
}

// termID is term's id, if p holds it.
func (p *textPart) termID(term string) (int32, bool) {
	if p.post != nil {
		id, ok := p.post[term]
		return id, ok
	}
	// A part without the map is packed (decoded, unchanged since): its
	// names ascend (decodePart checks it).
	k := p.packed
	if k == nil {
		return 0, false
	}
	n := len(k.nameEnd)
	i := sort.Search(n, func(h int) bool { return k.name(int32(h)) >= term })
	return int32(i), i < n && k.name(int32(i)) == term
}

// termCount is how many term ids p has handed out (free ones included).
func (p *textPart) termCount() int {
	if k := p.packed; k != nil {
		return len(k.nameEnd)
	}
	return len(p.names)
}

// unpackCost is what p's charge grows by at its first change, when its
// terms unpack (indexTerms); 0 for a part not packed.
func (p *textPart) unpackCost() int64 {
	if k := p.packed; k != nil {
		return int64(len(k.nameEnd))*(textCostTerm+textCostName-textCostPacked) +
			k.entries*textCostPosting - p.packedPostingsCost()
	}
	return 0
}

// name is term id's term ("" for a free id).
func (p *textPart) name(id int32) string {
	if k := p.packed; k != nil {
		return k.name(id)
	}
	return p.names[id]
}

// list is term id's postings, in slot order. A packed part's is decoded
// from its stored bytes at each call, into a slice of its own with no
// room past it (see packedTerms).
func (p *textPart) list(id int32) []posting {
	if k := p.packed; k != nil {
		return k.list(id, len(p.docs))
	}
	return p.lists[id]
}

// packedTerms is a decoded part's vocabulary as decodePart leaves it:
// each term's name a window of one string, found by its end, and each
// term's postings the bytes they were stored as, a window of one slice,
// decoded when read. A first search reads a few terms' postings: decoding
// every posting, and placing each in its row's list of terms, was most of
// a stored part's load. Nothing is written when a list is read, so
// searches read a packed part side by side as they do an unpacked one; a
// list read often costs its decoding each time, a few nanoseconds a
// posting, until the part's first change unpacks it (indexTerms). It
// holds no pointer per term: decoding a part stores none (a first search
// loads a part while the collector marks much of the time, and each
// pointer stored then goes through its write barrier), and the collector
// has none to scan while the part stays unchanged.
//
// A stored list is checked when decoded (its count, its rows ascending
// within the part's, its frequencies positive and finite, its bytes
// exactly used), not at the load: one that fails reads as empty. Only
// bytes encodePart did not write fail (the load checks the part's
// checksum), and a list read so ranks its term as matching no row, where
// checking every list at the load would have cost what reading lazily
// saves. The rows' term ids (textPart.terms) are filled only when a
// remove or change needs them (fillTerms): until then p.terms is nil.
type packedTerms struct {
	names   string
	nameEnd []uint32 // term id -> the end of its name in names
	raw     []byte   // the postings, term by term, as stored
	rawEnd  []uint32 // term id -> the end of its postings in raw
	count   []int32  // term id -> its postings in raw (its df as decoded: a remove lowers df)
	entries int64    // postings in raw (the sum of count)
}

func (k *packedTerms) name(id int32) string {
	lo := uint32(0)
	if id > 0 {
		lo = k.nameEnd[id-1]
	}
	return k.names[lo:k.nameEnd[id]]
}

// postings is term id's stored postings.
func (k *packedTerms) postings(id int32) []byte {
	lo := uint32(0)
	if id > 0 {
		lo = k.rawEnd[id-1]
	}
	return k.raw[lo:k.rawEnd[id]]
}

// list decodes term id's postings, of rows below ndocs (the removed ones
// included, as in an unpacked part's lists); nil when they do not decode
// so.
func (k *packedTerms) list(id int32, ndocs int) []posting {
	var buf []posting
	return k.listInto(id, ndocs, &buf)
}

// listInto is list into *buf, grown as needed: for a reader done with
// the list before its next.
func (k *packedTerms) listInto(id int32, ndocs int, buf *[]posting) []posting {
	c := int(k.count[id])
	if cap(*buf) < c {
		*buf = make([]posting, c)
	}
	out := (*buf)[:c:c]
	if !decodePostings(k.postings(id), out, ndocs) {
		return nil
	}
	return out
}

// scanList is list(id) for a reader done with it before its next read:
// a packed part's postings decoded into *buf, grown as needed, so that a
// search of many terms reuses one buffer.
func (p *textPart) scanList(id int32, buf *[]posting) []posting {
	if k := p.packed; k != nil {
		return k.listInto(id, len(p.docs), buf)
	}
	return p.lists[id]
}

// packedPostingsCost is what a packed part's postings are charged: their
// bytes, and the rows' term ids once filled.
func (p *textPart) packedPostingsCost() int64 {
	k := p.packed
	c := int64(len(k.raw))
	if p.terms != nil {
		c += 4 * k.entries
	}
	return c
}

// decodePostings decodes len(out) postings from b into out (encodePart's
// encoding: each row's distance from the one before, then its frequency,
// appendFreq), checking that the rows ascend below ndocs, that each
// frequency is positive and finite, and that b holds those and nothing
// more.
func decodePostings(b []byte, out []posting, ndocs int) bool {
	slot := int64(-1)
	for j := range out {
		var delta uint64
		if len(b) > 0 && b[0] < 0x80 { // most are one byte
			delta, b = uint64(b[0]), b[1:]
		} else {
			v, n := binary.Uvarint(b)
			if n <= 0 {
				return false
			}
			delta, b = v, b[n:]
		}
		if delta == 0 || delta >= uint64(int64(ndocs)-slot) {
			return false // not ascending, or past the last row
		}
		slot += int64(delta)
		var f float32
		var ok bool
		if f, b, ok = readFreq(b); !ok {
			return false
		}
		out[j] = posting{slot: int32(slot), freq: f}
	}
	return len(b) == 0
}

// fillTerms fills p.terms, each row's term ids, from a packed part's
// postings, for a remove (which takes the row's terms from df) or a
// change; the part stays packed.
func (p *textPart) fillTerms() {
	if p.packed == nil || p.terms != nil {
		return
	}
	p.setTermsRoom()
	p.walkLists(nil, true, func(int32, []posting, bool) {})
}

// setTermsRoom makes room for the rows' term ids, which a walk of the
// lists then fills, and charges it.
func (p *textPart) setTermsRoom() {
	k := p.packed
	p.terms = make([]int32, k.entries)
	p.bytes += 4 * k.entries
}

// walkLists decodes a packed part's postings term by term, into slab's
// windows (nil: into one buffer, reused) and calls each with the term's
// list and whether it is whole. A posting past its row's count of terms
// is left out of the list, and with setTerms a row with fewer has its
// count lowered (neither happens to a part encodePart wrote: every list
// is whole); with setTerms each posting kept puts its term id in its
// row's place in p.terms, which then names no term more often than its
// df counts, so a remove leaves none below zero. A list that does not
// decode is empty and not whole.
func (p *textPart) walkLists(slab []posting, setTerms bool, each func(id int32, list []posting, whole bool)) {
	k := p.packed
	fill := make([]int32, len(p.docs))
	var buf []posting
	for id := range int32(len(k.nameEnd)) {
		into := &buf
		if slab != nil {
			w := slab[:k.count[id]:k.count[id]] // (listInto decodes into it, as it is big enough)
			slab, into = slab[k.count[id]:], &w
		}
		list := k.listInto(id, len(p.docs), into)
		ok := list != nil // (no stored list is empty)
		kept := list[:0]
		for _, ps := range list {
			d := &p.docs[ps.slot]
			if fill[ps.slot] == d.nTerms {
				continue
			}
			if setTerms {
				p.terms[d.termsAt+fill[ps.slot]] = id
			}
			fill[ps.slot]++
			kept = append(kept, ps)
		}
		each(id, kept, ok && len(kept) == len(list))
	}
	if setTerms {
		for slot := range p.docs {
			p.docs[slot].nTerms = fill[slot]
		}
	}
}

// indexTerms readies p for a change: a decoded part's terms are unpacked
// into names and lists (its postings decoded once, the rows' term ids
// filled in the same walk unless a remove filled them), and post, the
// map of term ids, is built. A decoded part has neither until its first
// change (its names ascend, one per id, and termID finds a term by
// binary search): building them was most of a stored part's decoding,
// and a first search needs a few terms.
func (p *textPart) indexTerms() {
	if p.post != nil {
		return
	}
	if k := p.packed; k != nil {
		n := len(k.nameEnd)
		p.names, p.lists = make([]string, n), make([][]posting, n)
		setTerms := p.terms == nil
		if setTerms {
			p.setTermsRoom()
		}
		p.walkLists(make([]posting, k.entries), setTerms, func(id int32, list []posting, whole bool) {
			p.names[id] = k.name(id)
			if !whole {
				// df counts what stays (the live rows of the list).
				live := int32(0)
				for _, ps := range list {
					if !p.docs[ps.slot].dead {
						live++
					}
				}
				p.df[id], list = live, list[:len(list):len(list)]
			}
			p.lists[id] = list
		})
		// Charged from here on as a part built from rows is: whoever
		// changes an installed part recounts it after.
		p.bytes += p.unpackCost()
		p.packed = nil
	}
	p.post = make(map[string]int32, len(p.names))
	for id, name := range p.names {
		if name != "" {
			p.post[name] = int32(id)
		}
	}
}

// holds reports whether row id is live in p.
func (p *textPart) holds(id int64) bool {
	_, ok := p.slots[id]
	return ok
}

func (p *textPart) remove(id int64) {
	slot, ok := p.slots[id]
	if !ok {
		return
	}
	delete(p.slots, id)
	p.fillTerms()
	d := &p.docs[slot]
	d.dead = true
	for _, t := range p.terms[d.termsAt : d.termsAt+d.nTerms] {
		p.df[t]--
	}
	if p.bodies != nil {
		p.bodyBytes -= p.bodies[slot].cost() - textCostBody
		p.bodies[slot] = textBody{} // its strings can go now
	}
	p.live--
	p.owners[d.owner].live--
	p.tokens -= int64(d.length)
	p.dead++
}

// maybeCompact drops dead slots once they outnumber live ones, and
// regroups the slots by owner once rows added since the last regrouping
// have scattered the owners' runs (each owner's queries walk its runs).
func (p *textPart) maybeCompact() {
	if (p.dead < 1024 || p.dead < p.live) && p.runs <= len(p.owners)+p.live/8+1024 {
		return
	}
	p.regroup()
}

// regroup renumbers the live slots, owner by owner (in slot order within
// an owner), drops the dead ones, the terms no live row holds and the
// owners without rows, and recomputes the estimate.
func (p *textPart) regroup() {
	p.indexTerms()
	order := make([]int32, 0, p.live)
	for i := range p.docs {
		if !p.docs[i].dead {
			order = append(order, int32(i))
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		return cmp.Compare(p.docs[a].owner, p.docs[b].owner)
	})
	remap := make([]int32, len(p.docs))
	for i := range remap {
		remap[i] = -1
	}
	docs := make([]textDoc, 0, p.live)
	terms := make([]int32, 0, len(p.terms))
	var bodies []textBody
	if p.bodies != nil {
		bodies = make([]textBody, 0, p.live)
	}
	p.bytes, p.bodyBytes = textCostDoc*int64(p.live), 0
	for name, o := range p.owners {
		if o.live == 0 {
			delete(p.owners, name)
			continue
		}
		o.runs = o.runs[:0]
	}
	p.runs = 0
	for _, old := range order {
		d := p.docs[old]
		slot := int32(len(docs))
		remap[old] = slot
		p.slots[d.id] = slot
		at := int32(len(terms))
		terms = append(terms, p.terms[d.termsAt:d.termsAt+d.nTerms]...)
		d.termsAt = at
		docs = append(docs, d)
		o := p.owners[d.owner]
		if n := len(o.runs); n > 0 {
			o.runs[n-1].hi = slot + 1
		} else {
			o.runs = append(o.runs, slotRun{slot, slot + 1})
			p.runs++
		}
		if bodies != nil {
			bodies = append(bodies, p.bodies[old])
			p.bodyBytes += p.bodies[old].cost()
		}
	}
	for name, o := range p.owners {
		o.runs = slices.Clip(o.runs)
		p.bytes += textCostOwner + int64(len(name)) + textCostRun
	}
	p.bodies = bodies
	p.indexTerms()
	for term, id := range p.post {
		ps := p.lists[id]
		kept := ps[:0]
		for _, x := range ps {
			if s := remap[x.slot]; s >= 0 {
				kept = append(kept, posting{slot: s, freq: x.freq})
			}
		}
		if len(kept) == 0 {
			delete(p.post, term)
			p.lists[id], p.names[id] = nil, ""
			p.free = append(p.free, id)
		} else {
			slices.SortFunc(kept, func(a, b posting) int { return cmp.Compare(a.slot, b.slot) })
			p.lists[id] = slices.Clip(kept)
			p.bytes += textCostTerm + textCostName + int64(len(term)) + textCostPosting*int64(len(kept))
		}
	}
	p.docs, p.terms, p.dead = docs, slices.Clip(terms), 0
}

// textHit is one ranked row: score is FTS5's bm25() value (negative, lower
// is better).
type textHit struct {
	id    int64
	score float64
}

// textFilter is a search's filters over the text cache's copy of a row
// (textKeep): keep decides, and the scope says which owners' rows can
// pass at all (every owner's with all; else agent's, and those of the
// owners of the shared blocks), so a search reads only their postings.
type textFilter struct {
	keep   func(*textDoc) bool
	all    bool
	agent  string
	shared map[int64]bool // block ids shared with agent
}

// runs returns the slot runs of the owners whose rows f can keep, in slot
// order; callers hold c.mu and handle f.all themselves.
func (p *textPart) scopeRuns(f textFilter) []slotRun {
	var runs []slotRun
	seen := map[*textOwner]bool{}
	visit := func(o *textOwner) {
		if o != nil && !seen[o] {
			seen[o] = true
			runs = append(runs, o.runs...)
		}
	}
	visit(p.owners[f.agent])
	for id := range f.shared {
		if slot, ok := p.slots[id]; ok {
			visit(p.owners[p.docs[slot].owner])
		}
	}
	slices.SortFunc(runs, func(a, b slotRun) int { return cmp.Compare(a.lo, b.lo) })
	return runs
}

// addBM25 adds to scores the bm25 term score (fts5Bm25Function's
// expression: the phrase's idf, the average row length avgdl) of each
// live row in ps, and appends its slot to touched when it had none.
func (p *textPart) addBM25(ps []posting, idf, avgdl float64, scores []float64, touched []int32) []int32 {
	for _, x := range ps {
		d := &p.docs[x.slot]
		if d.dead {
			continue
		}
		if scores[x.slot] == 0 {
			touched = append(touched, x.slot)
		}
		f := float64(x.freq)
		D := float64(d.length)
		scores[x.slot] += idf * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-bm25B+bm25B*D/avgdl)))
	}
	return touched
}

// search ranks kind t's rows matching any of terms (analyzed query terms,
// each one FTS5 phrase) that f keeps, by bm25 then id, and returns the
// first limit. It must run after sync, and computes what
//
//	SELECT rowid, bm25(fts, weights...) FROM fts WHERE fts MATCH '"t1" OR "t2" ...'
//	ORDER BY 2, rowid LIMIT limit
//
// returns, filtered by f: the statistics are the whole part's, but only
// the postings of the owners in f's scope are scored.
func (c *textCache) search(t search.ContentType, terms []string, f textFilter, limit int, pull float64) []textHit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.parts[t]
	if p == nil || p.live == 0 || limit <= 0 {
		return nil
	}
	var runs []slotRun
	if !f.all {
		if runs = p.scopeRuns(f); len(runs) == 0 {
			return nil
		}
	}
	keep := f.keep
	sb, _ := c.pool.Get().(*scoreBuf)
	if sb == nil {
		sb = &scoreBuf{}
	}
	if cap(sb.scores) < len(p.docs) {
		sb.scores = make([]float64, len(p.docs))
	}
	scores := sb.scores[:len(p.docs)]
	touched := sb.touched[:0]
	nRow := int64(p.live)
	avgdl := float64(p.tokens) / float64(nRow)
	for _, term := range terms {
		id, ok := p.termID(term)
		if !ok {
			continue
		}
		nHit := int64(p.df[id])
		if nHit == 0 {
			continue
		}
		// The same expressions, in the same order, as fts5Bm25Function. The
		// scores agree with FTS5's up to the last bit of log(), which is the
		// C library's there (musl's under modernc, glibc's under cgo).
		idf := bm25IDF(nRow, nHit)
		ps := p.list(id)
		if f.all {
			touched = p.addBM25(ps, idf, avgdl, scores, touched)
			continue
		}
		for _, r := range runs {
			// The list is in slot order: the run's postings are the
			// stretch from the first slot at or after r.lo to r.hi.
			i, _ := slices.BinarySearchFunc(ps, r.lo, func(x posting, lo int32) int { return cmp.Compare(x.slot, lo) })
			j := i
			for j < len(ps) && ps[j].slot < r.hi {
				j++
			}
			touched = p.addBM25(ps[i:j], idf, avgdl, scores, touched)
			ps = ps[j:]
		}
	}
	hits := make([]textHit, 0, min(len(touched), limit+1))
	worst := func() textHit { return hits[len(hits)-1] }
	better := func(a, b textHit) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	for _, slot := range touched {
		d := &p.docs[slot]
		h := textHit{id: d.id, score: -scores[slot]}
		if pull == 0 {
			scores[slot] = 0
		}
		if len(hits) == limit && better(h, worst()) >= 0 {
			continue
		}
		if !keep(d) {
			continue
		}
		// Insertion into the sorted top list: limit is small next to the
		// number of matches.
		i, _ := slices.BinarySearchFunc(hits, h, better)
		if len(hits) < limit {
			hits = slices.Insert(hits, i, h)
		} else {
			copy(hits[i+1:], hits[i:len(hits)-1])
			hits[i] = h
		}
	}
	if pull > 0 {
		keyOf := func(id int64) (string, bool, bool) { return p.session(p.slots[id], f.all) }
		if floor, ok := cacheFloor(hits, limit, pull, keyOf); ok {
			n := len(hits)
			for _, slot := range touched {
				d := &p.docs[slot]
				if h := (textHit{id: d.id, score: -scores[slot]}); sessionExtra(hits[:n], h, floor) && keep(d) {
					hits = append(hits, h)
				}
			}
			hits = sessionSort(hits, limit)
		}
		for _, slot := range touched {
			scores[slot] = 0
		}
	}
	sb.touched = touched[:0]
	c.pool.Put(sb)
	return hits
}

// cachedFTS answers a full-text leg from the text cache, ranked in process,
// as stubs: the rows that make the page are fetched by Index.fill, which
// checks the filters again in SQL. ok is false when the leg must run in
// SQL instead: a query term FTS5 would read as a phrase of several tokens.
func (x *Index) cachedFTS(ctx context.Context, k *kind, terms []string, scope search.Scope, s *settings, limit int, pull float64) ([]*hit, bool, error) {
	phrases, ok := cachePhrases(terms)
	if !ok {
		return nil, false, nil
	}
	f, ok, err := x.textKeep(ctx, k, scope, s)
	if !ok || err != nil {
		return nil, false, err
	}
	var hits []textHit
	if x.text.isPartial() {
		if hits, ok, err = x.partialFTS(ctx, k, terms, phrases, f, limit, pull); !ok || err != nil {
			return nil, false, err
		}
	} else {
		hits = x.text.search(k.t, phrases, f, limit, pull)
	}
	out := make([]*hit, len(hits))
	for i, h := range hits {
		out[i] = &hit{Result: search.Result{Type: k.t, ID: h.id,
			Source: search.ScoreSource{FTSRank: i + 1, BM25: h.score}}, stub: true}
	}
	x.textAnswers.Add(1)
	return out, true, nil
}

// textKeep returns the search's filters (scope, superseded rows, time
// window) as a check of the text cache's copy of a row, with the cache
// caught up to the log (once for a ranking's legs and once for its page:
// settings.textSynced). ok is false when the cache is still loading (rank
// and filter in SQL meanwhile). Tag and metadata filters are not in the
// cache: callers check for them first.
func (x *Index) textKeep(ctx context.Context, k *kind, scope search.Scope, s *settings) (f textFilter, ok bool, err error) {
	if s.textSynced == nil || !s.textSynced.Load() {
		if err := x.text.sync(ctx, x.db, x.stmt); errors.Is(err, errTextCacheLoading) {
			return f, false, nil
		} else if err != nil {
			return f, false, err
		}
		if s.textSynced != nil {
			s.textSynced.Store(true)
		}
	}
	var shared map[int64]bool
	if k.t == search.Blocks && !scope.All {
		if shared, err = x.sharedWith(ctx, scope.Agent); err != nil {
			return f, false, err
		}
	}
	w := unixnanos.NewWindow(s.Since, s.Until)
	keep := func(d *textDoc) bool {
		if !scope.All && d.owner != scope.Agent && !shared[d.id] {
			return false
		}
		if d.superseded && !s.IncludeSuperseded {
			return false
		}
		return w.Keeps(d.created)
	}
	return textFilter{keep: keep, all: scope.All, agent: scope.Agent, shared: shared}, true, nil
}

// cachedRows returns the rows of kind k with the given ids that pass the
// search's filters, from the text cache's copy of them (caught up to the
// log first), in no particular order: whole, or stubs holding only Type
// and ID when idsOnly (the vector leg's filter check, without a query).
// missing are the ids the cache does not hold (written after its
// catch-up, or gone), for SQL to look at. ok is false when the cache
// cannot answer: no text cache, tag or metadata filters, still loading,
// or whole rows of a kind it does not hold them for (textBodies, or
// dropped for the bound).
func (x *Index) cachedRows(ctx context.Context, k *kind, ids []int64, scope search.Scope, s *settings, terms []string, idsOnly bool) (rows []*hit, missing []int64, ok bool, err error) {
	if x.text == nil || (!idsOnly && !textBodies[k.t]) || s.hasTagFilter() || len(s.Metadata) > 0 {
		return nil, nil, false, nil
	}
	f, ok, err := x.textKeep(ctx, k, scope, s)
	if !ok || err != nil {
		return nil, nil, false, err
	}
	keep := f.keep
	c := x.text
	var owners []string
	if c.isPartial() {
		if scope.All {
			return nil, nil, false, nil
		}
		if owners, err = x.scopeOwners(ctx, k.t, scope.Agent); err != nil {
			return nil, nil, false, err
		}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.parts[k.t]
	var held []*textPart // a partial cache's partitions of the scope's owners
	if c.partial {
		for _, o := range owners {
			if op := c.owned[k.t][o]; op != nil {
				held = append(held, op)
			}
		}
	} else if p == nil || (!idsOnly && p.bodies == nil) {
		return nil, nil, false, nil
	}
	rows = make([]*hit, 0, len(ids))
	var termIDs []uint32
	for _, id := range ids {
		slot, in := int32(0), false
		if c.partial {
			// Each partition numbers its terms: the query's ids are its own.
			p, termIDs = nil, nil
			for _, op := range held {
				if slot, in = op.slots[id]; in {
					p = op
					break
				}
			}
		} else {
			slot, in = p.slots[id]
		}
		if !in {
			missing = append(missing, id)
			continue
		}
		d := &p.docs[slot]
		switch {
		case !keep(d):
		case idsOnly:
			rows = append(rows, &hit{Result: search.Result{Type: k.t, ID: id}, stub: true})
		default:
			b := p.bodies[slot]
			r := &hit{Result: search.Result{Type: k.t, ID: id, Owner: d.owner, Content: b.content,
				Created: time.Unix(0, d.created).UTC(), Superseded: d.superseded}}
			if b.toks != nil && len(terms) > 0 {
				// The query's term ids, read under the same lock as the
				// row's: the numbering is the one its toks use.
				if termIDs == nil {
					termIDs = p.termIDs(terms)
				}
				r.toks, r.termIDs = b.toks, termIDs
			}
			decodeJSONColumns(r, b.tags, b.meta)
			rows = append(rows, r)
		}
	}
	if idsOnly {
		x.textFilters.Add(1)
	} else {
		x.textRows.Add(1)
	}
	return rows, missing, true, nil
}

// sharedWith returns the ids of the blocks shared with agent.
func (x *Index) sharedWith(ctx context.Context, agent string) (map[int64]bool, error) {
	rows, err := x.query(ctx, `SELECT block_id FROM shares WHERE agent = ?`, agent)
	if err != nil {
		return nil, fmt.Errorf("search: read shares of %q: %w", agent, err)
	}
	defer rows.Close()
	m := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("search: read shares of %q: %w", agent, err)
		}
		m[id] = true
	}
	return m, rows.Err()
}
