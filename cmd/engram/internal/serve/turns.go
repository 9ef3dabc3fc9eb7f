package serve

import (
	"context"
	"slices"
	"sync"
)

// turns gives each token at most limit requests served at once; later
// ones wait for a turn in arrival order, at most queue of them, and a
// request beyond those is refused. The rate limit bounds how many
// requests a token starts; turns bound how many of the process's cores
// its requests hold at one time, so that one token's costly requests
// (a search over a query the size of the body limit, an import) run one
// after another on its own share instead of beside every other agent's
// on all of them, and the garbage they make is collected at the pace of
// one token's work.
type turns struct {
	limit, queue int

	mu sync.Mutex
	by map[int64]*turnLine
}

// turnLine is one token's requests: the turns of those being served, and
// those waiting, in arrival order.
type turnLine struct {
	running int
	// reading counts requests reading their bodies before they wait
	// (earlyBodyBytes): they count against the queue with the waiters, so
	// that a client sending its bodies slowly holds no more of them.
	reading int
	waiting []*turnWaiter
	// frames counts the /sync frames among the waiters (frameTurn): they
	// wait in line but not against the queue, which is the MCP
	// requests', so a token's peers never make its calls 429.
	frames int
}

// queued is the requests that count against the queue. Caller holds mu.
func (l *turnLine) queued() int { return len(l.waiting) - l.frames + l.reading }

// turnWaiter is a request waiting for n turns; turn is closed when it
// has them.
type turnWaiter struct {
	n     int
	frame bool // a /sync frame's (counted in turnLine.frames)
	turn  chan struct{}
}

func newTurns(limit, queue int) *turns {
	return &turns{limit: limit, queue: queue, by: map[int64]*turnLine{}}
}

// take waits for n turns of token id (at most the limit: a JSON-RPC batch
// whose calls run side by side takes one a call) and returns what ends
// them; it calls waiting, if not nil, before it waits. It fails with
// errTokenBusy, without waiting, when queue requests of the token wait
// already, and with ctx's error when ctx ends first.
func (t *turns) take(ctx context.Context, id int64, n int, waiting func()) (done func(), err error) {
	return t.wait(ctx, id, n, true, waiting)
}

// frameTurn waits for one turn of token id, as take does, however many
// wait already, and without counting against the queue: a /sync frame's.
// The frames waiting are bounded without the queue (a connection reads
// one at a time, and the token's connections are capped), a peer whose
// frame was refused a turn would have to reconnect and send it again,
// and counted, they would make the token's MCP requests 429.
func (t *turns) frameTurn(ctx context.Context, id int64, waiting func()) (done func(), err error) {
	return t.wait(ctx, id, 1, false, waiting)
}

// wait is take, refusing past the queue only when queued.
func (t *turns) wait(ctx context.Context, id int64, n int, queued bool, waiting func()) (done func(), err error) {
	n = min(max(n, 1), t.limit)
	t.mu.Lock()
	l := t.by[id]
	if l == nil {
		l = &turnLine{}
		t.by[id] = l
	}
	if l.running+n <= t.limit && len(l.waiting) == 0 {
		l.running += n
		t.mu.Unlock()
		return t.releaser(id, n), nil
	}
	if queued && l.queued() >= t.queue {
		t.mu.Unlock()
		return nil, errTokenBusy
	}
	w := &turnWaiter{n: n, frame: !queued, turn: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	if w.frame {
		l.frames++
	}
	t.mu.Unlock()
	if waiting != nil {
		waiting()
	}
	select {
	case <-w.turn:
		return t.releaser(id, n), nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	select {
	case <-w.turn:
		// The turns came as ctx ended: hand them on.
		t.mu.Unlock()
		t.release(id, n)
	default:
		if i := slices.Index(l.waiting, w); i >= 0 {
			l.waiting = slices.Delete(l.waiting, i, i+1)
			if w.frame {
				l.frames--
			}
		}
		t.admit(l) // it may have kept a lighter request behind it waiting
		t.forget(id, l)
		t.mu.Unlock()
	}
	return nil, ctx.Err()
}

// read counts one of token id's requests as reading its body before it
// waits for turns, against the queue, and returns what ends the count
// (once however often it is called). It fails with errTokenBusy when
// queue requests of the token wait or read already.
func (t *turns) read(id int64) (done func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.by[id]
	if l == nil {
		l = &turnLine{}
		t.by[id] = l
	}
	if l.queued() >= t.queue {
		t.forget(id, l)
		return nil, errTokenBusy
	}
	l.reading++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			l.reading--
			t.forget(id, l)
		})
	}, nil
}

// releaser returns a func that ends n turns of id, once however often it
// is called.
func (t *turns) releaser(id int64, n int) func() {
	var once sync.Once
	return func() { once.Do(func() { t.release(id, n) }) }
}

// release ends n turns of id and lets waiters in.
func (t *turns) release(id int64, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.by[id]
	l.running -= n
	t.admit(l)
	t.forget(id, l)
}

// admit gives turns to l's first waiters, in order, while they fit.
// Caller holds mu.
func (t *turns) admit(l *turnLine) {
	for len(l.waiting) > 0 && l.running+l.waiting[0].n <= t.limit {
		w := l.waiting[0]
		l.waiting = l.waiting[1:]
		if w.frame {
			l.frames--
		}
		l.running += w.n
		close(w.turn)
	}
}

// forget drops l, id's line, once it has nothing running or waiting (a
// token's line lives only while it has requests). Caller holds mu.
func (t *turns) forget(id int64, l *turnLine) {
	if l.running == 0 && l.reading == 0 && len(l.waiting) == 0 {
		delete(t.by, id)
	}
}

// count is the number of tokens with a line and of requests waiting or
// reading before they wait (for tests).
func (t *turns) count() (tokens, waiting int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.by {
		waiting += len(l.waiting) + l.reading
	}
	return len(t.by), waiting
}
