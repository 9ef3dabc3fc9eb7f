package searchindex

import (
	"context"
	"maps"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// TextCacheAnswers reports how many full-text legs x's text cache ranked
// (not handed back to SQL), so tests can tell the cache did the work.
func TextCacheAnswers(x *Index) int64 { return x.textAnswers.Load() }

// SetBeforeFill makes fn run in every search of x between ranking and the
// page's row fetch (where a concurrent write can slip in).
func SetBeforeFill(x *Index, fn func()) { x.beforeFill = fn }

// TextFlightRunning reports whether x's text cache is building or
// catching up in the background.
func TextFlightRunning(x *Index) bool { return x.text.ld.running() }

// TextCacheLoaded reports whether x's text cache has been built.
func TextCacheLoaded(x *Index) bool {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	return x.text.pos.valid() && !x.text.partial
}

// TextCachePartial reports whether x's text cache holds only some owners'
// partitions, how many, and the bytes it charges against its bound.
func TextCachePartial(x *Index) (partial bool, partitions int, bytes int64) {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	for _, parts := range x.text.owned {
		partitions += len(parts)
	}
	return x.text.partial, partitions, x.text.partialBytes()
}

// TextCacheHeld reports whether x's partial text cache holds owner's
// partition of kind t.
func TextCacheHeld(x *Index, t search.ContentType, owner string) bool {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	return x.text.owned[t][owner] != nil
}

func TextCacheFilters(x *Index) int64 { return x.textFilters.Load() }

// TextCacheRows counts the pages whose rows x's text cache supplied.
func TextCacheRows(x *Index) int64 { return x.textRows.Load() }

// TextCacheSize is x's text cache's estimated size in bytes.
func TextCacheSize(x *Index) int64 {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	return x.text.bytes()
}

// VectorCacheAnswers reports how many KNN runs x's vector cache answered.
func VectorCacheAnswers(x *Index) int64 { return x.vecAnswers.Load() }

// VectorCacheSize is what x's vector cache charges against its bound.
func VectorCacheSize(x *Index) int64 {
	x.cache.mu.RLock()
	defer x.cache.mu.RUnlock()
	return int64(x.cache.rows) * x.cache.vecRowBytes()
}

// TextCacheIndexSize is x's text cache's estimated size without the rows'
// bodies; TextCacheHoldsRows reports whether it holds them.
func TextCacheIndexSize(x *Index) int64 {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	var n int64
	for _, p := range x.text.parts {
		n += p.bytes
	}
	return n
}

func TextCacheHoldsRows(x *Index) bool {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	return x.text.parts[search.Archival] != nil && x.text.parts[search.Archival].bodies != nil
}

// TextCacheRetryAt is when x's text cache may start a build again after a
// failed one (zero when the last build did not fail).
func TextCacheRetryAt(x *Index) time.Time {
	l := x.text.ld
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lastErr == nil {
		return time.Time{}
	}
	return l.failedAt.Add(l.backoff)
}

// SetTextCatchUpHook makes fn run at the start of every background
// catch-up (build) of x's text cache, with the flight's context.
func SetTextCatchUpHook(x *Index, fn func(context.Context)) { x.text.beforeCatchUp = fn }

// SetTextBackoff sets the back-off after a first failed build of x's text
// cache (a second by default).
func SetTextBackoff(x *Index, d time.Duration) {
	x.text.ld.mu.Lock()
	defer x.text.ld.mu.Unlock()
	x.text.ld.firstBackoff = d
}

// TextLogReads counts the syncs of x's text cache that read its change log.
func TextLogReads(x *Index) int64 { return x.text.logReads.Load() }

// ForceTextPartial makes x's text cache go partial at its build, whatever
// the store's size (on a dialect with driver.TextStats).
func ForceTextPartial(x *Index) { x.text.forcePartial = true }

// SetTextLoadHook makes fn run in every partition load of x's partial
// text cache once the partition's rows are read, with the load's context.
func SetTextLoadHook(x *Index, fn func(ctx context.Context, t search.ContentType, owner string)) {
	x.text.beforeLoad = fn
}

// TextLoadReplays counts the partition loads of x's partial text cache
// caught up past the snapshot they read.
func TextLoadReplays(x *Index) int64 { return x.text.replays.Load() }

// TextRowsAnalyzed counts the rows x's text cache read and analyzed.
func TextRowsAnalyzed(x *Index) int64 { return x.text.analyzed.Load() }

// TextStatsReads counts the reads of a content type's store-wide totals
// by x's partial text cache (each one after its statistics were dropped).
func TextStatsReads(x *Index) int64 { return x.text.statsReads.Load() }

// SetClock makes x's reranker back-off read now instead of time.Now.
func SetClock(x *Index, now func() time.Time) { x.now = now }

// TextCacheHeldBytes is what x's partial text cache's partitions hold.
func TextCacheHeldBytes(x *Index) int64 {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	return x.text.held
}

// TextCacheHolds reports whether x's partial text cache holds owner's
// partition of kind t (resident) and whether it holds row id (held).
func TextCacheHolds(x *Index, t search.ContentType, owner string, id int64) (resident, held bool) {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	p := x.text.owned[t][owner]
	if p == nil {
		return false, false
	}
	_, held = p.slots[id]
	return true, held
}

// For the ranking-variant harness (rankvariants_test.go): the text
// cache's query analysis and idf.
var (
	CachePhrases   = cachePhrases
	BM25IDFForTest = bm25IDF
)

// TextStatsPasses counts the statistics passes x's partial text cache ran
// to the end (a dialect without TextStats: PostgreSQL).
func TextStatsPasses(x *Index) int64 { return x.text.passes.Load() }

// TextStatsPassTime is the time x's statistics passes ran, ended or not.
func TextStatsPassTime(x *Index) time.Duration { return time.Duration(x.text.passTime.Load()) }

// SetTextStatsRest sets whether a statistics pass of x rests before the
// next (passRest; on by default); set before x's first search.
func SetTextStatsRest(x *Index, on bool) { x.text.restOff = !on }

// WaitTextStatsPasses waits for the statistics passes x runs now.
func WaitTextStatsPasses(x *Index) {
	x.text.passMu.Lock()
	var running []chan struct{}
	for _, done := range x.text.passing {
		running = append(running, done)
	}
	x.text.passMu.Unlock()
	for _, done := range running {
		<-done
	}
}

// TextStatsDrops counts the loaded statistics x's partial text cache
// dropped (a change its catch-ups could not follow).
func TextStatsDrops(x *Index) int64 { return x.text.drops.Load() }

// TextStatsCounted counts the rows x's statistics passes analyzed.
func TextStatsCounted(x *Index) int64 { return x.text.counted.Load() }

// TextStatsReady reports whether x's partial text cache has its own
// statistics of kind t (a dialect without driver.TextStats).
func TextStatsReady(x *Index, t search.ContentType) bool {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	s := x.text.gstats[t]
	return x.text.partial && s != nil && s.loaded && s.complete
}

// SetTextStatsHook makes fn run in every statistics pass of x's partial
// text cache once its rows are counted, before they are installed.
func SetTextStatsHook(x *Index, fn func(ctx context.Context, t search.ContentType)) {
	x.text.afterCount = fn
}

// SetTextReadBySel has x's text cache build its whole copy, and count
// statistics, reading every row with the store-wide query (not owner by
// owner).
func SetTextReadBySel(x *Index) { x.text.readBySel = true }

// TextStatsOf is kind t's statistics as one pass of x's text cache
// counts them now: rows, tokens and every term's df; bySel reads every
// row with the store-wide query rather than owner by owner.
func TextStatsOf(ctx context.Context, x *Index, t search.ContentType, bySel bool) (rows, tokens int64, df map[string]int64, err error) {
	x.text.readBySel = bySel
	defer func() { x.text.readBySel = false }()
	s, err := x.text.countStats(ctx, x.db, t)
	if err != nil {
		return 0, 0, nil, err
	}
	return s.rows, s.tokens, s.df, nil
}

// TextStatsReplays counts the statistics passes of x's partial text cache
// moved past their snapshot by the log.
func TextStatsReplays(x *Index) int64 { return x.text.statsLate.Load() }

// SetTextCatchUpMax sets how many changed rows a catch-up of x's partial
// text cache replays before it starts over the kinds they are of
// (textCatchUpMax by default).
func SetTextCatchUpMax(x *Index, n int) { x.text.catchUpMax = n }

// ArchivalOwnQuery is the query a partition load of archival entries
// reads an owner's rows with in dialect d ("" when d reads them with
// their neighbours from archival_links).
func ArchivalOwnQuery(d driver.Dialect) string { return textRows(d)[search.Archival].own }

// ReadArchivalThroughLinks makes x's partition loads read archival
// entries with their neighbours from archival_links, as a dialect
// without driver.ArchivalConversationer does (for comparing the costs).
func ReadArchivalThroughLinks(x *Index) {
	rows := maps.Clone(x.text.rows)
	q := rows[search.Archival]
	q.own = ""
	rows[search.Archival] = q
	x.text.rows = rows
}

// SetTextScanFault makes the text cache's reads fail on the rows f
// returns an error for (nil: none).
func SetTextScanFault(x *Index, f func(id int64) error) {
	if f == nil {
		x.text.scanFault.Store(nil)
		return
	}
	x.text.scanFault.Store(&f)
}

// MetaConversation is metaConversation: the conversation key the text
// cache reads from an entry's metadata.
func MetaConversation(meta string, jsonb bool) (key string, named, read bool) {
	return metaConversation(meta, jsonb)
}

// TextByIDPrepared counts the reads by id x's text cache holds prepared,
// and those it holds as none (read unprepared: no room for them).
func TextByIDPrepared(x *Index) (held, none int) {
	c := x.text
	c.byIDMu.Lock()
	defer c.byIDMu.Unlock()
	for _, st := range c.byID {
		if st != nil {
			held++
		} else {
			none++
		}
	}
	return held, none
}

// PrepareTextByID runs the preparation a catch-up of x's text cache runs
// first, with ctx.
func PrepareTextByID(ctx context.Context, x *Index) { x.text.prepareByID(ctx) }

// TextPartsSaved, TextPartsStored and TextPartsSkipped report how many
// partitions x's text cache wrote to search_text_parts, loaded from there,
// and did not write because their owner's rows had changed.
func TextPartsSaved(x *Index) int64   { return x.text.saves.saved.Load() }
func TextPartsStored(x *Index) int64  { return x.text.saves.stored.Load() }
func TextPartsSkipped(x *Index) int64 { return x.text.saves.skipped.Load() }

// TextPartsAtOnce counts the stored partitions x's text cache caught up
// to the log in one statement (no row of their owner's logged since).
func TextPartsAtOnce(x *Index) int64 { return x.text.saves.atOnce.Load() }

// TextPartsChanged counts the loads x's text cache gave up because the
// stored part they waited for the bound to read changed meanwhile.
func TextPartsChanged(x *Index) int64 { return x.text.saves.changed.Load() }

// TextPartRereads counts the stored parts x's text cache read again once
// their decode fit the bound.
func TextPartRereads(x *Index) int64 { return x.text.saves.rereads.Load() }

// TextInflight is what x's text cache's loads in flight hold of its bound.
func TextInflight(x *Index) int64 {
	x.text.loadMu.Lock()
	defer x.text.loadMu.Unlock()
	return x.text.inflight
}

// TextPartSaveBusy counts the tries of x's partition saves that found
// the part's lock busy (TextPartLocker).
func TextPartSaveBusy(x *Index) int64 { return x.text.saves.busy.Load() }

// WaitTextPartSaves waits for the partition saves x's text cache runs.
func WaitTextPartSaves(x *Index) { x.text.saves.wg.Wait() }

// SetTextPartsOff turns x's stored partitions off (neither read nor
// written).
func SetTextPartsOff(x *Index) { x.text.saves.off = true }

// SetTextPartSaveHook makes fn run in each partition save of x between
// its encoding and its write.
func SetTextPartSaveHook(x *Index, fn func()) { x.text.saves.beforeWrite = fn }

// SetTextPartSaveTxHook makes fn run in each partition save of x inside
// its write transaction, its locks held and its check passed, before its
// insert.
func SetTextPartSaveTxHook(x *Index, fn func()) { x.text.saves.inWrite = fn }

// SetTextPartsReadOff makes x read partitions from their rows, never from
// stored parts (it still saves them).
func SetTextPartsReadOff(x *Index) { x.text.saves.readOff = true }

// TextHeldDrift is how far x's partial text cache's count of its
// partitions' bytes is from their sum (0 when it follows every change).
func TextHeldDrift(x *Index) int64 {
	c := x.text
	c.mu.Lock()
	defer c.mu.Unlock()
	held := c.held
	c.recount()
	drift := held - c.held
	c.held = held
	return drift
}

// WaitPrewarm waits (up to a minute) for x's prewarming to end and
// reports how many partitions it loaded; ok is false when it did not
// load the recorded set in time.
func WaitPrewarm(x *Index) (warmed int, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if x.WaitPrewarm(ctx) != nil {
		return 0, false
	}
	x.prewarmMu.Lock()
	pw := x.prewarm
	x.prewarmMu.Unlock()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.warmed, pw.loaded
}

// SetWarmRecordEvery makes x's prewarming, started after, record its
// warm set every d.
func SetWarmRecordEvery(x *Index, d time.Duration) { x.warmEvery = d }

// VectorCacheHeld reports whether x's partial vector cache holds owner's
// partition of kind t.
func VectorCacheHeld(x *Index, t search.ContentType, owner string) bool {
	x.cache.mu.RLock()
	defer x.cache.mu.RUnlock()
	return x.cache.parts[t][owner] != nil
}

// PrewarmedVectors is how many vector partitions x's prewarming loaded.
func PrewarmedVectors(x *Index) int {
	x.prewarmMu.Lock()
	pw := x.prewarm
	x.prewarmMu.Unlock()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.vecWarmed
}

// TextPartCost is what owner's partition of kind t charges x's partial
// text cache's bound (0 when not held).
func TextPartCost(x *Index, t search.ContentType, owner string) int64 {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	p := x.text.owned[t][owner]
	if p == nil {
		return 0
	}
	return partCost(owner, p)
}

// HoldTextReservation reserves n bytes of x's text cache's bound for
// loads in flight, as a load reading a big owner's rows does, until the
// returned func is called.
func HoldTextReservation(x *Index, n int64) func() {
	x.text.loadMu.Lock()
	x.text.inflight += n
	x.text.loadMu.Unlock()
	return func() { x.text.release(n) }
}
