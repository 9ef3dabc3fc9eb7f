package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// MetaTextWarmSet is the meta key under which an Index with
// IndexOptions.Prewarm records the partitions its partial text cache
// holds (JSON, most recently used first), for the next such Index to load
// as it opens.
const MetaTextWarmSet = "search_text_warm"

// warmSetMax bounds the partitions a warm set names (a 64 MiB cache of
// the smallest partitions holds a few thousand).
const warmSetMax = 8192

// warmRecordEvery is how often a prewarming Index records its warm set
// beside the record Close makes: a process killed keeps the set it had
// then.
const warmRecordEvery = 5 * time.Minute

// prewarmFill is the share of the text cache's bound prewarming fills
// (in tenths): it stops short of it, so that its loads evict nothing, a
// search's partition loaded meanwhile included.
const prewarmFill = 9

// warmEntry is one partition of a recorded warm set.
type warmEntry struct {
	Kind  int    `json:"kind"`
	Owner string `json:"owner"`
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
	// loaded is set once the recorded set is loaded (or there was none
	// to load): until then the cache holds part of it, and a record
	// would replace the whole set by that part.
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
// until one more would fill the cache past 90%, and, with a vector
// cache, readies it (WarmVectorCache) and, when it is partial, loads the
// same owners' vectors the same way. It records the text cache's own set
// (MetaTextWarmSet) every five minutes and when x closes, once the
// recorded one has loaded and if the cache holds partitions. A
// short-lived process should not prewarm: its loads would be spent on
// agents it never serves, and its record would replace the server's.
// Calling it twice, or without a text cache, does nothing.
func (x *Index) StartPrewarm() {
	if x.text == nil || x.prewarm != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	pw := &prewarmer{stop: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	x.prewarm = pw
	go func() {
		defer close(pw.done)
		err := x.prewarmText(ctx)
		close(pw.ready)
		if err != nil && ctx.Err() == nil {
			x.text.ld.log.Warn("search: text cache: prewarming failed", "err", err)
		}
		tick := time.NewTicker(cmp.Or(x.warmEvery, warmRecordEvery))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := x.recordWarmSet(ctx); err != nil && ctx.Err() == nil {
					x.text.ld.log.Warn("search: text cache: recording the warm set failed", "err", err)
				}
			}
		}
	}()
}

// WaitPrewarm waits until the prewarming StartPrewarm started is done
// loading (at once when none was started): a server may hold its
// readiness until then. It reports ctx's error if ctx ends first.
func (x *Index) WaitPrewarm(ctx context.Context) error {
	if x.prewarm == nil {
		return nil
	}
	select {
	case <-x.prewarm.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prewarmText readies the text cache (and the vector cache) and loads
// the recorded warm set into each.
func (x *Index) prewarmText(ctx context.Context) error {
	c := x.text
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, ErrCacheBudget) {
		return err
	}
	pw := x.prewarm
	var set []warmEntry
	textPartial := c.isPartial()
	if textPartial {
		var err error
		if set, err = x.readWarmSet(ctx); err != nil {
			return err
		}
	}
	var warmed int
	if textPartial {
		var loaded []loadedPart
		for _, e := range set {
			if c.prewarmFull() {
				break
			}
			k := partKey{search.ContentType(e.Kind), e.Owner}
			held, err := c.ensure(ctx, x.db, k.t, k.owner)
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case err != nil:
				c.ld.log.Debug("search: text cache: partition of the warm set not loaded", "kind", kinds[k.t].name, "owner", k.owner, "err", err)
			case held:
				c.mu.RLock()
				if p := c.owned[k.t][k.owner]; p != nil {
					loaded = append(loaded, loadedPart{k, p.used.Load()})
				}
				c.mu.RUnlock()
			}
		}
		c.mu.RLock()
		restamp(loaded, func(k partKey) *atomic.Int64 {
			if p := c.owned[k.t][k.owner]; p != nil {
				return &p.used
			}
			return nil
		}, &c.clock)
		c.mu.RUnlock()
		warmed = len(loaded)
	}
	vecWarmed, err := x.prewarmVectors(ctx, set)
	if err != nil {
		return err
	}
	pw.mu.Lock()
	pw.loaded, pw.last, pw.warmed, pw.vecWarmed = true, set, warmed, vecWarmed
	pw.mu.Unlock()
	c.ld.log.Debug("search: caches prewarmed", "text_partitions", warmed, "vector_partitions", vecWarmed, "recorded", len(set))
	return nil
}

// loadedPart is a partition prewarming loaded, with its use stamp then.
type loadedPart struct {
	k     partKey
	stamp int64
}

// restamp stamps the loaded partitions again from the last loaded to the
// first, each that nothing used since its load (its stamp unchanged):
// loaded most recently used first, the warm set's head had the oldest
// stamps, and a full cache would have evicted it first. The cache's lock
// is held (read: stamps are stored under it, as every use's).
func restamp(loaded []loadedPart, used func(partKey) *atomic.Int64, clock *atomic.Int64) {
	for _, l := range slices.Backward(loaded) {
		if u := used(l.k); u != nil && u.Load() == l.stamp {
			u.Store(clock.Add(1))
		}
	}
}

