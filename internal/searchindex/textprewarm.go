package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// MetaTextWarmSet is the meta key under which a prewarming Index
// (StartPrewarm) records the partitions its partial text cache holds
// (JSON, most recently used first), for the next such Index to load as
// it opens.
const MetaTextWarmSet = "search_text_warm"

// warmSetMax bounds the partitions a warm set names (a 64 MiB cache of
// the smallest partitions holds a few thousand).
const warmSetMax = 8192

// warmRecordEvery is how often a prewarming Index records its warm set
// beside the record Close makes: a process killed keeps the set it had
// then.
const warmRecordEvery = 5 * time.Minute

// warmRecordWait bounds Close's record of the warm set, its wait for
// the write lock included: a record is worth less than a prompt Close.
const warmRecordWait = time.Second

// warmSetBytesMax bounds a recorded warm set's JSON: one larger (not
// written by a record) is not read.
const warmSetBytesMax = 4 << 20

// prewarmFill is the share of the text cache's bound prewarming fills
// (in tenths): it stops short of it, so that its loads evict nothing, a
// search's partition loaded meanwhile included.
const prewarmFill = 9

// warmEntry is one partition of a recorded warm set.
type warmEntry struct {
	Kind  int
	Owner string
}

// warmRecord is a warmEntry as recorded: an owner whose name is not UTF-8
// (JSON would replace its bad bytes) goes in OwnerBytes (base64).
type warmRecord struct {
	Kind       int    `json:"kind"`
	Owner      string `json:"owner,omitempty"`
	OwnerBytes []byte `json:"owner_bytes,omitempty"`
}

// prewarmer is an Index's prewarming: the goroutine that loads the
// recorded set and records the cache's own from time to time.
type prewarmer struct {
	stop    context.CancelFunc
	done    chan struct{}
	stopped sync.Once

	// ready closes when the recorded set is loaded, or prewarming ended
	// without loading it.
	ready chan struct{}

	mu sync.Mutex
	// loaded is set once prewarming ended other than by Close (the
	// recorded set loaded, or prewarming failed): until then the cache
	// holds part of the set, and a record would replace the whole set by
	// that part.
	loaded bool
	// last is the set last recorded (or read), to skip a record that
	// would change nothing.
	last []warmEntry
	// For tests: done loading, with how many partitions loaded (text,
	// vectors).
	warmed, vecWarmed int
}

// StartPrewarm has x warm its text cache in the background, for a
// long-lived process (a server) whose agents should not each pay for
// loading their partitions in their first search after a restart. It
// readies the cache as WarmTextCache does (a whole copy built, or a
// partial one's statistics read), then loads the partitions of the warm
// set the last prewarming Index recorded, most recently used first,
// leaving out any that would fill the cache past 90% of its bound (its
// loads evict nothing), and, with a vector
// cache, readies it (WarmVectorCache) and, when it is partial, loads the
// same owners' vectors the same way. It records the text cache's own set
// (MetaTextWarmSet) every five minutes and when x closes, once the
// recorded one has loaded and if the cache holds partitions. A
// short-lived process should not prewarm: its loads would be spent on
// agents it never serves, and its record would replace the server's.
// Calling it twice, after Close, or without a text cache, does nothing.
func (x *Index) StartPrewarm() {
	x.prewarmMu.Lock()
	defer x.prewarmMu.Unlock()
	if x.text == nil || x.prewarm != nil || x.prewarmStopped {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	pw := &prewarmer{stop: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	x.prewarm = pw
	go func() {
		defer close(pw.done)
		err := x.prewarmText(ctx, pw)
		if ctx.Err() == nil {
			// Done, or failed (the caches recover by themselves): the
			// cache's set is this process's to record from now on.
			pw.mu.Lock()
			pw.loaded = true
			pw.mu.Unlock()
		}
		close(pw.ready)
		if err != nil && ctx.Err() == nil {
			x.text.ld.log.Warn("search: prewarming failed", "err", err)
		}
		tick := time.NewTicker(cmp.Or(x.warmEvery, warmRecordEvery))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := x.recordWarmSet(ctx, pw, false); err != nil && ctx.Err() == nil {
					x.text.ld.log.Warn("search: text cache: recording the warm set failed", "err", err)
				}
			}
		}
	}()
}

