package memory

// DefaultCacheBytes is Options.CacheBytes's default: 1 GiB, more than
// CacheSize's 256 documents at blocks.DefaultCharLimit are estimated to
// take (DocumentBytes), so the default bounds what a few large blocks
// hold without evicting blocks of the default limit any sooner.
const DefaultCacheBytes = 1 << 30

// The estimate behind DocumentBytes. A loaded automerge document holds
// every operation of its history (each character inserted, and those
// deleted until a rebase) with its indexes. Measured, resident once the
// process's heaps are trimmed, per cached block written by appends:
// about 140 KB at 100 characters, 1.0 MB at 2,000, 25 MB at 50,000 and
// 540 MB at 950,000, so 500 to 570 bytes a character past the first
// hundred (docs/performance.md, "The block document cache"). The
// estimate's figures are above those; a block whose text was rewritten
// holds its deleted text too, and may take more until a rebase.
const (
	documentBaseBytes    = 128 << 10
	documentBytesPerChar = 640
)

// DocumentBytes is what a cached block document of chars characters (its
// full rendered size, blocks.Document.Size) is estimated to take in
// memory: what it counts against Options.CacheBytes.
func DocumentBytes(chars int) int64 {
	return documentBaseBytes + documentBytesPerChar*int64(max(chars, 0))
}

// cacheAdd caches e under id and then evicts the least recently used
// documents while the cached ones together weigh more than
// Options.CacheBytes (keeping the newest).
func (c *Store) cacheAdd(id int64, e *entry) {
	e.weight.Store(DocumentBytes(e.doc.Size()))
	c.lru.Add(id, e)
	c.trimBytes()
}

// grown records that a cached document grew by n bytes (as its write
// released it) and weighs the cache again once the documents grew by a
// sixteenth of the bound since it was last weighed: the bound is then
// passed by that much at most between two weighings, and a write pays for
// a weighing (a sum over the cached documents) once in many.
func (c *Store) grown(n int64) {
	if c.opts.CacheBytes < 0 || c.growth.Add(n) <= c.opts.CacheBytes/16 {
		return
	}
	c.trimBytes()
}

// trimBytes weighs the cached documents and evicts the least recently
// used while they weigh more than Options.CacheBytes, keeping the newest.
func (c *Store) trimBytes() {
	if c.opts.CacheBytes < 0 {
		return
	}
	// One at a time: two weighing the same documents would each evict
	// for the whole excess.
	c.trimMu.Lock()
	defer c.trimMu.Unlock()
	c.growth.Store(0)
	// A sum over the cached entries (CacheSize of them at most) rather
	// than a running count: evictions, removals and replacements then
	// need no bookkeeping of their own.
	var total int64
	for _, x := range c.lru.Values() {
		total += x.weight.Load()
	}
	for total > c.opts.CacheBytes && c.lru.Len() > 1 {
		_, x, ok := c.lru.RemoveOldest()
		if !ok {
			return
		}
		total -= x.weight.Load()
	}
}
