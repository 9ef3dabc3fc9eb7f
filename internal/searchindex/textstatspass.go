package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// A partial text cache over a dialect without driver.TextStats (PostgreSQL,
// whose tsvector ranking has no bm25 statistics to read) computes each
// content type's store-wide statistics itself: one pass over the indexed
// text of every row (the columns and analysis a whole cache reads, in
// one snapshot with the text log's position; archival entries owner by
// owner, as partition loads read them), giving the
// rows, the tokens and the complete document-frequency map. A partial cache
// then ranks as a whole cache of the same store would, to the bit.
//
// The pass runs in the background, one per content type at a time, on
// the loader's context (Close cancels it and waits). Until a kind's
// statistics are there its searches rank in SQL, as before the cache
// existed; none waits for a pass but WarmTextCache. Catch-ups move the
// statistics along where moveStats can follow a change (rows added since,
// rows a resident partition held as counted); any other change (a delete,
// an edit of a row no partition holds, a block's text) drops them, and the
// kind's next search starts a new pass once the last one has rested
// passRest times its own time (so another process deleting rows one by
// one keeps a process counting each type's rows at most a tenth of the
// time). On PostgreSQL every log entry is
// marked changed (migration 0017 leaves the triggers as they were), so a
// supersession of a row no partition holds is such a change too. With a
// drift share (IndexOptions.TextStatsDrift; on both engines) such a
// change of an archival entry or message does not drop them: it is followed approximately
// (statsMove.unfollowed) and counted as drift, searches keep ranking over
// the partitions, and the kind's next search starts a pass (its rest
// holding) once the drift exceeds the share of its rows; WarmTextCache
// waits for exact statistics.
//
// The complete map is charged to the bound as the frequencies read
// through driver.TextStats are (each type's at most an eighth of it,
// textStatsShare); a pass stops as soon as it would take more, and the
// type ranks in SQL until a pass tried after a long back-off (ten
// minutes, doubling to an hour) finds that they fit. While a pass
// counts it holds its terms numbered (a map to an index, two int64 per
// term) and at its end a second map of them, for a moment.

// errStatsTooBig: a kind's document frequencies would take more than
// their share of the bound (textStatsShare).
var errStatsTooBig = errors.New("search: text cache: document frequencies exceed their share of the bound")

// errOwnersMissed: reading a kind owner by owner found fewer rows than
// the kind holds (eachOwnRow).
var errOwnersMissed = errors.New("search: text cache: rows no owner's query reads")

// passRest is how many times its own time a statistics pass keeps the
// next of its kind waiting, ended or not: passes then take at most about
// a tenth of the time, however often writes drop what they computed.
const passRest = 9

// passRetry is when a kind's pass may run again after a failed or
// discarded one, and the back-off that led there (big: after passes
// that found the frequencies too big).
type passRetry struct {
	at           time.Time
	backoff, big time.Duration
	// rest: until then only WarmTextCache starts a pass (passRest).
	rest time.Time
}

// ownStatsReady reports whether kind t's own statistics are computed
// (then a search ranks over the partitions); when they are not it starts
// a pass unless one runs, or one failed or found the kind's frequencies
// past their share lately.
func (c *textCache) ownStatsReady(db *sql.DB, t search.ContentType) bool {
	c.mu.RLock()
	s := c.gstats[t]
	ready := c.partial && s != nil && s.loaded && s.complete
	stale := ready && s.stale(c.driftShare)
	c.mu.RUnlock()
	if !ready || stale {
		c.startPass(db, t, false) // (drifted ones rank until it is done)
	}
	return ready
}

// ownStats returns kind t's own statistics with the df of each phrase (a
// phrase the map lacks no row holds); ok is false when there are none.
func (c *textCache) ownStats(t search.ContentType, phrases []string) (textStats, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.gstats[t]
	if !c.partial || s == nil || !s.loaded || !s.complete {
		return textStats{}, false
	}
	out := textStats{gen: s.gen, loaded: true, complete: true, pos: s.pos, maxID: s.maxID,
		rows: s.rows, tokens: s.tokens, drift: s.drift, df: make(map[string]int64, len(phrases))}
	for _, ph := range phrases {
		if n, ok := s.df[ph]; ok {
			out.df[ph] = n
		}
	}
	return out, true
}

