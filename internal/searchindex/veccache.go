package searchindex

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

// vecLogKeep is how many change-log entries are kept; a cache further
// behind than that reloads everything.
const vecLogKeep = 100_000

// vecCache is the optional in-process copy of the vector tables
// (IndexOptions.VectorCacheBytes): unit vectors grouped by content type and
// owner, scanned by brute force. The tables stay the source of truth. Every
// vector write (PutEmbeddings, DeleteVectors, the delete/owner triggers,
// Reembed) appends to search_vec_log in the writer's transaction, so a
// cache in any process catches up by replaying the committed entries its
// last snapshot did not hold (see driver.ChangeLog).
type vecCache struct {
	dims int
	mu   sync.RWMutex
	pos  logPos // log position applied; not valid: not loaded
	log  *changeLog
	// parts[kind][owner] holds that owner's vectors.
	parts map[search.ContentType]map[string]*vecPartition
	lru   lruQueue[*vecPartition] // eviction order (evict)
	// owners[kind][id] is the partition an id is in.
	owners map[search.ContentType]map[int64]string
	rows   int // vectors held
	fresh  logFreshness
	logIso sql.IsolationLevel // the dialect's SnapshotIsolation

	// limit bounds the bytes held (vecRowBytes per row; 0: unbounded). A
	// load or catch-up past it turns the cache partial for good: it then
	// holds only the partitions of the owners searched lately, each loaded
	// on its owner's first search (ensure) and the least recently used
	// evicted to stay within limit, so an agent's searches keep running
	// over its own vectors however many other agents the store holds. A
	// partial cache answers no search over every owner (Scope.All), nor
	// one whose owner's vectors alone exceed the bound: those run in the
	// database engine, as without a cache. The loader reports it as over
	// its bound (WarmVectorCache: ErrCacheBudget).
	limit   int64
	partial bool
	need    int          // the rows counted when it went partial (overBudget)
	clock   atomic.Int64 // the partitions' use stamps (vecPartition.used)
	// evictions counts the partitions evict dropped (prewarming stops
	// at the first).
	evictions atomic.Int64
	// background: the first load runs in the background (ld) while
	// searches ask the database engine; without one (PostgreSQL without
	// pgvector, where the cache is the only KNN) the first search loads.
	background bool
	ld         *loader
}

type vecPartition struct {
	ids  []int64
	vecs []float32 // len(ids) × dims, unit length
	pos  map[int64]int
	used atomic.Int64 // when a search last read it (partial cache: LRU)
}

// DefaultVectorCacheBytes is the vector cache's default bound on SQLite
// (IndexOptions.VectorCacheBytes): 100k 384-dimension vectors fit, 40k of
// 1,536.
const DefaultVectorCacheBytes = 256 << 20

// vecRowBytes is what one cached vector costs: its float32s, its id, its
// entries in pos and owners (estimated from Go's map layouts).
func (c *vecCache) vecRowBytes() int64 { return int64(4*c.dims) + 96 }

func newVecCache(dims int, limit int64, background bool, iso sql.IsolationLevel, cl *changeLog, log *slog.Logger) *vecCache {
	return &vecCache{dims: dims, limit: limit, background: background, logIso: iso, log: cl, ld: newLoader("vector cache", log)}
}

func (c *vecCache) overLimit() bool { return c.exceeds(c.rows) }

// exceeds reports whether rows cached vectors would exceed the bound.
func (c *vecCache) exceeds(rows int) bool {
	return c.limit > 0 && int64(rows)*c.vecRowBytes() > c.limit
}

func (c *vecCache) overBudget() error {
	return fmt.Errorf("%w: the vector cache needs more than %d bytes (IndexOptions.VectorCacheBytes %d); KNN runs in the database",
		ErrCacheBudget, int64(max(c.rows, c.need))*c.vecRowBytes(), c.limit)
}

