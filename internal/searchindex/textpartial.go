package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// textEstimateSlack: a store whose estimated copy (estimate) exceeds the
// bound by more than this factor goes partial unread; below it the build
// runs and, should the estimate have been low, goes partial when it
// crosses the bound (having analyzed at most about the bound's worth).
const textEstimateSlack = 2

// textStatsShare is the share of the bound the cached document
// frequencies may take before they are let go (they are re-read); a
// content type's complete ones (a dialect without driver.TextStats) are never
// computed past it: that type then ranks in SQL.
const textStatsShare = 8

// textCatchUpMax is how many changed rows a catch-up of a partial cache
// reads under its lock; past it the kinds they are of start over.
const textCatchUpMax = 10_000

// partialState is a textCache's partial mode, guarded by textCache.mu.
type partialState struct {
	stats   driver.TextStats      // the dialect's; nil: the cache's own (statsPass)
	vocab   driver.TextVocabulary // the dialect's, with stats; nil: none
	partial bool
	// owned[kind][owner] is an owner's partition: a textPart holding only
	// that owner's rows, whose own df and totals go unused (ranking reads
	// gstats).
	owned map[search.ContentType]map[string]*textPart
	lru   lruQueue[*textPart] // eviction order (evict)
	held  int64               // bytes of the partitions
	// evictions counts the partitions evict dropped (prewarming stops
	// at the first).
	evictions atomic.Int64
	clock     atomic.Int64
	gstats    map[search.ContentType]*textStats
	// rowCost is the estimated bytes a row takes in a partition, for
	// refusing an owner whose rows alone would exceed the bound unread;
	// tooBig remembers the refused ones until their kind changes;
	// ownCost the bytes per row of those refused after their rows were
	// read (longer than rowCost has it), kept across changes so that the
	// next try refuses them from their row count again, unread.
	rowCost map[search.ContentType]int64
	tooBig  map[search.ContentType]map[string]bool
	ownCost map[search.ContentType]map[string]int64
	// scopeBig remembers, until their kind changes, the agents whose
	// scope (their own and their sharers' partitions) did not fit the
	// bound together: loading it evicts its own partitions, so every
	// search would read them all again only to rank in SQL.
	scopeBig map[search.ContentType]map[string]bool
	// loads are the partition loads in flight, guarded by loadMu (not
	// c.mu: a load runs without c.mu).
	loadMu sync.Mutex
	loads  map[partKey]*partLoad
	// inflight are the bytes the loads in flight are estimated to
	// analyze (their rows at rowCost), guarded by loadMu: loads run
	// outside c.mu, each sized against the bound alone, so without it
	// many first searches at once would together hold many times the
	// bound before any was installed and evicted. inflightWake closes
	// when some are released.
	inflight     int64
	inflightWake chan struct{}

	// For tests: forcePartial makes a build go partial whatever the
	// estimate; analyzed counts the rows read and analyzed; catchUpMax,
	// when set, stands for textCatchUpMax.
	forcePartial bool
	catchUpMax   int
	// readBySel, set by tests, has statistics passes and whole builds
	// read every row with the store-wide query (countStats, reload).
	readBySel bool
	analyzed  atomic.Int64
	// beforeLoad, set by tests, runs in a partition's load once its rows
	// are read, with the load's context.
	beforeLoad  func(ctx context.Context, t search.ContentType, owner string)
	statsReads  atomic.Int64 // reads of a kind's totals (statsFor)
	replays     atomic.Int64 // loads caught up past their snapshot (replayPart)
	passes      atomic.Int64 // statistics passes run to the end (statsPass)
	passTime    atomic.Int64 // nanoseconds statistics passes ran, ended or not
	drops       atomic.Int64 // loaded statistics dropped (dropStats)
	counted     atomic.Int64 // rows statistics passes analyzed (countStats)
	statsLate   atomic.Int64 // passes moved past their snapshot (replayStats)
	loadsStored atomic.Int64 // partitions installed from a stored part (load)
	loadsRows   atomic.Int64 // partitions installed from the rows (load)
	// driftShare is IndexOptions.TextStatsDrift: without driver.TextStats,
	// the share of a kind's rows its statistics may drift by (follow
	// approximately) before a pass counts them again; 0: none, a change
	// they cannot follow drops them.
	driftShare float64
	// restOff, set by tests, starts statistics passes without the rest
	// (passRest): tests of ranking, not of what passes cost.
	restOff bool
	// afterCount, set by tests, runs in a statistics pass once its rows
	// are counted, before they are installed, with the pass's context.
	afterCount func(ctx context.Context, t search.ContentType)

	// The statistics passes of a dialect without driver.TextStats
	// (textstatspass.go), guarded by passMu.
	passMu     sync.Mutex
	passing    map[search.ContentType]chan struct{} // running: closed when done
	passRetry  map[search.ContentType]passRetry
	passClosed bool
	passWG     sync.WaitGroup
}

// textStats are one kind's store-wide bm25 statistics as read from the
// engine at log position seq (when the highest row id was maxID), then
// moved along by catch-ups: a row added since (an id above maxID, or a
// row of a resident partition whose version there is the one the
// statistics counted) changes them by what it adds and takes away; any
// other change drops them (gen moves on), and the next search reads
// them again, unless they drift (textCache.driftShare: followed
// approximately, counted in drift until a pass counts them again).
//
// Without driver.TextStats (PostgreSQL) the statistics are the cache's own,
// computed by a background pass over every row (statsPass): complete,
// df then holds every term any row holds, and a term it lacks has df 0
// (with driver.TextStats df holds the terms read so far).
type textStats struct {
	gen          int64
	loaded       bool
	complete     bool
	pos          logPos
	maxID        int64
	rows, tokens int64
	df           map[string]int64 // by analyzed term
	bytes        int64
	// drift counts the rows whose changes since the statistics were
	// computed they followed only approximately (textCache.driftShare);
	// 0: exact.
	drift int64
}

// stale reports whether s drifted past share of its rows: a pass should
// count them again.
func (s *textStats) stale(share float64) bool {
	return s.drift > 0 && float64(s.drift) > share*float64(s.rows)
}

// driftBound is how many times its share statistics may drift by while
// the pass that would count them again rests (passRest): past it they
// are dropped, as without drift, however long the rest.
const driftBound = 20

// drifted reports whether s drifted past driftBound times share of its
// rows.
func (s *textStats) drifted(share float64) bool {
	return s.drift > 0 && float64(s.drift) > driftBound*share*float64(s.rows)
}

// queryer is what reading rows needs (*sql.DB, *sql.Tx).
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (c *textCache) isPartial() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.partial
}

// goPartial drops the whole-store copy and makes the cache partial at log
// position pos; c.mu is held (or the cache not yet shared).
func (c *textCache) goPartial(pos logPos) {
	c.partial, c.parts, c.pos, c.noBodies = true, nil, pos, false
	c.owned = map[search.ContentType]map[string]*textPart{}
	c.gstats = map[search.ContentType]*textStats{}
	c.tooBig = map[search.ContentType]map[string]bool{}
	c.ownCost = map[search.ContentType]map[string]int64{}
	c.scopeBig = map[search.ContentType]map[string]bool{}
	for _, t := range contentKinds {
		c.owned[t] = map[string]*textPart{}
		c.gstats[t] = &textStats{}
		c.tooBig[t] = map[string]bool{}
		c.ownCost[t] = map[string]int64{}
		c.scopeBig[t] = map[string]bool{}
	}
	c.held = 0
	if c.rowCost == nil {
		c.rowCost = map[search.ContentType]int64{}
	}
}

// partialOver is what the loader records for a cache gone partial.
func (c *textCache) partialOver(n int64) error {
	return fmt.Errorf("%w; it holds the rows of the agents searched lately", c.overBudget(n))
}

// rowCosts records the bytes per row of parts (a whole or partial copy
// that outgrew the bound), for refusing owners too big to hold.
func (c *textCache) rowCosts(parts map[search.ContentType]*textPart) {
	if c.rowCost == nil {
		c.rowCost = map[search.ContentType]int64{}
	}
	for t, p := range parts {
		if p.live > 0 {
			c.rowCost[t] = (p.bytes + p.bodyBytes) / int64(p.live)
		}
	}
}