// startPass starts kind t's statistics pass in the background, unless
// one runs, the Index is closed, a failed, discarded or too big pass
// waits out its back-off, or (unless warm: WarmTextCache asked) the last
// pass rests; it returns the running pass's done channel (nil: none
// runs).
func (c *textCache) startPass(db *sql.DB, t search.ContentType, warm bool) chan struct{} {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	if done, ok := c.passing[t]; ok {
		return done
	}
	now := time.Now()
	if c.passClosed || c.ld.life.Err() != nil || now.Before(c.passRetry[t].at) || (!warm && !c.restOff && now.Before(c.passRetry[t].rest)) {
		return nil
	}
	if c.passing == nil {
		c.passing = map[search.ContentType]chan struct{}{}
		c.passRetry = map[search.ContentType]passRetry{}
	}
	done := make(chan struct{})
	c.passing[t] = done
	c.passWG.Add(1)
	go func() {
		defer c.passWG.Done()
		ctx := c.ld.life
		start := time.Now()
		installed, err := c.statsPass(ctx, db, t)
		took := time.Since(start)
		c.passTime.Add(int64(took))
		c.ld.mu.Lock()
		first := cmp.Or(c.ld.firstBackoff, time.Second)
		c.ld.mu.Unlock()
		c.passMu.Lock()
		delete(c.passing, t)
		switch {
		case errors.Is(err, errStatsTooBig):
			// Not tried again for long (ten minutes, doubling to an
			// hour): a vocabulary seldom shrinks, and each try analyzes
			// rows until it finds out again. But not for good: one
			// row (any agent's pasted log or blob) can push it over,
			// and every agent's searches of the type would rank in SQL
			// long after it went.
			r := c.passRetry[t]
			r.big = min(max(2*r.big, 600*first), 3600*first)
			r.at = time.Now().Add(r.big)
			c.passRetry[t] = r
			c.ld.log.Warn("search: text cache: the partial cache's statistics would outgrow their share of its bound; full-text searches of this type rank in SQL",
				"type", kinds[t].name, "limit", c.limit, "retry_after", r.big)
		case err != nil && ctx.Err() != nil: // closed
		case err != nil || !installed:
			r := c.passRetry[t]
			r.backoff = min(max(2*r.backoff, first), max(first, time.Minute))
			r.at = time.Now().Add(r.backoff)
			r.rest = time.Now().Add(passRest * took)
			c.passRetry[t] = r
			retry := max(r.backoff, passRest*took)
			if err != nil {
				c.ld.log.Error("search: text cache: statistics pass failed; searching in SQL meanwhile",
					"type", kinds[t].name, "err", err, "retry_after", retry)
			} else {
				c.ld.log.Debug("search: text cache: statistics pass outrun by writes; searching in SQL meanwhile",
					"type", kinds[t].name, "retry_after", retry)
			}
		default:
			// Writes the catch-ups cannot follow (on PostgreSQL any
			// other process's delete of a row no partition here holds)
			// drop the statistics again, and the next search would start
			// another pass over every row: another waits passRest times
			// this one's time, so that each type's passes take at most a
			// tenth of a core however often they are dropped. Searches of
			// the type rank in SQL meanwhile (with a drift share, over
			// the drifting statistics).
			c.passRetry[t] = passRetry{rest: time.Now().Add(passRest * took)}
			c.passes.Add(1)
			c.ld.log.Debug("search: text cache: statistics computed", "type", kinds[t].name, "took", took, "next_pass_after", passRest*took)
		}
		c.passMu.Unlock()
		close(done)
	}()
	return done
}

// closePasses stops starting passes and waits for the running ones
// (their context, the loader's, is cancelled first).
func (c *textCache) closePasses() {
	c.passMu.Lock()
	c.passClosed = true
	c.passMu.Unlock()
	c.passWG.Wait()
}

// warmStats computes the statistics every kind lacks and waits for them
// (WarmTextCache), starting a pass again a few times while writes outrun
// them; a kind whose pass failed (logged; it waits out its back-off)
// or whose frequencies are too big is left to rank in SQL. It does not
// wait out a pass's rest (passRest): a caller who asks pays. It fails only
// when ctx ends.
func (c *textCache) warmStats(ctx context.Context, db *sql.DB) error {
	for range textLoadTries {
		var waits []chan struct{}
		for _, t := range contentKinds {
			c.mu.RLock()
			s := c.gstats[t]
			ready := !c.partial || (s != nil && s.loaded && s.complete && s.drift == 0)
			c.mu.RUnlock()
			if !ready {
				if done := c.startPass(db, t, true); done != nil {
					waits = append(waits, done)
				}
			}
		}
		if len(waits) == 0 {
			return nil
		}
		for _, done := range waits {
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("search: text cache: wait for its statistics: %w", ctx.Err())
			}
		}
	}
	return nil
}

