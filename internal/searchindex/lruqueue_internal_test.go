package searchindex

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/search"
)

type lruTestPart struct{ used atomic.Int64 }

// TestLRUQueueLeastRecentlyUsed: under random uses, loads, reloads,
// drops and evictions, each partition the queue hands out is the least
// recently used of all but keep, as sorting them all would find.
func TestLRUQueueLeastRecentlyUsed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 77))
	var clock atomic.Int64
	parts := map[search.ContentType]map[string]*lruTestPart{search.Archival: {}, search.Messages: {}}
	kinds := []search.ContentType{search.Archival, search.Messages}
	var q lruQueue[*lruTestPart]
	used := func(p *lruTestPart) int64 { return p.used.Load() }
	load := func() *lruTestPart {
		p := &lruTestPart{}
		p.used.Store(clock.Add(1))
		parts[kinds[r.IntN(2)]][fmt.Sprint("o", r.IntN(300))] = p // a new owner, or a reload
		return p
	}
	for range 200 {
		load()
	}
	pops := 0
	for step := range 20000 {
		switch n := r.IntN(10); {
		case n < 5: // a search uses a partition
			for _, ps := range parts {
				for _, p := range ps {
					if r.IntN(8) == 0 {
						p.used.Store(clock.Add(1))
					}
					break
				}
			}
		case n < 6: // a partition dropped (a catch-up gave up on it)
			for _, ps := range parts {
				for o := range ps {
					delete(ps, o)
					break
				}
			}
		default: // a load, evicting the least recently used other
			keep := load()
			if r.IntN(4) == 0 {
				keep = nil
			}
			var want partKey
			oldest := int64(-1)
			for k, ps := range parts {
				for o, p := range ps {
					if p != keep && (oldest < 0 || used(p) < oldest) {
						want, oldest = partKey{k, o}, used(p)
					}
				}
			}
			got, ok := q.pop(parts, keep, used)
			if ok != (oldest >= 0) || ok && got != want {
				t.Fatalf("step %d: popped %v (%v), the least recently used is %v", step, got, ok, want)
			}
			if ok {
				delete(parts[got.t], got.owner)
				pops++
			}
		}
	}
	if pops < 5000 {
		t.Fatalf("%d evictions", pops)
	}
}

// BenchmarkLRUQueueEvict: a full cache of 2,000 partitions, each load
// evicting the least recently used.
func BenchmarkLRUQueueEvict(b *testing.B) {
	var clock atomic.Int64
	parts := map[search.ContentType]map[string]*lruTestPart{search.Archival: {}, search.Messages: {}}
	for i := range 2000 {
		p := &lruTestPart{}
		p.used.Store(clock.Add(1))
		parts[search.ContentType(2+2*(i%2))][fmt.Sprint("o", i)] = p
	}
	var q lruQueue[*lruTestPart]
	used := func(p *lruTestPart) int64 { return p.used.Load() }
	i := 2000
	for b.Loop() {
		p := &lruTestPart{}
		p.used.Store(clock.Add(1))
		parts[search.Archival][fmt.Sprint("o", i)] = p
		i++
		k, ok := q.pop(parts, p, used)
		if !ok {
			b.Fatal("nothing to evict")
		}
		delete(parts[k.t], k.owner)
	}
}

// TestLRUQueueJustSorted: a partition whose stamp changes between the
// sort and its check (as a search stamping it unlocked would) is still
// handed out by the pop that sorted: the order is current then, and an
// eviction must not stop with the cache over its bound.
func TestLRUQueueJustSorted(t *testing.T) {
	var clock atomic.Int64
	a, keep := &lruTestPart{}, &lruTestPart{}
	a.used.Store(clock.Add(1))
	keep.used.Store(clock.Add(1))
	parts := map[search.ContentType]map[string]*lruTestPart{search.Archival: {"a": a, "k": keep}}
	var q lruQueue[*lruTestPart]
	reads := 0
	used := func(p *lruTestPart) int64 {
		v := p.used.Load()
		if p == a {
			if reads++; reads == 1 { // read by the sort: then stamped anew
				a.used.Store(clock.Add(1))
			}
		}
		return v
	}
	if k, ok := q.pop(parts, keep, used); !ok || k.owner != "a" {
		t.Fatalf("popped %v (%v), not a", k, ok)
	}
}
