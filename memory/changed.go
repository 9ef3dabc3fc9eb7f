package memory

import "sync"

// changeSignal is a broadcast of "something changed": wait returns a
// channel that the next fire closes. Nothing is allocated while nobody
// waits, so a fire costs a lock when no one listens.
type changeSignal struct {
	mu sync.Mutex
	ch chan struct{} // nil until someone waits
}

func (s *changeSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *changeSignal) fire() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}

// BlocksChanged returns a channel that is closed at the next change to
// blocks this Store learns of, so a consumer of BlocksStamp (a /sync
// session, say) can read the stamp when it may have moved instead of on a
// timer. Each call after a change returns a new channel: a consumer takes
// the next one before it reads the stamp, so a change racing with the read
// closes that one.
//
// What signals:
//   - every change committed through this Store that can move a
//     BlocksStamp: content edits (the Go API, merges of a sync peer's
//     changes, write-back edits as they are made and as they are
//     flushed), metadata changes, creating, deleting, rebasing and
//     importing blocks, sharing, re-sharing and unsharing;
//   - on a backend that notifies other writers' block changes
//     (BlockNotifier: PostgreSQL's LISTEN/NOTIFY), another Store's or
//     process's change to a block's row as its notification arrives, and
//     the return of the notifications after they were down (a change may
//     have gone unnotified meanwhile).
//
// What does not: on SQLite another process's (or another Store's)
// commits, which nothing announces; on PostgreSQL another process's share,
// re-share or unshare, which changes no block row. A consumer that must
// see those still reads the stamp now and then. A signal may also come
// with no change of a given agent's stamp (a change to another agent's
// block): it says "read the stamp", not what moved.
func (c *Store) BlocksChanged() <-chan struct{} { return c.changes.wait() }