// statsPass computes kind t's statistics over every row and installs
// them; installed is false when writes outran it (its result is of no
// use then).
func (c *textCache) statsPass(ctx context.Context, db *sql.DB, t search.ContentType) (installed bool, err error) {
	count := c.countStats
	if c.vocab != nil {
		count = c.readVocab
	}
	s, err := count(ctx, db, t)
	if err != nil {
		return false, err
	}
	if c.afterCount != nil {
		c.afterCount(ctx, t)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("search: text cache: statistics of %s: %w", kinds[t].name, err)
	}
	return c.installStats(ctx, db, t, s)
}

// countStats reads and analyzes kind t's indexed text in one snapshot:
// its log position, highest id, rows, tokens and every term's df. It
// gives up (errStatsTooBig) as soon as the terms would take more than
// their share of the bound, having analyzed no more than it took to
// find out.
//
// Archival entries (textRowQuery.bulkOwn) are read owner by owner, each
// entry's neighbours found among its owner's as a partition load finds
// them (eachOwnRow): the store-wide query joins each entry's neighbours
// in the engine, which on PostgreSQL cost about 100 µs of the server's
// CPU an entry, for every pass of every process.
func (c *textCache) countStats(ctx context.Context, db *sql.DB, t search.ContentType) (*textStats, error) {
	tx, cur, _, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	k := kinds[t]
	s := &textStats{loaded: true, complete: true, pos: cur}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+k.base).Scan(&s.maxID); err != nil {
		return nil, fmt.Errorf("search: text cache: read %s max id: %w", k.base, err)
	}
	share := c.limit / textStatsShare
	// Terms numbered as met: last[i] is the last row that held term i,
	// so a row counts once per term without a set of its own.
	index := map[string]int32{}
	var df, last []int64
	var buf []byte
	length := 0
	term := func(term []byte) {
		length++
		n, ok := index[string(term)] // no allocation for a lookup
		if !ok {
			n = int32(len(df))
			index[string(term)] = n
			df, last = append(df, 0), append(last, 0)
			s.bytes += textCostTerm + int64(len(term))
		}
		if last[n] != s.rows {
			last[n] = s.rows
			df[n]++
		}
	}
	// count adds a row's indexed text to s: its columns, a context
	// column as the pieces it joins with single spaces where pieces has
	// them (as textPart.addRow analyzes them).
	count := func(cols []sql.NullString, pieces [][]string) error {
		s.rows++
		c.counted.Add(1)
		length = 0
		for i, col := range cols {
			if i > 0 && i < len(pieces) && pieces[i] != nil {
				for _, text := range pieces[i] {
					buf = analyzer.Analyze(text, buf, term)
				}
				continue
			}
			buf = analyzer.Analyze(col.String, buf, term)
		}
		// As textDoc.length holds it (an int32).
		s.tokens += int64(int32(min(length, math.MaxInt32)))
		if s.bytes > share {
			return fmt.Errorf("%w: %s needs more than %d bytes", errStatsTooBig, k.name, share)
		}
		if cap(buf) > scratchKeepBytes {
			buf = nil
		}
		return nil
	}
	q := c.rows[t]
	bySel := !q.bulkOwn || c.readBySel
	if !bySel {
		err = c.eachOwnRow(ctx, tx, t, q, share, func(r *ownRow) error { return count(r.cols, r.pieces) })
		if errors.Is(err, errOwnersMissed) { // counted again, from nothing
			s.rows, s.tokens, s.bytes = 0, 0, 0
			clear(index)
			df, last = df[:0], last[:0]
			bySel = true
		}
	}
	if bySel {
		err = c.scan(ctx, tx, t, q.sel, nil, func(_ textDoc, _ textBody, cols []sql.NullString) error {
			return count(cols, nil)
		})
	}
	if err != nil {
		if errors.Is(err, errStatsTooBig) {
			return nil, err
		}
		return nil, fmt.Errorf("search: text cache: count %s: %w", k.name, err)
	}
	s.df = make(map[string]int64, len(index))
	for term, n := range index {
		s.df[term] = df[n]
	}
	return s, nil
}