// prewarmVectors readies the vector cache (WarmVectorCache) and, when it
// is partial, loads the vectors of the warm set's partitions of the kinds
// that have them, until one more partition of the held ones' mean size
// would pass 90% of its bound. The text cache's warm set stands for the
// vector cache's: an agent searched lately searches both.
func (x *Index) prewarmVectors(ctx context.Context, set []warmEntry) (int, error) {
	c := x.cache
	if c == nil {
		return 0, nil
	}
	if err := x.WarmVectorCache(ctx); err != nil && !errors.Is(err, ErrCacheBudget) {
		return 0, err
	}
	if !c.isPartial() {
		return 0, nil
	}
	var loaded []loadedPart
	for _, e := range set {
		k := partKey{search.ContentType(e.Kind), e.Owner}
		if kinds[k.t].vec == "" {
			continue
		}
		if c.prewarmFull() {
			break
		}
		held, err := c.ensure(ctx, x.query, k.t, k.owner)
		switch {
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case err != nil:
			c.ld.log.Debug("search: vector cache: partition of the warm set not loaded", "kind", kinds[k.t].name, "owner", k.owner, "err", err)
		case held:
			c.mu.RLock()
			if p := c.parts[k.t][k.owner]; p != nil {
				loaded = append(loaded, loadedPart{k, p.used.Load()})
			}
			c.mu.RUnlock()
		}
	}
	c.mu.RLock()
	restamp(loaded, func(k partKey) *atomic.Int64 {
		if p := c.parts[k.t][k.owner]; p != nil {
			return &p.used
		}
		return nil
	}, &c.clock)
	c.mu.RUnlock()
	return len(loaded), nil
}

// prewarmFull reports whether prewarming should load no more vectors:
// those held and one more partition of the held ones' mean size would
// pass prewarmFill tenths of the bound.
func (c *vecCache) prewarmFull() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, parts := range c.parts {
		n += len(parts)
	}
	held := int64(c.rows) * c.vecRowBytes()
	next := int64(0)
	if n > 0 {
		next = held / int64(n)
	}
	return held+next > c.limit/10*prewarmFill
}

// prewarmFull reports whether prewarming should load no more: what the
// cache holds (the statistics included) and one more partition of the
// held ones' mean size would pass prewarmFill tenths of the bound.
func (c *textCache) prewarmFull() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, parts := range c.owned {
		n += len(parts)
	}
	next := int64(0)
	if n > 0 {
		next = c.held / int64(n)
	}
	return c.partialBytes()+next > c.limit/10*prewarmFill
}

// readWarmSet reads the recorded warm set; a record it cannot use (not
// the JSON a record writes) is an empty set.
func (x *Index) readWarmSet(ctx context.Context) ([]warmEntry, error) {
	var v string
	err := x.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, MetaTextWarmSet).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("search: read warm set: %w", err)
	}
	set, err := parseWarmSet(v)
	if err != nil {
		x.text.ld.log.Warn("search: text cache: recorded warm set unusable; not prewarming", "err", err)
		return nil, nil
	}
	return set, nil
}

// parseWarmSet decodes a recorded warm set, keeping the entries that name
// a stored kind's owner once each, at most warmSetMax of them.
func parseWarmSet(v string) ([]warmEntry, error) {
	var raw []warmEntry
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, err
	}
	set := make([]warmEntry, 0, min(len(raw), warmSetMax))
	seen := make(map[warmEntry]bool, len(set))
	for _, e := range raw {
		if len(set) == warmSetMax {
			break
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
			all = append(all, used{warmEntry{int(t), owner}, p.used.Load()})
		}
	}
	slices.SortFunc(all, func(a, b used) int { return cmp.Compare(b.used, a.used) })
	set := make([]warmEntry, 0, min(len(all), warmSetMax))
	for _, u := range all[:min(len(all), warmSetMax)] {
		set = append(set, u.e)
	}
	return set
}

// recordWarmSet writes the text cache's warm set under MetaTextWarmSet,
// unless the recorded set is still loading or the cache holds no
// partitions (a process that searched nothing leaves the last set).
func (x *Index) recordWarmSet(ctx context.Context) error {
	pw := x.prewarm
	pw.mu.Lock()
	loaded, last := pw.loaded, pw.last
	pw.mu.Unlock()
	if !loaded {
		return nil
	}
	set := x.text.warmSet()
	if len(set) == 0 || slices.Equal(set, last) {
		return nil
	}
	data, err := json.Marshal(set)
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
	pw := x.prewarm
	if pw == nil {
		return
	}
	pw.stopped.Do(func() {
		pw.stop()
		<-pw.done
		ctx, cancel := context.WithTimeout(context.Background(), partSaveWait)
		defer cancel()
		if err := x.recordWarmSet(ctx); err != nil {
			x.text.ld.log.Warn("search: text cache: recording the warm set failed", "err", err)
		}
	})
}