// WaitPrewarm waits until the prewarming StartPrewarm started is done
// loading (at once when none was started): a server may hold its
// readiness until then. It reports ctx's error if ctx ends first; with a
// ctx already done it reports at once whether prewarming is done (nil)
// or not.
func (x *Index) WaitPrewarm(ctx context.Context) error {
	if x.prewarmDone() {
		return nil
	}
	x.prewarmMu.Lock()
	pw := x.prewarm
	x.prewarmMu.Unlock()
	select {
	case <-pw.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prewarmDone reports whether no prewarming was started or the one
// StartPrewarm started is done loading.
func (x *Index) prewarmDone() bool {
	x.prewarmMu.Lock()
	pw := x.prewarm
	x.prewarmMu.Unlock()
	if pw == nil {
		return true
	}
	select {
	case <-pw.ready:
		return true
	default:
		return false
	}
}

// prewarmText readies the text cache (and the vector cache) and loads
// the recorded warm set into each.
func (x *Index) prewarmText(ctx context.Context, pw *prewarmer) error {
	c := x.text
	err := x.WarmTextCache(ctx)
	if err != nil && !errors.Is(err, ErrCacheBudget) {
		return err
	}
	var set []warmEntry
	if c.isPartial() {
		if set, err = x.readWarmSet(ctx); err != nil {
			return err
		}
	}
	warmed, err := x.text.warmer(x.db).load(ctx, set)
	if err != nil {
		return err
	}
	var vecWarmed int
	if x.cache != nil {
		if err := x.WarmVectorCache(ctx); err != nil && !errors.Is(err, ErrCacheBudget) {
			return err
		}
		if x.cache.isPartial() {
			if vecWarmed, err = x.cache.warmer(x.query).load(ctx, set); err != nil {
				return err
			}
		}
	}
	pw.mu.Lock()
	pw.last, pw.warmed, pw.vecWarmed = set, warmed, vecWarmed
	pw.mu.Unlock()
	c.ld.log.Debug("search: caches prewarmed", "text_partitions", warmed, "vector_partitions", vecWarmed, "recorded", len(set))
	return nil
}

// warmer is what prewarming needs of a partial cache (text or vectors).
type warmer struct {
	name string
	// wants reports whether the cache has partitions of kind t.
	wants func(t search.ContentType) bool
	// full reports whether the cache, with one more partition of the
	// held ones' mean size, would pass prewarmFill tenths of its bound.
	full func() bool
	// resident reports whether k is held.
	resident func(k partKey) bool
	// ensure loads k where it fits, stamped used (the cache's
	// ensureFor).
	ensure    func(ctx context.Context, k partKey, used int64) (held bool, err error)
	evictions *atomic.Int64
	log       *slog.Logger
}

// load loads the partitions of set into the cache, most recently used
// first, while they fit: a partition that would fill the cache past 90%
// of its bound is not installed (ensureFor: it evicts nothing) and the
// next is tried; it stops once one more of the held ones' mean size
// would not fit, and at the first eviction (searches meanwhile filled
// the cache). Each one it loads gets a negative use stamp, -1 for
// the set's head down to -len(set): the order the last process used
// them in, each older than any use in this process (the clock counts up
// from 1), so evictions take the set's tail first, and a partition a
// search of this process used stays ahead of them all. A partition
// already held when its turn comes (a search loaded it) is left as it
// is. It returns how many it loaded.
func (w warmer) load(ctx context.Context, set []warmEntry) (int, error) {
	evictions := w.evictions.Load()
	loaded := 0
	for i, e := range set {
		k := partKey{search.ContentType(e.Kind), e.Owner}
		if !w.wants(k.t) || w.resident(k) {
			continue
		}
		if w.full() || w.evictions.Load() != evictions {
			break
		}
		held, err := w.ensure(ctx, k, -int64(i)-1)
		switch {
		case ctx.Err() != nil:
			return loaded, ctx.Err()
		case err != nil:
			w.log.Debug("search: prewarming: partition not loaded", "cache", w.name, "kind", kinds[k.t].name, "owner", k.owner, "err", err)
		case held:
			loaded++
		}
	}
	return loaded, nil
}

// warmer is the text cache's prewarming interface over db.
func (c *textCache) warmer(db *sql.DB) warmer {
	return warmer{
		name:  "text cache",
		wants: func(search.ContentType) bool { return true },
		full: func() bool {
			c.mu.RLock()
			defer c.mu.RUnlock()
			n := 0
			for _, parts := range c.owned {
				n += len(parts)
			}
			return prewarmFull(c.partialBytes(), c.held, n, c.limit)
		},
		resident: func(k partKey) bool {
			c.mu.RLock()
			defer c.mu.RUnlock()
			return c.owned[k.t][k.owner] != nil
		},
		ensure: func(ctx context.Context, k partKey, used int64) (bool, error) {
			return c.ensureFor(ctx, db, k.t, k.owner, used)
		},
		evictions: &c.evictions,
		log:       c.ld.log,
	}
}

// warmer is the vector cache's prewarming interface, reading with query.
func (c *vecCache) warmer(query func(context.Context, string, ...any) (*sql.Rows, error)) warmer {
	return warmer{
		name:  "vector cache",
		wants: func(t search.ContentType) bool { return kinds[t].vec != "" },
		full: func() bool {
			c.mu.RLock()
			defer c.mu.RUnlock()
			n := 0
			for _, parts := range c.parts {
				n += len(parts)
			}
			held := int64(c.rows) * c.vecRowBytes()
			return prewarmFull(held, held, n, c.limit)
		},
		resident: func(k partKey) bool {
			c.mu.RLock()
			defer c.mu.RUnlock()
			return c.parts[k.t][k.owner] != nil
		},
		ensure: func(ctx context.Context, k partKey, used int64) (bool, error) {
			return c.ensureFor(ctx, query, k.t, k.owner, used)
		},
		evictions: &c.evictions,
		log:       c.ld.log,
	}
}

// prewarmFull reports whether a cache holding total bytes against limit,
// parts of them n partitions of held bytes, is too full for prewarming
// to load one more partition of their mean size.
func prewarmFull(total, held int64, n int, limit int64) bool {
	next := int64(0)
	if n > 0 {
		next = held / int64(n)
	}
	return total+next > limit/10*prewarmFill
}

// readWarmSet reads the recorded warm set; a record it cannot use (not
// the JSON a record writes) is an empty set.
func (x *Index) readWarmSet(ctx context.Context) ([]warmEntry, error) {
	var v sql.NullString
	err := x.db.QueryRowContext(ctx, `SELECT CASE WHEN length(value) <= ? THEN value END FROM meta WHERE key = ?`,
		warmSetBytesMax, MetaTextWarmSet).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("search: read warm set: %w", err)
	case !v.Valid:
		x.text.ld.log.Warn("search: recorded warm set over its size bound; not prewarming", "bytes_max", warmSetBytesMax)
		return nil, nil
	}
	set, err := parseWarmSet(v.String)
	if err != nil {
		x.text.ld.log.Warn("search: text cache: recorded warm set unusable; not prewarming", "err", err)
		return nil, nil
	}
	return set, nil
}

// parseWarmSet decodes a recorded warm set, keeping the entries that name
// a stored kind's owner once each, at most warmSetMax of them.
func parseWarmSet(v string) ([]warmEntry, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, err
	}
	set := make([]warmEntry, 0, min(len(raw), warmSetMax))
	seen := make(map[warmEntry]bool, len(set))
	for _, r := range raw {
		if len(set) == warmSetMax {
			break
		}
		var w warmRecord // an entry it cannot read is passed over, not the set
		if json.Unmarshal(r, &w) != nil {
			continue
		}
		e := warmEntry{w.Kind, w.Owner}
		if e.Owner == "" {
			e.Owner = string(w.OwnerBytes)
		}
		if _, ok := kinds[search.ContentType(e.Kind)]; !ok || e.Owner == "" || seen[e] {
			continue
		}
		seen[e] = true
		set = append(set, e)
	}
	return set, nil
}