// readVocab reads kind t's statistics from the engine (driver.TextVocabulary
// and TextTotals) in one snapshot: its log position, highest id, rows,
// tokens and every term's df. It gives up (errStatsTooBig) as soon as the
// terms would take more than their share of the bound.
func (c *textCache) readVocab(ctx context.Context, db *sql.DB, t search.ContentType) (*textStats, error) {
	tx, cur, _, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	k := kinds[t]
	c.statsReads.Add(1)
	s := &textStats{loaded: true, complete: true, pos: cur, df: map[string]int64{}}
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM `+k.base).Scan(&s.maxID); err != nil {
		return nil, fmt.Errorf("search: text cache: read %s max id: %w", k.base, err)
	}
	if s.rows, s.tokens, err = c.stats.TextTotals(ctx, tx, k.fts); err != nil {
		return nil, fmt.Errorf("search: text cache: read %s totals: %w", k.fts, err)
	}
	share := c.limit / textStatsShare
	err = c.vocab.TextVocabulary(ctx, tx, k.fts, func(term string, n int64) error {
		if n <= 0 {
			return nil
		}
		s.df[term] = n
		s.bytes += textCostTerm + int64(len(term))
		if s.bytes > share {
			return fmt.Errorf("%w: %s needs more than %d bytes", errStatsTooBig, k.name, share)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search: text cache: read %s vocabulary: %w", k.fts, err)
	}
	return s, nil
}

// installStats makes s (kind t's statistics at log position s.pos) the
// cache's, once the cache has not moved past s.pos: while it has, the
// log since s.pos is replayed onto s (replayStats), a few times at most.
// false: the cache is no longer partial, or writes outran s.
func (c *textCache) installStats(ctx context.Context, db *sql.DB, t search.ContentType, s *textStats) (bool, error) {
	for try := 0; ; try++ {
		c.mu.Lock()
		if !c.partial {
			c.mu.Unlock()
			return false, nil
		}
		if s.pos.covers(c.pos) {
			// The next catch-up moves s on from s.pos: what it replays
			// that s.pos holds is counted already (moveStats skips it).
			s.gen = c.gstats[t].gen + 1
			c.gstats[t] = s
			c.evict(nil)
			c.mu.Unlock()
			return true, nil
		}
		c.mu.Unlock()
		if try == textLoadTries {
			return false, nil
		}
		if ok, err := c.replayStats(ctx, db, t, s); err != nil || !ok {
			return false, err
		}
	}
}

// replayStats moves s (kind t's statistics at log position s.pos) to the
// log's end, as a catch-up moves them, but with no partition to tell a
// changed row's counted version: rows added since are counted, a
// message's neighbour arriving is followed, and any other change of the
// kind's text makes ok false (as would a log trimmed past s.pos).
func (c *textCache) replayStats(ctx context.Context, db *sql.DB, t search.ContentType, s *textStats) (ok bool, err error) {
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "text cache")
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if s.pos.trimmed(floor) {
		return false, nil
	}
	all, err := c.readSpans(ctx, tx, s.pos, t)
	if err != nil {
		return false, err
	}
	spans := all[t]
	ids := slices.Sorted(maps.Keys(spans))
	if len(ids) > 10_000 || (t == search.Blocks && len(ids) > 0) {
		return false, nil // (blocks: as partialCatchUp, no deltas)
	}
	staged, err := c.stage(ctx, tx, t, ids, &textScratch{part: true}, nil)
	if err != nil {
		return false, err
	}
	// Exact, never approximate: with no partition to tell a change's
	// counted version, every change would drift, and the pass is to make
	// the statistics exact (one overtaken by such changes is tried again).
	m := &statsMove{df: map[string]int64{}, maxID: s.maxID, unmarked: c.stats == nil}
	var arrivals map[msgPlace]*textRow
	for _, r := range staged {
		m.row(s, r, spans, staged, &arrivals, func() *textPart { return nil })
	}
	if !m.apply(s, c.limit/textStatsShare) {
		return false, nil
	}
	s.pos = later(s.pos, cur)
	c.statsLate.Add(1)
	return true, nil
}
