package memory

import (
	"context"
	"sync/atomic"

	"github.com/engram-go/engram/driver"
)

// watch is how a Store on a driver.BlockNotifier backend serves cache hits without
// a freshness query: every committed block change reaches each process as
// a notification that marks the cached entry stale, and only stale entries
// (or any entry while the channel is down) take the query path.
type watch struct {
	live atomic.Bool // notifications flow: unmarked entries are current
	stop context.CancelFunc
	done chan struct{}
}

func nameKey(owner, label string) string { return owner + "\x00" + label }

// startWatch listens for n's notifications, handing each changed block's
// id to changed (c.blockChanged; tests wrap it).
func (c *Store) startWatch(n driver.BlockNotifier, changed func(id int64)) {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watch{stop: cancel, done: make(chan struct{})}
	c.watch = w
	go func() {
		defer close(w.done)
		n.WatchBlocks(ctx, changed, c.notificationsLive)
	}()
}

func (c *Store) stopWatch() {
	if c.watch == nil {
		return
	}
	c.watch.live.Store(false)
	c.watch.stop()
	<-c.watch.done
}

// blockChanged marks a cached block stale (the next access re-reads its
// sequence and catches up) and signals BlocksChanged.
func (c *Store) blockChanged(id int64) {
	if e, ok := c.lru.Peek(id); ok {
		e.stale.Store(true)
	}
	c.changes.fire()
}

// notificationsLive records whether notifications flow. When they resume
// after a gap, every cached entry may have missed one: all are marked
// stale before hits trust the channel again.
func (c *Store) notificationsLive(live bool) {
	if !live {
		c.watch.live.Store(false)
		return
	}
	for _, e := range c.lru.Values() {
		e.stale.Store(true)
	}
	c.watch.live.Store(true)
	// Whatever changed while they were down: consumers of BlocksChanged
	// read their stamps again.
	c.changes.fire()
}

// notifiedHit returns the cached entry of (owner, label) when notifications
// vouch that it is current, without any query.
func (c *Store) notifiedHit(owner, label string) *entry {
	w := c.watch
	if w == nil || !w.live.Load() {
		return nil
	}
	v, ok := c.names.Load(nameKey(owner, label))
	if !ok {
		return nil
	}
	e := v.(*entry)
	if e.stale.Load() {
		return nil
	}
	if _, _, _, broken := e.freshness(); broken != nil {
		return nil
	}
	if cur, ok := c.lru.Get(e.id); !ok || cur != e {
		return nil
	}
	return e
}

// beforeCheck clears the stale mark of the entry about to be checked by
// query, before the query: a notification that lands during it marks the
// entry again, so no change is missed.
func (c *Store) beforeCheck(owner, label string) {
	if c.watch == nil {
		return
	}
	if v, ok := c.names.Load(nameKey(owner, label)); ok {
		v.(*entry).stale.Store(false)
	}
}

func (c *Store) remember(e *entry) {
	c.names.Store(nameKey(e.owner, e.label), e)
}

// afterFailedCheck re-marks the entry beforeCheck cleared: the check did
// not complete, so the entry is not known to be current.
func (c *Store) afterFailedCheck(owner, label string) {
	if c.watch == nil {
		return
	}
	if v, ok := c.names.Load(nameKey(owner, label)); ok {
		v.(*entry).stale.Store(true)
	}
}