// warmSet is the partial text cache's resident partitions, most recently
// used first (nil when the cache is not partial).
func (c *textCache) warmSet() []warmEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.partial {
		return nil
	}
	type used struct {
		e    warmEntry
		used int64
	}
	var all []used
	for t, parts := range c.owned {
		for owner, p := range parts {
			if p.live > 0 { // (an owner without rows: nothing to load)
				all = append(all, used{warmEntry{int(t), owner}, p.used.Load()})
			}
		}
	}
	slices.SortFunc(all, func(a, b used) int { return cmp.Compare(b.used, a.used) })
	set := make([]warmEntry, 0, min(len(all), warmSetMax))
	size := 2
	for _, u := range all[:min(len(all), warmSetMax)] {
		// (JSON escapes a byte in six at most, and the rest of an entry
		// takes under 40.)
		if size += 40 + 6*len(u.e.Owner); size > warmSetBytesMax {
			break
		}
		set = append(set, u.e)
	}
	return set
}

// recordWarmSet writes the text cache's warm set under MetaTextWarmSet,
// unless the recorded set is still loading or the cache holds no
// partitions (a process that searched nothing leaves the last set), or,
// unless final (Close's record, after which another process's may not
// stand), the set is the one this Index last wrote.
func (x *Index) recordWarmSet(ctx context.Context, pw *prewarmer, final bool) error {
	pw.mu.Lock()
	loaded, last := pw.loaded, pw.last
	pw.mu.Unlock()
	if !loaded {
		return nil
	}
	set := x.text.warmSet()
	if len(set) == 0 || (!final && slices.Equal(set, last)) {
		return nil
	}
	recs := make([]warmRecord, len(set))
	for i, e := range set {
		recs[i].Kind = e.Kind
		if utf8.ValidString(e.Owner) {
			recs[i].Owner = e.Owner
		} else {
			recs[i].OwnerBytes = []byte(e.Owner)
		}
	}
	data, err := json.Marshal(recs)
	if err != nil {
		return err
	}
	err = x.withWriteLock(ctx, nil, func(ctx context.Context, ex driver.Execer) error {
		_, err := ex.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, MetaTextWarmSet, string(data))
		return err
	})
	if err != nil {
		return fmt.Errorf("search: record warm set: %w", err)
	}
	pw.mu.Lock()
	pw.last = set
	pw.mu.Unlock()
	return nil
}

// stopPrewarm stops the prewarming and records the warm set one last
// time (errors are logged: a store closes whether or not it could).
func (x *Index) stopPrewarm() {
	x.prewarmMu.Lock()
	pw := x.prewarm
	x.prewarmStopped = true // (no StartPrewarm after Close)
	x.prewarmMu.Unlock()
	if pw == nil {
		return
	}
	pw.stopped.Do(func() {
		pw.stop()
		<-pw.done
		ctx, cancel := context.WithTimeout(context.Background(), warmRecordWait)
		defer cancel()
		if err := x.recordWarmSet(ctx, pw, true); err != nil {
			x.text.ld.log.Warn("search: text cache: recording the warm set failed", "err", err)
		}
	})
}