// estimate returns the bytes a whole-store copy would take, from each
// kind's row count and a sample of its first rows analyzed (the terms
// extrapolated as the square root of the rows, Heaps' law: a vocabulary
// grows much slower than the rows), so a store far over the bound is
// never read whole. It records the sample's bytes per row (rowCost).
func (c *textCache) estimate(ctx context.Context, tx *sql.Tx) (int64, error) {
	const sample = 256
	if c.rowCost == nil {
		c.rowCost = map[search.ContentType]int64{}
	}
	var est int64
	for _, t := range contentKinds {
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+kinds[t].base).Scan(&n); err != nil {
			return 0, fmt.Errorf("search: text cache: count %s: %w", kinds[t].name, err)
		}
		if n == 0 {
			continue
		}
		p := newTextPart(t, textBodies[t] && !c.noBodies)
		p.jsonb = c.jsonbKeys
		err := c.read(ctx, tx, t, c.rows[t].sel+` ORDER BY `+c.rows[t].key+` LIMIT `+fmt.Sprint(sample), nil, &c.scratch, func(r textRow) error {
			p.add(r.doc, r.body, r.terms)
			return nil
		})
		if err != nil {
			return 0, err
		}
		if p.live == 0 {
			continue
		}
		var terms int64 // the sample's bytes of its vocabulary
		for id := range p.termCount() {
			if term := p.name(int32(id)); term != "" {
				terms += textCostTerm + textCostName + int64(len(term))
			}
		}
		perRow := (p.bytes + p.bodyBytes - terms) / int64(p.live)
		c.rowCost[t] = (p.bytes + p.bodyBytes) / int64(p.live)
		est += perRow*n + int64(float64(terms)*math.Sqrt(float64(n)/float64(p.live)))
	}
	return est, nil
}

// partialSync catches a partial cache up to cur (read by sync): the
// changed rows of resident partitions are read again, and the statistics
// of every kind that changed are dropped (read again by the next
// search). It runs in the search, under c.mu: it reads only what changed.
func (c *textCache) partialSync(ctx context.Context, db *sql.DB, cur logPos, ver int64, versioned bool) error {
	c.prepareByID(ctx) // not under c.mu: preparing takes a pooled connection
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pos.valid() && c.pos.covers(cur) {
		c.fresh.upToDate(ver, versioned)
		return nil
	}
	if err := c.partialCatchUp(ctx, db); err != nil {
		c.ld.log.Error("search: text cache catch-up failed; searching in SQL", "err", err)
		return errTextCacheLoading
	}
	c.fresh.upToDate(ver, versioned)
	return nil
}

// partialCatchUp replays the log since c.pos into the partitions; c.mu is
// held.
func (c *textCache) partialCatchUp(ctx context.Context, db *sql.DB) error {
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if c.pos.covers(cur) {
		return nil
	}
	if c.pos.trimmed(floor) {
		// The log was trimmed past c.pos: what changed is unknown.
		c.goPartial(cur) // the partitions load again as their owners search
		return nil
	}
	spans, err := c.readSpans(ctx, tx, c.pos, 0)
	if err != nil {
		return err
	}
	changed := map[search.ContentType][]int64{}
	n := 0
	for t, ids := range spans {
		for id := range ids {
			changed[t] = append(changed[t], id)
			n++
		}
	}
	for _, ids := range changed {
		slices.Sort(ids)
	}
	if n > cmp.Or(c.catchUpMax, textCatchUpMax) {
		// Too much to read under c.mu: the kinds that changed start over
		// (their owners load again as they search; a dialect without
		// driver.TextStats counts their statistics again); the others keep theirs.
		for t := range changed {
			if _, ok := kinds[t]; ok {
				c.startOver(t)
			}
		}
		clear(changed)
	}
	var staged []textRow
	sc := &textScratch{part: true}
	for t, ids := range changed {
		if _, ok := kinds[t]; !ok {
			continue
		}
		clear(c.tooBig[t])
		clear(c.scopeBig[t])
		inc := t != search.Blocks && c.gstats[t].loaded // blocks enter FTS5 lazily: no deltas
		if !inc {
			c.dropStats(t)
		}
		if len(c.owned[t]) == 0 && !inc {
			continue
		}
		if staged, err = c.stage(ctx, tx, t, ids, sc, staged); err != nil {
			return err
		}
	}
	c.moveStats(staged, spans, cur)
	touched := map[*textPart]bool{}
	for _, r := range staged {
		if p := c.changeHolder(r); p != nil {
			p.remove(r.id)
			touched[p] = true
		}
		if p := c.owned[r.t][r.doc.owner]; p != nil && !r.gone {
			p.add(r.doc, r.body, r.terms)
			touched[p] = true
		}
	}
	for p := range touched {
		p.maybeCompact()
	}
	for _, parts := range c.owned {
		for _, p := range parts {
			p.hiPos = cur // every row now at its version of cur
		}
	}
	c.recount()
	c.evict(nil)
	c.pos = cur
	return nil
}

// logSpan is one row's log entries in a catch-up that may have changed
// its indexed text (search_text_log.changed), none when no entry did:
// entries that left the text alone (a supersession sets valid_to and
// superseded_by) leave the statistics as they were whoever holds the
// row, so a kind's statistics survive other agents' such writes.
//
// mark is the highest changed value among them: for messages, 2 is the
// row's own insert or indexed columns, 1 a neighbour's change (SQLite
// migration 0022).
type logSpan struct {
	changed []logEntry // in (position, sequence) order
	mark    int64
}

// first is s's first entry that changed the text (the zero entry when
// none did).
func (s logSpan) first() logEntry {
	if len(s.changed) == 0 {
		return logEntry{}
	}
	return s.changed[0]
}

// heldBy reports whether p holds every entry of s that changed the text
// (true when none did).
func (s logSpan) heldBy(p logPos) bool {
	for _, e := range s.changed {
		if !p.holds(e.pos) {
			return false
		}
	}
	return true
}

// anyHeldBy reports whether p holds an entry of s that changed the text.
func (s logSpan) anyHeldBy(p logPos) bool {
	for _, e := range s.changed {
		if p.holds(e.pos) {
			return true
		}
	}
	return false
}

// readSpans reads the log entries at holds not (of kind t; 0: every
// kind) as each row's logSpan.
func (c *textCache) readSpans(ctx context.Context, tx queryer, at logPos, t search.ContentType) (map[search.ContentType]map[int64]logSpan, error) {
	where, args := c.log.since(at)
	if t != 0 {
		where += ` AND kind = ?`
		args = append(args, int(t))
	}
	rows, err := tx.QueryContext(ctx, `SELECT kind, id, `+c.log.Position+`, seq, changed FROM search_text_log WHERE `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("search: text cache: read log: %w", err)
	}
	defer rows.Close()
	spans := map[search.ContentType]map[int64]logSpan{}
	for rows.Next() {
		var t search.ContentType
		var id, changed int64
		var e logEntry
		if err := rows.Scan(&t, &id, &e.pos, &e.seq, &changed); err != nil {
			return nil, fmt.Errorf("search: text cache: read log: %w", err)
		}
		if spans[t] == nil {
			spans[t] = map[int64]logSpan{}
		}
		sp := spans[t][id]
		sp.mark = max(sp.mark, changed)
		if changed != 0 {
			sp.changed = append(sp.changed, e)
		}
		spans[t][id] = sp
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: text cache: read log: %w", err)
	}
	for _, ids := range spans {
		for id, sp := range ids {
			slices.SortFunc(sp.changed, compareEntries)
			ids[id] = sp
		}
	}
	return spans, nil
}

// moveStats applies the rows a catch-up read (staged, each kind's log
// spans in it) to the statistics of the kinds that keep theirs (loaded:
// not dropped by partialCatchUp), before the partitions take the rows,
// and moves them to log position cur; a change they cannot follow
// drops a kind's. c.mu is held.
func (c *textCache) moveStats(staged []textRow, spans map[search.ContentType]map[int64]logSpan, cur logPos) {
	moves := map[search.ContentType]*statsMove{}
	var arrivals map[msgPlace]*textRow // built on first need
	for _, r := range staged {
		s := c.gstats[r.t]
		if !s.loaded {
			continue
		}
		m := moves[r.t]
		if m == nil {
			m = &statsMove{df: map[string]int64{}, maxID: s.maxID, unmarked: c.stats == nil, approx: c.approx(s)}
			moves[r.t] = m
		}
		m.row(s, r, spans[r.t], staged, &arrivals, func() *textPart { return c.changeHolder(r) })
	}
	for t, s := range c.gstats {
		if !s.loaded {
			continue // a kind without changes keeps its values, now of cur too
		}
		if m := moves[t]; m != nil && (!m.apply(s, c.limit/textStatsShare) || s.drifted(c.driftShare)) {
			c.dropStats(t)
			continue
		}
		s.pos = later(s.pos, cur)
	}
}

// approx reports whether changes s cannot follow are followed
// approximately (IndexOptions.TextStatsDrift): loaded statistics, with a
// drift share set.
func (c *textCache) approx(s *textStats) bool {
	return c.driftShare > 0 && s.loaded
}

// holder is the resident partition holding r's row as it was, nil when
// none does. A row is in one partition at most (install removes a moved
// row from the others), most often its owner's, looked at first.
func (c *textCache) holder(r textRow) *textPart {
	if p := c.owned[r.t][r.doc.owner]; p != nil && !r.gone && p.holds(r.id) {
		return p
	}
	for _, p := range c.owned[r.t] {
		if p.holds(r.id) {
			return p
		}
	}
	return nil
}