// sync brings the cache up to date with the committed log; ready is false
// when the search must ask the database engine instead: the cache is still
// loading in the background, backing off after a failed load, over its
// bound, or closed.
func (c *vecCache) sync(ctx context.Context, db *sql.DB, query func(context.Context, string, ...any) (*sql.Rows, error)) (ready bool, err error) {
	c.mu.RLock()
	at := c.pos
	c.mu.RUnlock()
	if c.background && !at.valid() {
		// Loading (or over its bound, closed, backing off: start does
		// nothing then); no need to read the log.
		c.ld.start(func(ctx context.Context) error { return c.load(ctx, db) })
		return false, nil
	}
	ver, versioned, current := c.fresh.check(ctx)
	if current && at.valid() {
		return true, nil // nothing committed since the log was last read up to date
	}
	if at.valid() {
		var cur logPos
		var floor int64
		var changed bool
		q, args := c.log.changedSince(at)
		rows, err := query(ctx, q, args...)
		if err != nil {
			return false, fmt.Errorf("search: vector cache: read log: %w", err)
		}
		if rows.Next() {
			err = scanBounds(rows, &cur, &floor, &changed)
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return false, fmt.Errorf("search: vector cache: read log: %w", err)
		}
		if !changed && !at.trimmed(floor) {
			c.fresh.upToDate(ver, versioned)
			return true, nil // up to date (the common case: one indexed lookup)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.background && !c.pos.valid() {
		return false, nil // dropped meanwhile
	}
	wasPartial := c.partial
	if err := c.catchUp(ctx, db); err != nil {
		return false, err
	}
	var over error
	if c.overLimit() && !c.partial {
		// Outgrown: partial from now on (the partitions load again as
		// their owners search).
		over = c.overBudget()
		c.need = c.rows
		c.goPartial()
	}
	if c.partial {
		c.evict(nil)
	}
	if c.partial && !wasPartial {
		if over == nil { // went partial in a reload, refused unread
			over = c.overBudget()
		}
		c.ld.setOver(fmt.Errorf("%w; it holds the vectors of the agents searched lately", over))
	}
	return true, nil
}

// isPartial reports whether the cache holds only some owners' partitions.
func (c *vecCache) isPartial() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.partial
}

// goPartial drops every partition and makes the cache partial; c.mu is
// held.
func (c *vecCache) goPartial() {
	c.partial = true
	c.parts = map[search.ContentType]map[string]*vecPartition{}
	c.owners = map[search.ContentType]map[int64]string{}
	c.rows = 0
}

