package searchindex

import (
	"context"
	"sync"
)

// logFreshness spares an in-process cache its per-search read of the change
// log while nothing was committed to the database (IndexOptions.
// DataVersion): it remembers the data version at which the cache was last
// found up to date. The version is read before the log, so a commit racing
// with the read makes the next version differ and the log is read again.
type logFreshness struct {
	read func(context.Context) (int64, bool, error) // nil: always read the log
	mu   sync.Mutex
	v    int64
	set  bool
}

// check reads the data version: current is true when the cache was found
// up to date at it (the log need not be read); v and ok are for upToDate.
func (f *logFreshness) check(ctx context.Context) (v int64, ok, current bool) {
	if f.read == nil {
		return 0, false, false
	}
	v, ok, err := f.read(ctx)
	if err != nil || !ok {
		return 0, false, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return v, true, f.set && f.v == v
}

// upToDate records that the cache was up to date with the log as read
// after version v (from check, when ok).
func (f *logFreshness) upToDate(v int64, ok bool) {
	if !ok {
		return
	}
	f.mu.Lock()
	f.v, f.set = v, true
	f.mu.Unlock()
}