// changeHolder is holder(r) for a change of r: unpacked first when r's
// new version goes back into it (a rewrite in place), so that a packed
// part's postings are decoded once, not walked for the remove's row
// terms and then again for the add's unpacking. c.mu is held.
func (c *textCache) changeHolder(r textRow) *textPart {
	p := c.holder(r)
	if p != nil && !r.gone && c.owned[r.t][r.doc.owner] == p {
		p.indexTerms()
	}
	return p
}

// statsMove is what a catch-up's rows change in one kind's statistics.
type statsMove struct {
	rows, tokens int64
	df           map[string]int64
	maxID        int64
	failed       bool // a change the statistics cannot follow
	// unmarked: the log does not tell a row's own changes from its
	// neighbours' (PostgreSQL marks every entry 1, migration 0017).
	unmarked bool
	// approx: a change the statistics cannot follow is followed
	// approximately and counted in drift instead (textCache.driftShare).
	approx bool
	drift  int64
	// floor: terms of rows followed approximately that stay in the
	// store; their frequencies stay at least 1 (a term counted in no row
	// would match nothing, searchOwners).
	floor map[string]bool
}

// row adds to m what row r (spans: the log spans of r's kind in the
// catch-up) changes in s; old finds the resident partition holding r's
// previous version (nil: none). arrivals indexes staged's new messages,
// built on first need.
func (m *statsMove) row(s *textStats, r textRow, spans map[int64]logSpan, staged []textRow, arrivals *map[msgPlace]*textRow, old func() *textPart) {
	sp := spans[r.id]
	if m.failed || sp.heldBy(s.pos) {
		return // its text now is the one counted when the statistics were read
	}
	if r.id <= s.maxID {
		// The statistics counted a version of this row: only one a
		// resident partition holds as it was then will do.
		p := old()
		if sp.anyHeldBy(s.pos) || p == nil || sp.anyHeldBy(p.hiPos) {
			if r.t == search.Messages && !r.gone && len(sp.changed) <= 4 && sp.mark == 1 {
				if *arrivals == nil {
					*arrivals = newMessages(staged, s.maxID)
				}
				if grew, had, from, ok := neighbourArrived(r, *arrivals); ok && len(from) == len(sp.changed) && (!m.unmarked || arrivalsLogged(sp, from, spans)) {
					m.tokens += grew
					if s.complete {
						for term := range r.terms.index {
							if !had(term) {
								m.df[term]++
							}
						}
						return
					}
					for term := range r.terms.index {
						if _, ok := s.df[term]; ok && !had(term) {
							m.df[term]++
						}
					}
					return
				}
			}
			if m.approx {
				m.unfollowed(s, r)
				return
			}
			m.failed = true
			return
		}
		p.fillTerms()
		doc := &p.docs[p.slots[r.id]]
		m.rows--
		m.tokens -= int64(doc.length)
		// Each term the row held (once each) that s counts: every one
		// when complete (s.df holds the store's whole vocabulary).
		for _, id := range p.terms[doc.termsAt : doc.termsAt+doc.nTerms] {
			term := p.name(id)
			if _, ok := s.df[term]; ok || s.complete {
				m.df[term]--
			}
		}
	}
	m.maxID = max(m.maxID, r.id)
	if !r.gone {
		m.rows++
		m.tokens += int64(r.doc.length)
		for term := range r.terms.index {
			if _, ok := s.df[term]; ok || s.complete {
				m.df[term]++
			}
		}
	}
}

// unfollowed follows r, a change of a row whose counted version no
// resident partition holds, approximately (m.approx): a deleted row stops
// counting, with the mean row's tokens, and the frequencies of the terms
// any version of it held stay as they are (which terms it held is known
// only from its old text). A row that stays (rewritten, or one the
// statistics never counted: on PostgreSQL a lower id can commit after a
// higher one was counted) keeps the counts as they are too, but each of
// its terms counts at least once (floor), so that it is found. r counts
// as drift.
func (m *statsMove) unfollowed(s *textStats, r textRow) {
	m.drift++
	if r.gone {
		if rows := s.rows + m.rows; rows > 0 {
			m.tokens -= (s.tokens + m.tokens) / rows
			m.rows--
		}
		return
	}
	if m.floor == nil {
		m.floor = map[string]bool{}
	}
	for term := range r.terms.index {
		if _, ok := s.df[term]; ok || s.complete {
			m.floor[term] = true
		}
	}
}

// apply moves s by m; false when the statistics must go instead: a
// change they cannot follow, or complete ones grown past share bytes
// (or gone inconsistent, which a correct log never makes them; with
// drift, a frequency the drifting rows left too low stops at 0).
func (m *statsMove) apply(s *textStats, share int64) bool {
	if m.failed {
		return false
	}
	s.drift += m.drift
	s.rows += m.rows
	s.tokens += m.tokens
	if s.drift > 0 {
		// A row holds a token at least: with fewer, the mean length
		// (bm25's avgdl) would reach 0 and every score with it.
		s.rows = max(s.rows, 0)
		s.tokens = max(s.tokens, s.rows)
	}
	s.maxID = m.maxID
	for term := range m.floor {
		if s.df[term]+m.df[term] < 1 {
			m.df[term] = 1 - s.df[term]
		}
	}
	for term, n := range m.df {
		if n == 0 {
			continue // (a rewritten row's terms it held before and holds still)
		}
		if !s.complete {
			s.df[term] += n
			if s.df[term] < 0 && s.drift > 0 {
				s.df[term] = 0
			}
			continue
		}
		v, had := s.df[term]
		v += n
		if v < 0 && s.drift > 0 {
			v = 0
		}
		switch {
		case v < 0:
			return false
		case v == 0 && had:
			delete(s.df, term)
			s.bytes -= textCostTerm + int64(len(term))
		case v > 0:
			if !had {
				s.bytes += textCostTerm + int64(len(term))
			}
			s.df[term] = v
		}
	}
	return !s.complete || (s.rows >= 0 && s.tokens >= 0 && s.bytes <= share)
}

// arrivalsLogged reports whether each of r's log entries (sp) can be the
// doing of a distinct arrival (from), where the log marks a row's own
// changes as its neighbours': each entry written by an arrival's insert,
// before the arrival itself is logged (row triggers run first), matched
// in log order. An entry of r's own after an arrival (r moved beside it)
// is not.
func arrivalsLogged(sp logSpan, from []int64, spans map[int64]logSpan) bool {
	firsts := make([]logEntry, len(from))
	for i, id := range from {
		firsts[i] = spans[id].first()
	}
	slices.SortFunc(firsts, compareEntries)
	for i, e := range sp.changed {
		if !e.before(firsts[i]) {
			return false
		}
	}
	return true
}

// seqStep is seq + step, and whether it is an int64: the engines join no
// neighbour past either end of the range (engram_seq_step on PostgreSQL).
func seqStep(seq, step int64) (int64, bool) {
	if (step < 0 && seq < math.MinInt64-step) || (step > 0 && seq > math.MaxInt64-step) {
		return 0, false
	}
	return seq + step, true
}

// msgPlace is a message's place: its owner, batch and seq.
type msgPlace struct {
	owner, batch string
	seq          int64
}

// newMessages indexes by place the staged messages added since the
// statistics were read (ids above maxID).
func newMessages(staged []textRow, maxID int64) map[msgPlace]*textRow {
	out := map[msgPlace]*textRow{}
	for i := range staged {
		m := &staged[i]
		if m.t != search.Messages || m.gone || m.id <= maxID {
			continue
		}
		if batch, seq, ok := messagePlace(m.body.meta); ok {
			out[msgPlace{m.doc.owner, batch, seq}] = m
		}
	}
	return out
}

// neighbourArrived recognises a message row r whose changes since the
// statistics were read were all logged for neighbours (changed 1) while
// new messages (arrivals: ids above maxID) sit within two seqs of it in
// its batch: each arrival added its words to r's context column on its
// side (seq - 2 or - 1: context_before, + 1 or + 2: context_after), as
// (agent, batch_id, seq) is unique, and each logged r once. The caller
// checks that r has one entry per arrival, or something else changed it
// too. r's text as counted is then its text now without the arrivals'
// words: grew is the tokens they added, had whether the counted text
// held a term, from the arrivals' ids in seq order.
func neighbourArrived(r textRow, arrivals map[msgPlace]*textRow) (grew int64, had func(string) bool, from []int64, ok bool) {
	batch, seq, ok := messagePlace(r.body.meta)
	if !ok {
		return 0, nil, nil, false
	}
	added := map[string]float32{}
	for _, step := range []int64{-2, -1, 1, 2} {
		at, ok := seqStep(seq, step)
		if !ok {
			continue
		}
		a := arrivals[msgPlace{r.doc.owner, batch, at}]
		if a == nil {
			continue
		}
		w := float32(textWeights[search.Messages][2]) // context_after
		if step < 0 {
			w = float32(textWeights[search.Messages][1]) // context_before
		}
		analyzer.Analyze(a.body.content, nil, func(term []byte) {
			added[string(term)] += w
			grew++
		})
		from = append(from, a.id)
	}
	if len(from) == 0 {
		return 0, nil, nil, false
	}
	for term, f := range added {
		n, ok := r.terms.index[term]
		if !ok || r.terms.freqs[n] < f {
			return 0, nil, nil, false // r's text is not its counted text plus the columns
		}
	}
	had = func(term string) bool {
		n, ok := r.terms.index[term]
		return ok && r.terms.freqs[n] > added[term]
	}
	return grew, had, from, true
}

