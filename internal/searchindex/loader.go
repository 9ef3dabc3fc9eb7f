package searchindex

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"
)

// loader runs a cache's background loads (the text and vector caches):
// one at a time (a flight), on a context only close cancels, so a search
// whose deadline is shorter than a load does not restart it forever. After
// a failure the next flight waits a back-off (1 s, doubling to a minute);
// once a load finds the cache over its memory bound (ErrCacheBudget) no
// flight starts again for the Index's lifetime.
type loader struct {
	name     string // "text cache", "vector cache": for the log
	log      *slog.Logger
	mu       sync.Mutex
	flight   *loadFlight
	life     context.Context
	stop     context.CancelFunc
	lastErr  error
	failedAt time.Time
	backoff  time.Duration
	over     bool
	// firstBackoff is the back-off after a first failure (0: a second);
	// tests lengthen it.
	firstBackoff time.Duration
}

type loadFlight struct {
	done chan struct{}
	err  error
}

func newLoader(name string, log *slog.Logger) *loader {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	life, stop := context.WithCancel(context.Background())
	return &loader{name: name, log: log, life: life, stop: stop}
}

// start returns the running flight, or runs run in a new one; nil when
// the loader is closed, over its bound, or backing off after a failure.
func (l *loader) start(run func(context.Context) error) *loadFlight {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.flight != nil {
		return l.flight
	}
	if l.over || l.life.Err() != nil || (l.lastErr != nil && time.Since(l.failedAt) < l.backoff) {
		return nil
	}
	f := &loadFlight{done: make(chan struct{})}
	l.flight = f
	go func() {
		start := time.Now()
		f.err = run(l.life)
		l.mu.Lock()
		l.flight = nil
		switch {
		case errors.Is(f.err, ErrCacheBudget):
			l.over, l.lastErr = true, f.err // a later load would only be larger
			l.log.Warn("search: cache dropped; searching in SQL", "cache", l.name, "err", f.err)
		case f.err != nil && l.life.Err() != nil:
			l.lastErr = f.err // closed: no retry, nothing to report
		case f.err != nil:
			l.lastErr, l.failedAt = f.err, time.Now()
			first := l.firstBackoff
			if first <= 0 {
				first = time.Second
			}
			l.backoff = min(max(2*l.backoff, first), max(first, time.Minute))
			l.log.Error("search: cache load failed; searching in SQL meanwhile", "cache", l.name, "err", f.err, "retry_after", l.backoff)
		default:
			l.lastErr, l.backoff = nil, 0
			l.log.Debug("search: cache caught up", "cache", l.name, "took", time.Since(start))
		}
		l.mu.Unlock()
		close(f.done)
	}()
	return f
}

// setOver records that the cache gave up for its bound outside a flight
// (a catch-up in a search); err says why.
func (l *loader) setOver(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.over, l.lastErr = true, err
	l.log.Warn("search: cache dropped; searching in SQL", "cache", l.name, "err", err)
}

// isOver reports whether the cache gave up for its bound.
func (l *loader) isOver() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.over
}

// wait waits for the running flight, if any, and returns why the cache
// cannot be ready (closed, over its bound, the flight's or the last
// failure); nil when a flight finished well or none ran and nothing
// failed.
func (l *loader) wait(ctx context.Context) error {
	l.mu.Lock()
	f, over, lastErr, closed := l.flight, l.over, l.lastErr, l.life.Err() != nil
	l.mu.Unlock()
	switch {
	case closed:
		return errors.New("the index is closed")
	case over:
		return lastErr
	case f != nil:
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return lastErr
}

// running reports whether a flight is under way.
func (l *loader) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flight != nil
}

// close stops a running flight, waits for it, and starts no more.
func (l *loader) close() {
	l.mu.Lock()
	l.stop()
	f := l.flight
	l.mu.Unlock()
	if f != nil {
		<-f.done
	}
}
