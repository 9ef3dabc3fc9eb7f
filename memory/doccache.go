package memory

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// docCache is the store's LRU of cached block documents: golang-lru's
// simplelru behind a mutex, its eviction callback (Store.onEvict) called
// as it evicts, under that mutex. golang-lru's own thread-safe Cache keeps
// the last entry it evicted in a buffer until its next eviction, which
// pinned a whole document after it left the cache (up to about 550 MB
// for a block at the largest limit). onEvict takes Store.mu, so nothing
// may call the cache while holding Store.mu.
type docCache struct {
	mu  sync.Mutex
	lru *simplelru.LRU[int64, *entry]
}

func newDocCache(size int, onEvict func(int64, *entry)) (*docCache, error) {
	l, err := simplelru.NewLRU(size, onEvict)
	if err != nil {
		return nil, err
	}
	return &docCache{lru: l}, nil
}

func (d *docCache) Add(id int64, e *entry) (evicted bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Add(id, e)
}

func (d *docCache) Get(id int64) (*entry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Get(id)
}

func (d *docCache) Peek(id int64) (*entry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Peek(id)
}

func (d *docCache) Remove(id int64) (present bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Remove(id)
}

func (d *docCache) RemoveOldest() (int64, *entry, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.RemoveOldest()
}

func (d *docCache) Keys() []int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Keys()
}

func (d *docCache) Values() []*entry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Values()
}

func (d *docCache) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Len()
}

func (d *docCache) Purge() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lru.Purge()
}
