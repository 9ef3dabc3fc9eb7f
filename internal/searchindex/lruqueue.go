package searchindex

import (
	"cmp"
	"slices"

	"github.com/engram-go/engram/search"
)

// lruQueue hands out a partial cache's partitions least recently used
// first, for its evictions, without sorting them all at each one: once the
// cache is full every load evicts, and a sort of every partition made a
// load cost more the more owners the cache held. It keeps the order it
// last sorted, with each partition's use stamp then; a partition whose
// stamp has changed since (used again) is passed over, and so is one gone
// or replaced. The stamps come from one counter and are taken and stored
// under the cache's lock (a search's under the read lock, an eviction's
// sort and pops under the write lock), so a partition used or loaded
// since the sort is more recent than any still holding its stamp of then:
// the one handed out is the least recently used of all. The order is
// sorted again when it runs out. It is the cache's, used under its lock.
type lruQueue[P comparable] struct {
	order []lruEntry
	next  int
}

type lruEntry struct {
	partKey
	used int64
}

// pop returns the least recently used partition of parts other than
// keep; ok is false when there is none.
func (q *lruQueue[P]) pop(parts map[search.ContentType]map[string]P, keep P, used func(P) int64) (k partKey, ok bool) {
	for sorted := false; ; sorted = true {
		for q.next < len(q.order) {
			e := q.order[q.next]
			q.next++
			// Right after the sort its stamps are current: compared
			// only in an order kept from an earlier pop.
			if p, in := parts[e.t][e.owner]; in && p != keep && (sorted || used(p) == e.used) {
				return e.partKey, true
			}
		}
		if sorted {
			return partKey{}, false // (the next pop sorts again)
		}
		q.order, q.next = q.order[:0], 0
		for t, ps := range parts {
			for owner, p := range ps {
				if p != keep {
					q.order = append(q.order, lruEntry{partKey{t, owner}, used(p)})
				}
			}
		}
		slices.SortFunc(q.order, func(a, b lruEntry) int { return cmp.Compare(a.used, b.used) })
	}
}