// messagePlace reads a message row's batch and seq from its result
// metadata (messageMeta).
func messagePlace(meta string) (batch string, seq int64, ok bool) {
	var m struct {
		Batch *string `json:"batch_id"`
		Seq   *int64  `json:"seq"`
	}
	if json.Unmarshal([]byte(meta), &m) != nil || m.Batch == nil || m.Seq == nil {
		return "", 0, false
	}
	return *m.Batch, *m.Seq, true
}

// dropStats forgets kind t's statistics; c.mu is held. Without
// driver.TextStats the next search of kind t starts a pass to compute them
// again (statsFor), and such searches rank in SQL until it is done.
func (c *textCache) dropStats(t search.ContentType) {
	s := c.gstats[t]
	if s.loaded {
		c.drops.Add(1)
	}
	c.gstats[t] = &textStats{gen: s.gen + 1}
}

// startOver forgets kind t's partitions and statistics; c.mu is held.
func (c *textCache) startOver(t search.ContentType) {
	c.owned[t] = map[string]*textPart{}
	clear(c.tooBig[t])
	clear(c.scopeBig[t])
	c.dropStats(t)
}

// textCostPart is what a partition costs before its first row: the
// textPart with its empty maps, its entry in owned and the owner's name
// (measured: about 450 bytes). Charged so that partitions of owners
// without rows (any agent name a search names) are evicted like others
// rather than piling up free of charge (TestTextCachePartialChurnBounded).
const textCostPart = 512

// partCost is what owner's partition p is charged against the bound.
func partCost(owner string, p *textPart) int64 {
	return textCostPart + int64(len(owner)) + p.bytes + p.bodyBytes
}

// recount sums the partitions' bytes (held); c.mu is held.
func (c *textCache) recount() {
	c.held = 0
	for _, parts := range c.owned {
		for owner, p := range parts {
			c.held += partCost(owner, p)
		}
	}
}

// partialBytes is what a partial cache holds: partitions and statistics;
// c.mu is held.
func (c *textCache) partialBytes() int64 {
	n := c.held
	for _, s := range c.gstats {
		n += s.bytes
	}
	return n
}

// evict drops the least recently used partitions (never keep) until the
// cache is within its bound; c.mu is held.
func (c *textCache) evict(keep *textPart) {
	for c.partialBytes() > c.limit {
		v, ok := c.lru.pop(c.owned, keep, func(p *textPart) int64 { return p.used.Load() })
		if !ok {
			return
		}
		p := c.owned[v.t][v.owner]
		c.held -= partCost(v.owner, p)
		delete(c.owned[v.t], v.owner)
		c.evictions.Add(1)
	}
}

// ensure loads owner's partition of kind t into the partial cache,
// evicting the least recently used others to stay within the bound, and
// marks it used; held is false when the owner's rows alone exceed the
// bound (or the cache is not partial): the leg then ranks in SQL.
// A first search loads in the foreground: an owner's rows are what its
// searches read anyway, and their analysis costs about what one SQL
// ranking over them does. The load runs outside c.mu (searches of
// resident partitions go on meanwhile); searches wanting the same
// partition wait for it (until their ctx ends), and load it themselves
// should the search that started it give up.
func (c *textCache) ensure(ctx context.Context, db *sql.DB, t search.ContentType, owner string) (held bool, err error) {
	return c.ensureFor(ctx, db, t, owner, 0)
}

// ensureFor is ensure, for prewarming when warm (a use stamp, negative;
// 0: not prewarming): a load it starts installs the partition only if
// the cache, with it, stays within prewarmFill tenths of its bound (it
// evicts nothing), stamped warm (reporting false otherwise); a load
// another search started is left as that search installs it.
func (c *textCache) ensureFor(ctx context.Context, db *sql.DB, t search.ContentType, owner string, warm int64) (held bool, err error) {
	for {
		if held, known := c.resident(t, owner); known {
			return held, nil
		}
		key := partKey{t, owner}
		c.loadMu.Lock()
		f := c.loads[key]
		if f == nil {
			f = &partLoad{done: make(chan struct{})}
			if c.loads == nil {
				c.loads = map[partKey]*partLoad{}
			}
			c.loads[key] = f
			c.loadMu.Unlock()
			f.held, f.err = c.load(ctx, db, t, owner, warm)
			f.declined = warm != 0 && !f.held && f.err == nil
			c.loadMu.Lock()
			delete(c.loads, key)
			c.loadMu.Unlock()
			close(f.done)
			return f.held, f.err
		}
		c.loadMu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return false, fmt.Errorf("search: text cache: wait for the %s of %q: %w", kinds[t].name, owner, ctx.Err())
		}
		if f.err != nil && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
			continue // its starter gave up, not this search
		}
		if f.declined && warm == 0 {
			continue // prewarming found no room for it; a search makes room
		}
		if f.err != nil || !f.held {
			return false, f.err
		}
		held, _ := c.resident(t, owner) // not held: evicted since
		return held, nil
	}
}

// partKey names one partition (partialState.loads, lruQueue).
type partKey struct {
	t     search.ContentType
	owner string
}

// partLoad is a partition's load in flight; held and err are set before
// done closes.
type partLoad struct {
	done chan struct{}
	held bool
	err  error
	// declined: a prewarming load that did not install the partition
	// for want of room (ensureFor).
	declined bool
}

// resident reports whether owner's partition of kind t is held (marking
// it used); known is false when it must be loaded first.
func (c *textCache) resident(t search.ContentType, owner string) (held, known bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	partial, p, big := c.partial, c.owned[t][owner], c.tooBig[t][owner]
	switch {
	case !partial || big:
		return false, true
	case p != nil:
		// Stamped under the lock, as every use is: no stamp lands while
		// an eviction (under the write lock) compares them (lruQueue).
		p.used.Store(c.clock.Add(1))
		return true, true
	}
	return false, false
}

// textLoadTries bounds the catch-ups of a loaded partition to the
// cache's log position: past it, writes outrun the load and the leg
// ranks in SQL this time.
const textLoadTries = 8

// partRead is a partition read outside c.mu: its rows are those of log
// position pos.
type partRead struct {
	p   *textPart
	pos logPos
	// refused: the owner's rows exceed the bound (cost: their bytes per
	// row when read, else 0).
	refused bool
	cost    int64
	// moved, when not nil, are the rows logged since the load began that
	// pos's snapshot holds (catchUpLoad's first install; readStored).
	moved map[int64]bool
	// warm, when not 0, is a prewarming load's use stamp: it is
	// installed only where it evicts nothing (ensureFor).
	warm int64
}

// load reads owner's partition of kind t in one snapshot without c.mu,
// replays onto it what the cache's catch-ups applied since (the cache
// may have moved past the snapshot meanwhile), and installs it under
// c.mu.
func (c *textCache) load(ctx context.Context, db *sql.DB, t search.ContentType, owner string, warm int64) (bool, error) {
	c.mu.RLock()
	cost, base := max(c.rowCost[t], c.ownCost[t][owner]), c.pos
	c.mu.RUnlock()
	// Another process's analysis of the rows, caught up from the log,
	// when there is one to use (textpartstore.go); else the rows. A part
	// read from the rows, or stored long enough ago that its catch-up
	// replayed many entries, is saved for the next process once held.
	ld, replayed, err := c.readStored(ctx, db, t, owner, base)
	if errors.Is(err, errPartChanged) {
		return false, nil // (the next search loads it)
	}
	if err != nil {
		return false, err
	}
	stored := ld != nil
	save := !stored || replayed > ld.p.live/4+16
	if !stored {
		if ld, err = c.readPart(ctx, db, t, owner, cost); err != nil {
			return false, err
		}
	}
	ld.warm = warm
	held, err := c.catchUpLoad(ctx, db, t, owner, ld, base)
	if held && err == nil {
		if save {
			c.saveLater(t, owner)
		}
		if stored {
			c.loadsStored.Add(1)
		} else {
			c.loadsRows.Add(1)
		}
	}
	return held, err
}