// catchUp replays the log since c.pos (loading everything when the cache
// was never loaded or fell behind the log's trimming); c.mu is held.
func (c *vecCache) catchUp(ctx context.Context, db *sql.DB) error {
	tx, cur, floor, err := c.log.read(ctx, db, c.logIso, "vector cache")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if !c.pos.valid() || c.pos.trimmed(floor) {
		return c.reload(ctx, tx, cur)
	}
	if c.pos.covers(cur) {
		return nil
	}
	where, args := c.log.since(c.pos)
	rows, err := tx.QueryContext(ctx, `SELECT kind, id FROM search_vec_log WHERE `+where+` ORDER BY `+c.log.Position+`, seq`, args...)
	if err != nil {
		return fmt.Errorf("search: vector cache: read log: %w", err)
	}
	type change struct {
		t  search.ContentType
		id int64
	}
	var changes []change
	seen := map[change]bool{}
	reset := false
	for rows.Next() {
		var ch change
		if err := rows.Scan(&ch.t, &ch.id); err != nil {
			rows.Close()
			return fmt.Errorf("search: vector cache: read log: %w", err)
		}
		if ch.t == 0 {
			reset = true
		}
		if !seen[ch] {
			seen[ch] = true
			changes = append(changes, ch)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("search: vector cache: read log: %w", err)
	}
	if reset || len(changes) > 10_000 {
		return c.reload(ctx, tx, cur)
	}
	for _, ch := range changes {
		k, ok := kinds[ch.t]
		if !ok {
			continue
		}
		var owner string
		var blob []byte
		err := tx.QueryRowContext(ctx, `SELECT owner, embedding FROM `+k.vec+` WHERE rowid = ?`, ch.id).Scan(&owner, &blob)
		switch {
		case err == sql.ErrNoRows:
			c.remove(ch.t, ch.id)
		case err != nil:
			return fmt.Errorf("search: vector cache: read %s %d: %w", k.vec, ch.id, err)
		case c.partial && c.parts[ch.t][owner] == nil:
			c.remove(ch.t, ch.id) // its owner's partition is not held (it may have moved)
		default:
			if err := c.put(ch.t, ch.id, owner, blob); err != nil {
				return err
			}
		}
	}
	c.pos = cur
	return nil
}

// load reads every vector into a new cache without holding c.mu (searches
// go on in the database meanwhile) and swaps it in.
func (c *vecCache) load(ctx context.Context, db *sql.DB) error {
	tx, cur, _, err := c.log.read(ctx, db, c.logIso, "vector cache")
	if err != nil {
		return err
	}
	defer tx.Rollback()
	fresh := &vecCache{dims: c.dims, limit: c.limit}
	if err := fresh.reload(ctx, tx, cur); err != nil {
		return err
	}
	c.mu.Lock()
	c.parts, c.owners, c.rows, c.pos = fresh.parts, fresh.owners, fresh.rows, fresh.pos
	c.partial, c.need = c.partial || fresh.partial, max(c.need, fresh.need)
	c.mu.Unlock()
	if fresh.partial {
		// The loader records the cache as over its bound; searches go on
		// over the partitions their owners load.
		return fmt.Errorf("%w; it holds the vectors of the agents searched lately", fresh.overBudget())
	}
	return nil
}

// dropped reports whether the cache gave up for its bound.
func (c *vecCache) dropped() bool { return c.ld.isOver() }

// WarmVectorCache loads the vector cache now (or catches it up) and waits
// until it is ready or ctx ends; vector searches ask the database engine
// until then. It returns why the cache is not ready: ErrCacheBudget when
// the vectors need more than IndexOptions.VectorCacheBytes, a failed load
// (retried after a back-off), or a closed Index. It does nothing without a
// vector cache.
func (x *Index) WarmVectorCache(ctx context.Context) error {
	if x.cache == nil {
		return nil
	}
	for {
		ready, err := x.cache.sync(ctx, x.db, x.query)
		if ready && err == nil && x.cache.isPartial() {
			return x.cache.ld.wait(ctx) // why it is partial (ErrCacheBudget)
		}
		if err != nil || ready {
			return err
		}
		if err := x.cache.ld.wait(ctx); err != nil {
			return fmt.Errorf("search: vector cache: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("search: vector cache: %w", err)
		}
	}
}

// reload replaces the cache with the tables' current contents; when they
// exceed the bound, with no partition at all, partial (goPartial).
func (c *vecCache) reload(ctx context.Context, tx *sql.Tx, pos logPos) error {
	c.parts = map[search.ContentType]map[string]*vecPartition{}
	c.owners = map[search.ContentType]map[int64]string{}
	c.rows, c.pos = 0, logPos{}
	if c.partial {
		c.pos = pos
		return nil
	}
	for _, t := range contentKinds {
		k := kinds[t]
		n, err := c.presize(ctx, tx, t)
		if err != nil {
			return err
		}
		if c.exceeds(c.rows + n) {
			// Refused unread: no load of vectors that cannot all be held.
			c.need = c.rows + n
			c.goPartial()
			c.pos = pos
			return nil
		}
		rows, err := tx.QueryContext(ctx, `SELECT rowid, owner, embedding FROM `+k.vec)
		if err != nil {
			return fmt.Errorf("search: vector cache: load %s: %w", k.vec, err)
		}
		for rows.Next() {
			var id int64
			var owner string
			var blob []byte
			if err := rows.Scan(&id, &owner, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("search: vector cache: load %s: %w", k.vec, err)
			}
			if err := c.put(t, id, owner, blob); err != nil {
				rows.Close()
				return err
			}
			if c.overLimit() {
				rows.Close()
				c.need = c.rows
				c.goPartial()
				c.pos = pos
				return nil
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("search: vector cache: load %s: %w", k.vec, err)
		}
	}
	c.pos = pos
	return nil
}

// presize makes t's partitions with room for the rows the table holds (one
// scan of the owner index), so a load fills them without regrowing:
// growing the slices by appends (each growth a fresh allocation, copied
// and page-faulted in) dominated a bulk load (docs/performance.md). It
// returns the table's row count; a table that would take the cache over
// its bound gets no partitions (the caller refuses it unread).
func (c *vecCache) presize(ctx context.Context, tx *sql.Tx, t search.ContentType) (int, error) {
	k := kinds[t]
	rows, err := tx.QueryContext(ctx, `SELECT owner, count(*) FROM `+k.vec+` GROUP BY owner`)
	if err != nil {
		return 0, fmt.Errorf("search: vector cache: count %s: %w", k.vec, err)
	}
	defer rows.Close()
	counts := map[string]int{}
	total := 0
	for rows.Next() {
		var owner string
		var n int
		if err := rows.Scan(&owner, &n); err != nil {
			return 0, fmt.Errorf("search: vector cache: count %s: %w", k.vec, err)
		}
		counts[owner] = n
		total += n
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("search: vector cache: count %s: %w", k.vec, err)
	}
	if total == 0 || c.exceeds(c.rows+total) {
		return total, nil
	}
	parts := make(map[string]*vecPartition, len(counts))
	for owner, n := range counts {
		parts[owner] = &vecPartition{ids: make([]int64, 0, n), vecs: make([]float32, 0, n*c.dims), pos: make(map[int64]int, n)}
	}
	c.parts[t], c.owners[t] = parts, make(map[int64]string, total)
	return total, nil
}

func (c *vecCache) put(t search.ContentType, id int64, owner string, blob []byte) error {
	if len(blob) != 4*c.dims {
		return fmt.Errorf("search: vector cache: %v %d has a %d-byte vector, want %d dimensions", t, id, len(blob), c.dims)
	}
	c.remove(t, id)
	if c.parts[t] == nil {
		c.parts[t] = map[string]*vecPartition{}
		c.owners[t] = map[int64]string{}
	}
	p := c.parts[t][owner]
	if p == nil {
		p = &vecPartition{pos: map[int64]int{}}
		c.parts[t][owner] = p
	}
	p.pos[id] = len(p.ids)
	p.ids = append(p.ids, id)
	n := len(p.vecs)
	p.vecs = slices.Grow(p.vecs, c.dims)[:n+c.dims]
	v := p.vecs[n:]
	vecmath.Decode(v, blob)
	search.Normalize(v)
	c.owners[t][id] = owner
	c.rows++
	return nil
}

func (c *vecCache) remove(t search.ContentType, id int64) {
	owner, ok := c.owners[t][id]
	if !ok {
		return
	}
	delete(c.owners[t], id)
	p := c.parts[t][owner]
	i := p.pos[id]
	last := len(p.ids) - 1
	if i != last {
		p.ids[i] = p.ids[last]
		copy(p.vecs[i*c.dims:(i+1)*c.dims], p.vecs[last*c.dims:])
		p.pos[p.ids[i]] = i
	}
	p.ids = p.ids[:last]
	p.vecs = p.vecs[:last*c.dims]
	delete(p.pos, id)
	c.rows--
	if len(p.ids) == 0 && !c.partial {
		delete(c.parts[t], owner) // a partial cache keeps it: the owner is loaded
	}
}

// ensure loads owner's partition of kind t into a partial cache, evicting
// the least recently used others to stay within the bound, and marks it
// used; held is false when the owner's vectors alone exceed the bound (or
// the cache is no longer loaded): KNN then runs in the database. A cache
// that holds everything has nothing to load. The rows are read after the
// log position c.pos was, so they are at least as new; log entries c.pos
// does not hold re-read their rows at the next catch-up, which changes
// nothing for rows already current.
func (c *vecCache) ensure(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), t search.ContentType, owner string) (held bool, err error) {
	return c.ensureFor(ctx, query, t, owner, 0)
}

// ensureFor is ensure, for prewarming when warm (a use stamp, negative;
// 0: not prewarming): the partition loads only if the cache, with it,
// stays within prewarmFill tenths of its bound (it evicts nothing),
// stamped warm; held is false otherwise.
func (c *vecCache) ensureFor(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), t search.ContentType, owner string, warm int64) (held bool, err error) {
	c.mu.RLock()
	partial, loaded, p := c.partial, c.pos.valid(), c.parts[t][owner]
	held = partial && loaded && p != nil
	if held {
		// Stamped under the lock, as every use is: no stamp lands while
		// an eviction (under the write lock) compares them (lruQueue).
		p.used.Store(c.clock.Add(1))
	}
	c.mu.RUnlock()
	if !partial || !loaded || held {
		return loaded, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pos.valid() {
		return false, nil
	}
	if p := c.parts[t][owner]; p != nil {
		p.used.Store(c.clock.Add(1))
		return true, nil
	}
	k := kinds[t]
	var n int
	rows, err := query(ctx, `SELECT count(*) FROM `+k.vec+` WHERE owner = ?`, owner)
	if err != nil {
		return false, fmt.Errorf("search: vector cache: count %s of %q: %w", k.vec, owner, err)
	}
	if rows.Next() {
		err = rows.Scan(&n)
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("search: vector cache: count %s of %q: %w", k.vec, owner, err)
	}
	if c.exceeds(n) || (warm != 0 && int64(c.rows+n)*c.vecRowBytes() > c.limit/10*prewarmFill) {
		return false, nil
	}
	if c.parts[t] == nil {
		c.parts[t], c.owners[t] = map[string]*vecPartition{}, map[int64]string{}
	}
	p = &vecPartition{ids: make([]int64, 0, n), vecs: make([]float32, 0, n*c.dims), pos: make(map[int64]int, n)}
	c.parts[t][owner] = p
	rows, err = query(ctx, `SELECT rowid, embedding FROM `+k.vec+` WHERE owner = ?`, owner)
	if err == nil {
		for rows.Next() {
			var id int64
			var blob []byte
			if err = rows.Scan(&id, &blob); err != nil {
				break
			}
			if err = c.put(t, id, owner, blob); err != nil {
				break
			}
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		c.dropPartition(t, owner)
		return false, fmt.Errorf("search: vector cache: load %s of %q: %w", k.vec, owner, err)
	}
	p.used.Store(cmp.Or(warm, c.clock.Add(1)))
	c.evict(p)
	return true, nil
}

// ensureScope ensures the partitions a search over kinds in scope reads;
// held is false when one is not to be had (Scope.All over a partial cache
// included).
func (c *vecCache) ensureScope(ctx context.Context, query func(context.Context, string, ...any) (*sql.Rows, error), types search.ContentType, scope search.Scope) (held bool, err error) {
	c.mu.RLock()
	partial := c.partial
	c.mu.RUnlock()
	if !partial {
		return true, nil
	}
	if scope.All {
		return false, nil
	}
	for _, t := range types.Kinds() {
		if held, err := c.ensure(ctx, query, t, scope.Agent); !held || err != nil {
			return false, err
		}
	}
	return true, nil
}

// dropPartition lets owner's partition of kind t go; c.mu is held.
func (c *vecCache) dropPartition(t search.ContentType, owner string) {
	p := c.parts[t][owner]
	if p == nil {
		return
	}
	for _, id := range p.ids {
		delete(c.owners[t], id)
	}
	c.rows -= len(p.ids)
	delete(c.parts[t], owner)
}

// evict drops the least recently used partitions (never keep) until the
// cache is within its bound; c.mu is held.
func (c *vecCache) evict(keep *vecPartition) {
	for c.overLimit() {
		v, ok := c.lru.pop(c.parts, keep, func(p *vecPartition) int64 { return p.used.Load() })
		if !ok {
			return
		}
		c.dropPartition(v.t, v.owner)
		c.evictions.Add(1)
	}
}

// parallelScanMin is the partition size from which a scan is split across
// GOMAXPROCS goroutines.
const parallelScanMin = 16384

// knn returns the k nearest vectors of kind t to q in owner's partition
// (every partition when all), nearest first, as cosine distances. held is
// false when a partial cache does not hold what the search reads (evicted
// since ensure, or all): the caller asks the database instead.
func (c *vecCache) knn(t search.ContentType, q []float32, owner string, all bool, k int) (hits []knnHit, held bool) {
	qn := search.Normalize(append([]float32(nil), q...))
	c.mu.RLock()
	defer c.mu.RUnlock()
	var parts []*vecPartition
	if all {
		if c.partial {
			return nil, false
		}
		for _, p := range c.parts[t] {
			parts = append(parts, p)
		}
	} else if p := c.parts[t][owner]; p != nil {
		parts = append(parts, p)
	} else if c.partial {
		return nil, false
	}
	h := &hitHeap{}
	for _, p := range parts {
		n := len(p.ids)
		workers := min(runtime.GOMAXPROCS(0), n/parallelScanMin)
		if workers <= 1 {
			c.scan(p, 0, n, qn, k, h)
			continue
		}
		heaps := make([]hitHeap, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.scan(p, w*n/workers, (w+1)*n/workers, qn, k, &heaps[w])
			}()
		}
		wg.Wait()
		for _, wh := range heaps {
			for _, hit := range wh {
				offer(h, hit, k)
			}
		}
	}
	out := make([]knnHit, len(*h))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = h.pop()
	}
	return out, true
}

// scan offers rows lo..hi-1 of p to h (the k best so far).
func (c *vecCache) scan(p *vecPartition, lo, hi int, qn []float32, k int, h *hitHeap) {
	d := c.dims
	for i := lo; i < hi; i++ {
		offer(h, knnHit{p.ids[i], 1 - float64(vecmath.Dot(qn, p.vecs[i*d:(i+1)*d:(i+1)*d]))}, k)
	}
}

// offer adds hit to h if it is among the k best (by distance, then id).
func offer(h *hitHeap, hit knnHit, k int) {
	if len(*h) < k {
		h.push(hit)
	} else if worse((*h)[0], hit) {
		(*h)[0] = hit
		h.down()
	}
}

// hitHeap is a max-heap on distance (ties: larger id first), so its root
// is the worst of the current k best. Its own sift functions, not
// container/heap's: boxing every hit into an interface allocated per push
// and pop.
type hitHeap []knnHit

// worse reports whether a ranks below b (farther, or as far with a larger
// id).
func worse(a, b knnHit) bool {
	if a.dist != b.dist {
		return a.dist > b.dist
	}
	return a.id > b.id
}

func (h *hitHeap) push(x knnHit) {
	*h = append(*h, x)
	s := *h
	for j := len(s) - 1; j > 0; {
		i := (j - 1) / 2
		if !worse(s[j], s[i]) {
			break
		}
		s[i], s[j] = s[j], s[i]
		j = i
	}
}

// down restores the heap from its root down.
func (h hitHeap) down() {
	for i := 0; ; {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		j := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			j = r
		}
		if !worse(h[j], h[i]) {
			return
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// pop removes and returns the root (the worst hit).
func (h *hitHeap) pop() knnHit {
	s := *h
	x := s[0]
	n := len(s) - 1
	s[0] = s[n]
	*h = s[:n]
	h.down()
	return x
}