// catchUpLoad installs a partition read at ld.pos, first replaying what
// the cache's catch-ups applied since (the cache may have moved past it
// meanwhile); base was the cache's position when the load began.
func (c *textCache) catchUpLoad(ctx context.Context, db *sql.DB, t search.ContentType, owner string, ld *partRead, base logPos) (bool, error) {
	var err error
	for try := 0; ; try++ {
		moved := ld.moved
		ld.moved = nil
		if !ld.refused && moved == nil {
			if moved, err = c.loggedSince(ctx, db, t, base); err != nil {
				return false, err
			}
		}
		c.mu.Lock()
		if !c.partial {
			c.mu.Unlock()
			return false, nil
		}
		if ld.refused || ld.pos.covers(c.pos) {
			held := c.install(t, owner, ld, moved)
			c.mu.Unlock()
			return held, nil
		}
		c.mu.Unlock()
		if try == textLoadTries {
			return false, nil
		}
		if ok, err := c.replayPart(ctx, db, t, owner, ld); err != nil || !ok {
			return false, err
		}
	}
}

// readPart reads and analyzes owner's rows of kind t in one snapshot
// (with the load's own buffers), unless their count at cost bytes per
// row exceeds the bound.
func (c *textCache) readPart(ctx context.Context, db *sql.DB, t search.ContentType, owner string, cost int64) (*partRead, error) {
	k := kinds[t]
	countQ := `SELECT count(*) FROM ` + k.base + ` WHERE ` + k.owner + ` = ?`
	// One statement over the owner's rows (its index), not a list of
	// their ids read back by id: the statement is the same for every
	// owner, prepared once (parsing it cost about a sixth of a load). A
	// kind with its own query (textRowQuery.own) reads neighbours in Go.
	q := c.rows[t].sel + ` WHERE ` + k.alias + `.` + k.owner + ` = ?`
	own := c.rows[t].own
	if own != "" {
		q = own
	}
	// Prepared before the snapshot's transaction takes a connection (see
	// prepare).
	countSt, rowsSt := c.prepare(ctx, countQ), c.prepare(ctx, q)
	tx, cur, _, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var n int64
	count, done := inTx(ctx, tx, countSt)
	defer done()
	if err := queryRow(ctx, count, countQ, owner).Scan(&n); err != nil {
		return nil, fmt.Errorf("search: text cache: count %s of %q: %w", k.name, owner, err)
	}
	if n*cost > c.limit {
		return &partRead{refused: true}, nil
	}
	need := n * cost
	if err := c.reserve(ctx, need); err != nil {
		return nil, fmt.Errorf("search: text cache: wait to load %s of %q: %w", k.name, owner, err)
	}
	defer c.release(need)
	p := newTextPart(t, textBodies[t])
	p.jsonb = c.jsonbKeys
	src, done := inTx(ctx, tx, rowsSt)
	defer done()
	sc := &textScratch{part: true, seen: map[string][]uint32{}}
	if own != "" {
		if err := c.readOwn(ctx, tx, src, t, c.rows[t], owner, p, sc); err != nil {
			return nil, err
		}
	} else {
		err = c.scan(ctx, src, t, q, []any{owner}, func(d textDoc, body textBody, cols []sql.NullString) error {
			if d.owner == owner {
				p.addRow(d, body, cols, nil, sc)
				c.analyzed.Add(1)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if c.beforeLoad != nil {
		c.beforeLoad(ctx, t, owner)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search: text cache: load %s of %q: %w", k.name, owner, err)
	}
	ld := &partRead{p: p, pos: cur}
	if partCost(owner, p) > c.limit {
		ld.refused = true
		if p.live > 0 {
			ld.cost = (p.bytes + p.bodyBytes) / int64(p.live)
		}
	}
	return ld, nil
}

// readOwn reads owner's rows of kind t with the kind's own query (its
// textRowQuery.own: each row's conversation key where the neighbours'
// text goes, the rows in conversation order), finds each row's
// neighbours among them (ownNeighbours) and indexes the rows into p.
func (c *textCache) readOwn(ctx context.Context, tx *sql.Tx, src queryer, t search.ContentType, q textRowQuery, owner string, p *textPart, sc *textScratch) error {
	return c.ownRows(ctx, tx, src, t, q, owner, func(r *ownRow) {
		p.addRow(r.d, r.body, r.cols, r.pieces, sc)
		c.analyzed.Add(1)
	})
}

// ownRows reads owner's rows of kind t with q.own from src (in tx), finds
// each row's neighbours among them and passes each row, its columns
// those the index holds, to use in q.own's order. Rows q.unplaced says
// it cannot place are read again by id in tx with q.sel, their
// neighbours found by the engine; so are all the owner's rows when
// q.stamped and one's created_at is not an integer.
func (c *textCache) ownRows(ctx context.Context, tx *sql.Tx, src queryer, t search.ContentType, q textRowQuery, owner string, use func(*ownRow)) error {
	var rows []ownRow
	at := q.ctxAt
	err := c.scan(ctx, src, t, q.own, []any{owner}, func(d textDoc, body textBody, cols []sql.NullString) error {
		if d.owner != owner {
			return nil
		}
		r := ownRow{d: d, body: body, cols: slices.Clone(cols), key: cols[at], next: cols[at+1]}
		r.cols[at], r.cols[at+1] = sql.NullString{}, sql.NullString{}
		if q.dateAt > 0 && !r.cols[q.dateAt].Valid {
			r.cols[q.dateAt] = sql.NullString{String: messageDateText(d.created), Valid: true}
		}
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		return err
	}
	switch {
	case q.stamped && slices.ContainsFunc(rows, func(r ownRow) bool { return r.next.Valid }):
		if err := c.readAgain(ctx, tx, t, q, rows, func(*ownRow) bool { return true }); err != nil {
			return err
		}
	case q.unplaced:
		q.neighbours(rows)
		if err := c.readAgain(ctx, tx, t, q, rows, func(r *ownRow) bool { return !r.key.Valid }); err != nil {
			return err
		}
	default:
		q.neighbours(rows)
	}
	for i := range rows {
		use(&rows[i])
	}
	return nil
}

// eachOwnRow passes every row of kind t in tx to use, owner by owner,
// each owner's rows read with q.own (ownRows): the store-wide query
// q.sel joins each archival entry's neighbours in the engine, which on
// PostgreSQL costs about 100 µs of the server's CPU a row. An owner
// whose contents exceed bulk characters is read with q.sel (its rows
// one at a time, not held together). It returns errOwnersMissed, having
// passed the rows it read, when the owners' queries read fewer rows than
// the kind holds (an owner the engine does not find by the name it
// gave: on SQLite a hand edit may leave a name a blob, which equals no
// text).
func (c *textCache) eachOwnRow(ctx context.Context, tx *sql.Tx, t search.ContentType, q textRowQuery, bulk int64, use func(*ownRow) error) error {
	k := kinds[t]
	rows, err := tx.QueryContext(ctx, `SELECT `+k.owner+`, count(*), coalesce(sum(length(content)), 0) FROM `+k.base+` GROUP BY `+k.owner)
	if err != nil {
		return err
	}
	// Each name once: names the engine tells apart may scan alike (a
	// blob and a text of the same bytes).
	type ownerSize struct{ rows, chars int64 }
	owners := map[string]ownerSize{}
	var n, read int64
	for rows.Next() {
		var o string
		var sz ownerSize
		if err := rows.Scan(&o, &sz.rows, &sz.chars); err != nil {
			rows.Close()
			return err
		}
		n += sz.rows
		had := owners[o]
		owners[o] = ownerSize{had.rows + sz.rows, had.chars + sz.chars}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, q.own)
	if err != nil {
		return err
	}
	defer st.Close()
	bySel := q.sel + ` WHERE ` + k.alias + `.` + k.owner + ` = ?`
	for _, owner := range slices.Sorted(maps.Keys(owners)) {
		var failed error
		if owners[owner].chars > bulk {
			err = c.scan(ctx, tx, t, bySel, []any{owner}, func(d textDoc, body textBody, cols []sql.NullString) error {
				if d.owner != owner {
					return nil
				}
				read++
				return use(&ownRow{d: d, body: body, cols: cols})
			})
		} else {
			err = c.ownRows(ctx, tx, stmtQueryer{st}, t, q, owner, func(r *ownRow) {
				read++
				if failed == nil {
					failed = use(r)
				}
			})
		}
		if err = cmp.Or(err, failed); err != nil {
			return err
		}
	}
	if read != n {
		return errOwnersMissed
	}
	return nil
}

// readAgain sets the columns of the rows pick picks to those q.sel reads
// for them in tx (their context as the engine joins it).
func (c *textCache) readAgain(ctx context.Context, tx *sql.Tx, t search.ContentType, q textRowQuery, rows []ownRow, pick func(*ownRow) bool) error {
	at := map[int64]int{}
	for i := range rows {
		if pick(&rows[i]) {
			at[rows[i].d.id] = i
		}
	}
	if len(at) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(at))
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		err := c.scan(ctx, tx, t, q.byID(len(chunk)), args, func(d textDoc, _ textBody, cols []sql.NullString) error {
			if i, ok := at[d.id]; ok {
				rows[i].cols, rows[i].pieces = slices.Clone(cols), nil
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// ownRow is a row of one owner read by readOwn: key is its conversation
// key (not Valid: none) for an archival entry, its batch for a message;
// next is a message's sequence number in its batch.
type ownRow struct {
	d         textDoc
	body      textBody
	cols      []sql.NullString
	key, next sql.NullString
	// pieces: the context columns as the neighbours' contents they join
	// (textPart.addRow), set by the neighbour finders; nil where cols
	// holds the columns as the engine joined them.
	pieces [][]string
}

// setContext sets row r's context columns before and after (indexes into
// r.cols) to the texts they join with single spaces, as pieces for
// textPart.addRow; the columns stay Valid and empty.
func (r *ownRow) setContext(before, after int, b, a []string) {
	r.pieces = make([][]string, max(before, after)+1)
	r.pieces[before], r.pieces[after] = b, a
	r.cols[before] = sql.NullString{Valid: true}
	r.cols[after] = sql.NullString{Valid: true}
}

// ownMessageNeighbours sets each message's context columns (cols[1] and
// cols[2]) to the content of the two messages before and the two after it
// in its batch, as the engines' MessageNeighbours joins them and
// messageContext joins their text: the same owner's messages with the
// same batch (a message with none has no neighbours) and the sequence
// numbers one and two below or above, where those numbers exist (no step
// past the ends of int64). (agent, batch_id, seq) is unique.
func ownMessageNeighbours(rows []ownRow) {
	type place struct {
		batch string
		seq   int64
	}
	at := make(map[place]int, len(rows))
	seqs := make([]int64, len(rows))
	for i := range rows {
		r := &rows[i]
		seq, err := strconv.ParseInt(r.next.String, 10, 64)
		if !r.key.Valid || !r.next.Valid || err != nil {
			seqs[i] = 0
			r.key.Valid = false
			continue
		}
		seqs[i] = seq
		at[place{r.key.String, seq}] = i
	}
	// neighbour is the content of the message step seqs from row i's.
	neighbour := func(i int, step int64) (string, bool) {
		s, ok := seqStep(seqs[i], step)
		if !ok {
			return "", false
		}
		j, ok := at[place{rows[i].key.String, s}]
		if !ok {
			return "", false
		}
		return rows[j].cols[0].String, true
	}
	for i := range rows {
		r := &rows[i]
		if !r.key.Valid {
			continue
		}
		var before, after []string
		for _, step := range [...]int64{-2, -1} {
			if t, ok := neighbour(i, step); ok {
				before = append(before, t)
			}
		}
		for _, step := range [...]int64{1, 2} {
			if t, ok := neighbour(i, step); ok {
				after = append(after, t)
			}
		}
		r.setContext(1, 2, before, after)
	}
}

// The stream of an owner's archival entries naming no conversation
// (SQLite migration 0032, PostgreSQL 0029): the entry next to one in it is
// its neighbour when their created_at differ by at least
// archivalStreamBurst and at most archivalStreamGap (Unix nanoseconds).
// Notes written as a conversation goes are seconds to minutes apart, and a
// longer pause starts a new conversation; entries written less than a
// second apart were written by a program in one go (a batch, a document
// load) and are indexed alone.
const (
	archivalStreamGap   = int64(30 * time.Minute)
	archivalStreamBurst = int64(time.Second)
)

// streamNeighbours reports whether entries created at a and b (Unix
// nanoseconds) are near enough in time to be neighbours in the stream:
// as the engines compute abs(a - b), a difference past int64 is too far.
func streamNeighbours(a, b int64) bool {
	d := a - b
	if (d > a) != (b < 0) {
		return false // overflow
	}
	if d < 0 {
		if d == math.MinInt64 {
			return false
		}
		d = -d
	}
	return d >= archivalStreamBurst && d <= archivalStreamGap
}

// ownNeighbours sets each row's context columns (cols[3] and cols[4],
// the index's context_before and context_after) to the content of the
// two rows before and the one after it in its conversation, as
// archival_links and archivalContext find them: the row before its row
// before and a space, then its row before; its row after. A step is archival_links': rows of the same key
// in the order (place, id), only live ones around a live row, any around
// a superseded one. Rows naming no conversation are the owner's stream:
// the same, but a row next to one is its neighbour only when
// streamNeighbours says so. The rows are one owner's, all of them, in the
// order SQL gives them by (key, place, id) (rows without a key together,
// first or last): the engine orders places as archival_links compares
// them (on SQLite a hand edit may leave a place a real or text).
func ownNeighbours(rows []ownRow) {
	near := func(i, j int) bool {
		return rows[i].key.Valid || streamNeighbours(rows[i].d.created, rows[j].d.created)
	}
	before, after := make([]int, len(rows)), make([]int, len(rows))
	for i := range rows {
		before[i], after[i] = -1, -1
	}
	for lo := 0; lo < len(rows); {
		hi := lo + 1
		for hi < len(rows) && rows[hi].key == rows[lo].key {
			hi++
		}
		// Any row around a superseded one.
		for i := lo; i < hi; i++ {
			if !rows[i].d.superseded {
				continue
			}
			if i > lo && near(i, i-1) {
				before[i] = i - 1
			}
			if i+1 < hi && near(i, i+1) {
				after[i] = i + 1
			}
		}
		// Live rows around a live one.
		prev := -1
		for i := lo; i < hi; i++ {
			if rows[i].d.superseded {
				continue
			}
			if prev >= 0 && near(i, prev) {
				before[i], after[prev] = prev, i
			}
			prev = i
		}
		lo = hi
	}
	text := func(i int) string { return rows[i].cols[0].String }
	for i := range rows {
		var b, a []string
		if p := before[i]; p >= 0 {
			if pp := before[p]; pp >= 0 {
				b = append(b, text(pp))
			}
			b = append(b, text(p))
		}
		if n := after[i]; n >= 0 {
			a = append(a, text(n))
		}
		rows[i].setContext(3, 4, b, a)
	}
}

// prepare is the Index's prepared statement for q (nil: none; the Index
// closes it). It is asked for before the caller's transaction takes a
// pooled connection: preparing a statement the Index does not hold yet
// takes a connection of its own, and from a pool of one (an in-memory
// store's) it would wait for ever on the transaction's.
func (c *textCache) prepare(ctx context.Context, q string) *sql.Stmt {
	if c.prep == nil {
		return nil
	}
	st, err := c.prep(ctx, q)
	if err != nil {
		return nil
	}
	return st
}

// inTx is st in tx (st nil: tx itself, running the query it is given),
// and what releases it.
func inTx(ctx context.Context, tx *sql.Tx, st *sql.Stmt) (queryer, func()) {
	if st == nil {
		return tx, func() {}
	}
	ts := tx.StmtContext(ctx, st)
	return stmtQueryer{ts}, func() { ts.Close() }
}

// queryRow is QueryRowContext over a queryer.
func queryRow(ctx context.Context, q queryer, query string, args ...any) rowScanner {
	rows, err := q.QueryContext(ctx, query, args...)
	return rowScanner{rows, err}
}

// rowScanner scans the first row of rows, as sql.Row does.
type rowScanner struct {
	rows *sql.Rows
	err  error
}

func (r rowScanner) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	return r.rows.Close()
}

// stmtQueryer runs its prepared statement whatever query it is given.
type stmtQueryer struct{ st *sql.Stmt }

func (q stmtQueryer) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return q.st.QueryContext(ctx, args...)
}

// reserve waits until n more bytes of loads in flight fit the bound
// (or none are in flight: a lone load always runs), or ctx ends.
func (c *textCache) reserve(ctx context.Context, n int64) error {
	return c.waitBound(ctx, n, true)
}

// waitFits waits, as reserve does, until n more bytes would fit the
// bound, and reserves nothing: a load that must not hold a reservation
// while it waits for a connection (rereadPart) waits here first, then
// tries to reserve holding the connection.
func (c *textCache) waitFits(ctx context.Context, n int64) error {
	return c.waitBound(ctx, n, false)
}

func (c *textCache) waitBound(ctx context.Context, n int64, take bool) error {
	if n <= 0 {
		return nil
	}
	for {
		c.loadMu.Lock()
		if c.inflight == 0 || c.inflight+n <= c.limit {
			if take {
				c.inflight += n
			}
			c.loadMu.Unlock()
			return nil
		}
		if c.inflightWake == nil {
			c.inflightWake = make(chan struct{})
		}
		wake := c.inflightWake
		c.loadMu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryReserve is reserve without the wait: it reports whether the n bytes
// were reserved.
func (c *textCache) tryReserve(n int64) bool {
	if n <= 0 {
		return true
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	if c.inflight == 0 || c.inflight+n <= c.limit {
		c.inflight += n
		return true
	}
	return false
}

// release returns n bytes reserved by a load, waking those waiting.
func (c *textCache) release(n int64) {
	if n <= 0 {
		return
	}
	c.loadMu.Lock()
	defer c.loadMu.Unlock()
	c.inflight -= n
	if c.inflightWake != nil {
		close(c.inflightWake)
		c.inflightWake = nil
	}
}

// replayPart brings a partition read at ld.pos up to the log's end: the
// rows of kind t logged since are read again, and kept if owner's. ok is
// false when the log no longer holds what it needs (trimmed, or too
// much): the load gives up.
func (c *textCache) replayPart(ctx context.Context, db *sql.DB, t search.ContentType, owner string, ld *partRead) (ok bool, err error) {
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if ld.pos.trimmed(floor) {
		return false, nil
	}
	ids, err := c.logged(ctx, tx, t, ld.pos)
	if err != nil {
		return false, err
	}
	if len(ids) > 10_000 {
		return false, nil
	}
	for id := range ids {
		ld.p.remove(id)
	}
	err = c.readByID(ctx, tx, t, slices.Collect(maps.Keys(ids)), &textScratch{part: true}, func(r textRow) error {
		if r.doc.owner == owner {
			ld.p.add(r.doc, r.body, r.terms)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	ld.p.maybeCompact()
	ld.pos = later(ld.pos, cur)
	c.replays.Add(1)
	return true, nil
}

// loggedSince returns the ids of kind t's rows logged since at (entries
// at does not hold), up to now.
func (c *textCache) loggedSince(ctx context.Context, db *sql.DB, t search.ContentType, at logPos) (map[int64]bool, error) {
	// Not a prepared statement on PostgreSQL: its generic plan for a
	// position that is a parameter may read the whole log (see
	// changedSince). SQLite plans each run, and parsing cost more.
	if c.prepPositions {
		if st := c.prepare(ctx, c.loggedQuery(at)); st != nil {
			return c.logged(ctx, stmtQueryer{st}, t, at)
		}
	}
	return c.logged(ctx, db, t, at)
}

// loggedQuery is logged's statement for entries past at.
func (c *textCache) loggedQuery(at logPos) string {
	where, _ := c.log.since(at)
	return `SELECT DISTINCT id FROM search_text_log WHERE ` + where + ` AND kind = ?`
}

// logged returns the ids of kind t's rows logged since at that q's
// snapshot holds.
func (c *textCache) logged(ctx context.Context, q queryer, t search.ContentType, at logPos) (map[int64]bool, error) {
	_, args := c.log.since(at)
	rows, err := q.QueryContext(ctx, c.loggedQuery(at), append(args, int(t))...)
	if err != nil {
		return nil, fmt.Errorf("search: text cache: read log of %s: %w", kinds[t].name, err)
	}
	defer rows.Close()
	ids := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("search: text cache: read log of %s: %w", kinds[t].name, err)
		}
		ids[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search: text cache: read log of %s: %w", kinds[t].name, err)
	}
	return ids, nil
}

// install puts a partition read (and caught up to c.pos or past it) in
// the cache, or remembers its owner as too big; c.mu is held. moved are
// the rows logged since the load began: only those can be in another
// owner's partition too (moved between owners since it loaded, and the
// log entry not replayed yet), and one copy only is kept.
func (c *textCache) install(t search.ContentType, owner string, ld *partRead, moved map[int64]bool) bool {
	if p := c.owned[t][owner]; p != nil {
		p.used.Store(c.clock.Add(1))
		return true
	}
	// (Held to the bound as it will be once a write changes it: a packed
	// part that fits only packed would, at its first catch-up, take the
	// whole cache with it.)
	if ld.refused || partCost(owner, ld.p)+ld.p.unpackCost() > c.limit {
		c.refuse(t, owner)
		if ld.cost > 0 {
			if len(c.ownCost[t]) >= textTooBigMax {
				clear(c.ownCost[t])
			}
			c.ownCost[t][owner] = ld.cost
		}
		return false
	}
	if ld.warm != 0 && !ld.refused && c.partialBytes()+partCost(owner, ld.p) > c.limit/10*prewarmFill {
		return false // prewarming: no room without evicting
	}
	p := ld.p
	// held follows what changes (not a recount of every partition: a
	// first search's install would cost more the more owners are held).
	for id := range moved {
		if _, ok := p.slots[id]; !ok {
			continue
		}
		for o, q := range c.owned[t] {
			if q.holds(id) {
				c.held -= partCost(o, q)
				q.remove(id)
				c.held += partCost(o, q)
			}
		}
	}
	p.hiPos = ld.pos // no row it holds is newer (moveStats)
	c.owned[t][owner] = p
	c.held += partCost(owner, p)
	p.used.Store(cmp.Or(ld.warm, c.clock.Add(1)))
	c.evict(p)
	return true
}

// textTooBigMax bounds the owners of a kind remembered as too big: under
// a tiny bound every owner is, and the names searches bring must not pile
// up unbounded (TestTextCachePartialChurnBounded); forgetting them costs
// only a listing of their rows again.
const textTooBigMax = 1024

// refuse remembers owner's rows of kind t as too big to hold; c.mu is
// held.
func (c *textCache) refuse(t search.ContentType, owner string) {
	if len(c.tooBig[t]) >= textTooBigMax {
		clear(c.tooBig[t])
		clear(c.scopeBig[t])
	}
	c.tooBig[t][owner] = true
}

// scopeOwners are the owners whose rows of kind t a search by agent can
// see: the agent, and for blocks the owners of the blocks shared with it.
func (x *Index) scopeOwners(ctx context.Context, t search.ContentType, agent string) ([]string, error) {
	owners := []string{agent}
	if t != search.Blocks {
		return owners, nil
	}
	rows, err := x.query(ctx, `SELECT DISTINCT b.owner FROM shares s JOIN blocks b ON b.id = s.block_id WHERE s.agent = ?`, agent)
	if err != nil {
		return nil, fmt.Errorf("search: read owners of blocks shared with %q: %w", agent, err)
	}
	defer rows.Close()
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			return nil, fmt.Errorf("search: read owners of blocks shared with %q: %w", agent, err)
		}
		if o != agent {
			owners = append(owners, o)
		}
	}
	return owners, rows.Err()
}

// loadAhead starts loading, each in its own goroutine, the agent's
// partitions of the kinds ts that its full-text legs will read from a
// partial cache and that are not held yet; wait returns once those loads
// end. A search's legs run one kind after another, after the vector
// cache's partitions load, so a first search would otherwise wait for
// each load in turn (on PostgreSQL each is a few round trips; on SQLite
// each is CPU that another core can take). Only loads the legs would
// make: an agent's own archival entries and messages (a blocks leg's
// owners and the lazy index come with its own run), where the leg ranks
// from the cache (no tag or metadata filter, terms the cache can match,
// the kind's statistics at hand). A load in flight is shared: the leg
// waits for it as for its own.
func (x *Index) loadAhead(ctx context.Context, ts []search.ContentType, terms []string, scope search.Scope, s *settings) (wait func()) {
	c := x.text
	if c == nil || len(ts) == 0 || scope.All || s.hasTagFilter() || len(s.Metadata) > 0 {
		return func() {}
	}
	if _, ok := cachePhrases(terms); !ok {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, t := range ts {
		if t == search.Blocks || !c.wantsLoad(t, scope.Agent) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// An error or a refusal here is the leg's to meet: it
			// loads again, or ranks in SQL.
			_, _ = c.ensure(ctx, x.db, t, scope.Agent)
		}()
	}
	return wg.Wait
}

// wantsLoad reports whether a leg of kind t would load owner's partition
// now: the cache is partial, keeps (or reads from the engine) the kind's
// statistics, and neither holds the partition nor knows it too big.
func (c *textCache) wantsLoad(t search.ContentType, owner string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.partial || c.owned[t][owner] != nil || c.tooBig[t][owner] {
		return false
	}
	if c.stats != nil {
		return true
	}
	st := c.gstats[t]
	return st != nil && st.loaded && st.complete
}

// partialFTS answers a full-text leg from a partial cache: the scope's
// owners' partitions (loaded if need be), ranked with the engine's
// store-wide statistics. ok is false when the leg must rank in SQL: a
// search over every owner, or an owner whose rows cannot be held.
func (x *Index) partialFTS(ctx context.Context, k *kind, terms, phrases []string, f textFilter, limit int, pull float64) (hits []textHit, ok bool, err error) {
	if f.all {
		return nil, false, nil
	}
	c := x.text
	owners, err := x.scopeOwners(ctx, k.t, f.agent)
	if err != nil {
		return nil, false, err
	}
	if len(owners) > 1 {
		c.mu.RLock()
		big := c.scopeBig[k.t][f.agent]
		c.mu.RUnlock()
		if big {
			return nil, false, nil
		}
	}
	if c.stats == nil && !c.ownStatsReady(x.db, k.t) {
		return nil, false, nil // a pass computes them meanwhile
	}
	for _, o := range owners {
		if held, err := c.ensure(ctx, x.db, k.t, o); !held || err != nil {
			return nil, false, err
		}
	}
	var st textStats
	if c.stats == nil {
		if st, ok = c.ownStats(k.t, phrases); !ok {
			return nil, false, nil // dropped while the partitions loaded
		}
	} else if st, err = c.statsFor(ctx, x.db, k.t, terms, phrases); err != nil {
		return nil, false, err
	}
	hits, held, err := c.searchOwners(k.t, owners, phrases, st, f.keep, limit, pull)
	if !held && err == nil && len(owners) > 1 {
		// A partition of the scope went while the others loaded: the
		// scope does not fit (TestTextCachePartialSharedScopeThrash).
		c.mu.Lock()
		if c.partial {
			if len(c.scopeBig[k.t]) >= textTooBigMax {
				clear(c.scopeBig[k.t])
			}
			c.scopeBig[k.t][f.agent] = true
		}
		c.mu.Unlock()
	}
	return hits, held, err
}

// statsFor returns kind t's store-wide statistics with the df of each
// phrase (the analyzed terms; terms are the query's, which the engine
// analyzes itself), reading from the engine what is not cached.
func (c *textCache) statsFor(ctx context.Context, db *sql.DB, t search.ContentType, terms, phrases []string) (textStats, error) {
	c.mu.RLock()
	s := c.gstats[t]
	stale := s.loaded && s.stale(c.driftShare)
	out := textStats{gen: s.gen, loaded: s.loaded, complete: s.complete, rows: s.rows, tokens: s.tokens, drift: s.drift, df: map[string]int64{}}
	var miss []int
	for i, ph := range phrases {
		if n, ok := s.df[ph]; ok {
			out.df[ph] = n
		} else if !s.complete { // (complete: a term it lacks no row holds)
			miss = append(miss, i)
		}
	}
	c.mu.RUnlock()
	if c.vocab != nil && (stale || (!out.complete && (!out.loaded || len(miss) > 0))) {
		// The complete statistics, for the next searches (drifting ones
		// rank until it is done).
		c.startPass(db, t, false)
	}
	if out.loaded && len(miss) == 0 {
		return out, nil
	}
	// One snapshot, with its log position: moveStats carries the
	// statistics on from there.
	tx, cur, _, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return out, err
	}
	defer tx.Rollback()
	k := kinds[t]
	if !out.loaded {
		c.statsReads.Add(1)
		if out.rows, out.tokens, err = c.stats.TextTotals(ctx, tx, k.fts); err != nil {
			return out, fmt.Errorf("search: text cache: read %s totals: %w", k.fts, err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+k.base).Scan(&out.maxID); err != nil {
			return out, fmt.Errorf("search: text cache: read %s max id: %w", k.base, err)
		}
		out.pos = cur
	}
	for _, i := range miss {
		n, err := c.stats.TextDocFreq(ctx, tx, k.fts, terms[i])
		if err != nil {
			return out, fmt.Errorf("search: text cache: read %s df of %q: %w", k.fts, terms[i], err)
		}
		out.df[phrases[i]] = n
	}
	// The snapshot's connection goes back to the pool before c.mu is
	// taken: a catch-up holding c.mu may be waiting for a connection (a
	// pool of one: an in-memory store).
	tx.Rollback()
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.gstats[t]; c.partial && s.gen == out.gen && (!s.loaded || s.pos.equal(cur)) {
		// Nothing changed the kind since the read began, and the cached
		// values are of the same log position: keep it.
		if !s.loaded {
			s.loaded, s.rows, s.tokens, s.pos, s.maxID = true, out.rows, out.tokens, out.pos, out.maxID
		}
		if s.df == nil || s.bytes > c.limit/textStatsShare {
			s.df, s.bytes = map[string]int64{}, 0
		}
		for _, i := range miss {
			if _, ok := s.df[phrases[i]]; !ok {
				s.df[phrases[i]] = out.df[phrases[i]]
				s.bytes += textCostTerm + int64(len(phrases[i]))
			}
		}
		c.evict(nil)
	}
	return out, nil
}

// searchOwners ranks kind t's rows of owners' partitions matching any of
// terms that keep passes, with st's statistics (what FTS5's bm25 reads),
// by score then id, and returns the first limit; held is false when a
// partition was evicted since it was ensured.
func (c *textCache) searchOwners(t search.ContentType, owners, terms []string, st textStats, keep func(*textDoc) bool, limit int, pull float64) (hits []textHit, held bool, err error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.partial {
		return nil, false, nil
	}
	var parts []*textPart
	for _, o := range owners {
		p := c.owned[t][o]
		if p == nil {
			return nil, false, nil
		}
		parts = append(parts, p)
	}
	if st.rows <= 0 || limit <= 0 {
		return nil, true, nil
	}
	nRow := st.rows
	avgdl := float64(st.tokens) / float64(nRow) // (drifting: apply keeps tokens >= rows)
	better := func(a, b textHit) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	type scored struct {
		p       *textPart
		scores  []float64
		touched []int32
	}
	var all []scored
	var buf []posting // each packed list's postings, decoded in turn
	for _, p := range parts {
		scores := make([]float64, len(p.docs))
		var touched []int32
		for _, term := range terms {
			id, ok := p.termID(term)
			if !ok {
				continue
			}
			nHit := st.df[term]
			if st.drift > 0 {
				// Drifting counts can fall short of the rows here (a
				// rewrite followed approximately, then deleted exactly):
				// those live in this partition are counted at least.
				nHit = max(nHit, int64(p.df[id]))
			}
			if nHit == 0 {
				continue
			}
			// As textCache.search (fts5Bm25Function's expressions).
			touched = p.addBM25(p.scanList(id, &buf), bm25IDF(nRow, nHit), avgdl, scores, touched)
		}
		for _, slot := range touched {
			d := &p.docs[slot]
			if !keep(d) {
				continue
			}
			h := textHit{id: d.id, score: -scores[slot]}
			i, _ := slices.BinarySearchFunc(hits, h, better)
			if i < limit {
				hits = slices.Insert(hits, i, h)
				if len(hits) > limit {
					hits = hits[:limit]
				}
			}
		}
		if pull > 0 {
			all = append(all, scored{p, scores, touched})
		}
	}
	keyOf := func(id int64) (string, bool, bool) {
		for _, sc := range all {
			if slot, in := sc.p.slots[id]; in {
				return sc.p.session(slot, false)
			}
		}
		return "", false, false
	}
	if floor, ok := cacheFloor(hits, limit, pull, keyOf); ok {
		n := len(hits)
		for _, sc := range all {
			for _, slot := range sc.touched {
				d := &sc.p.docs[slot]
				if h := (textHit{id: d.id, score: -sc.scores[slot]}); sessionExtra(hits[:n], h, floor) && keep(d) {
					hits = append(hits, h)
				}
			}
		}
		hits = sessionSort(hits, limit)
	}
	return hits, true, nil
}

// partialMaxScore is textCache.maxScore over a partial cache's store-wide
// statistics of t: ok only while they hold every phrase's count; c.mu is
// held.
func (c *textCache) partialMaxScore(t search.ContentType, phrases []string) (float64, bool) {
	s := c.gstats[t]
	if s == nil || !s.loaded || (s.complete && s.rows <= 0) {
		return 0, false // (a whole cache of no rows has no maximum either)
	}
	df := make([]int64, len(phrases))
	for i, ph := range phrases {
		n, ok := s.df[ph]
		if !ok && !s.complete {
			return 0, false
		}
		df[i] = n
	}
	return bm25Max(s.rows, df), true
}

// HoldOwner loads owner's partition of content type t into a partial text
// cache ahead of a write that changes or deletes rows of the owner, when
// the cache keeps that type's store-wide statistics: the catch-up after
// the write then moves the statistics by what the rows held. A change to
// a row no resident partition holds drops them instead, and every agent's
// next search of the type counts its terms in the whole store again. So
// the owner pays for reading its own rows (once: the partition stays
// resident as any searched one), not every other agent for counting the
// store's. It does nothing when the cache holds every row or none, or
// keeps no statistics of t yet; a load that fails or is refused (the
// owner's rows exceed the bound) leaves the write to drop them as before.
func (x *Index) HoldOwner(ctx context.Context, t search.ContentType, owner string) {
	if !x.WantsHold(t, owner) {
		return
	}
	c := x.text
	if _, err := c.ensure(ctx, x.db, t, owner); err != nil && ctx.Err() == nil {
		c.ld.log.Warn("search: text cache: could not load a partition ahead of a write; the write drops the statistics",
			"type", kinds[t].name, "owner", owner, "err", err)
	}
}

// WantsHold reports whether HoldOwner would load owner's partition of t
// now: the text cache is partial, keeps statistics of t, and does not
// hold the partition. A writer that must look first to know whether its
// write changes rows the owner has (an insert merged into a duplicate)
// looks only then.
func (x *Index) WantsHold(t search.ContentType, owner string) bool {
	c := x.text
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.gstats[t]
	return c.partial && s != nil && s.loaded && c.owned[t][owner] == nil && !c.tooBig[t][owner]
}
