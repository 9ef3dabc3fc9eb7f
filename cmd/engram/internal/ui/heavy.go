package ui

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/engram-go/engram/blocks"
)

// renderCacheBytes bounds the rendered historical versions kept between
// requests.
const renderCacheBytes = 32 << 20

// heavy runs f, which computes historical versions of a large block,
// once no other such work runs: it waits at most Options.HeavyTimeout for
// its turn, and f gets a context that ends HeavyTimeout later (checked
// between versions; versions already computed stay cached, so trying again
// goes on from there). Each historical version is a full in-memory copy of
// the block (an automerge fork): one at a time bounds the memory a burst
// of requests can take, and pages that need none are served meanwhile.
// The copies are released by finalizers, which only a garbage collection
// runs; the Go heap barely grows while the copies live outside it, so a
// collection is forced afterwards rather than left to chance. Those
// finalizers run on the runtime's finalizer goroutine, after the
// collection queues them and possibly after the trim that follows it (on
// a busy machine, seconds after), so the C heap is trimmed again a moment
// later.
func (s *Server) heavy(ctx context.Context, f func(ctx context.Context) error) error {
	wait, cancel := context.WithTimeout(ctx, s.opts.HeavyTimeout)
	defer cancel()
	select {
	case s.slots <- struct{}{}:
	case <-wait.Done():
		if ctx.Err() == nil {
			return fmt.Errorf("%w: another view of a large block's history is being computed; try again in a moment", ErrBusy)
		}
		return ctx.Err()
	}
	defer func() {
		debug.FreeOSMemory() // queues the copies' finalizers, which free them into the C heap
		trimMalloc()
		s.trimLater()
		<-s.slots
	}()
	work, cancel := context.WithTimeout(ctx, s.opts.HeavyTimeout)
	defer cancel()
	if err := f(work); err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("%w: the history view took longer than %v; try again to continue from what was computed", ErrBusy, s.opts.HeavyTimeout)
		}
		return err
	}
	return nil
}

// trimAgain is how long after heavy work the C heap is trimmed again:
// time for the finalizer goroutine to free what the collection found.
// On a busy machine that goroutine may run seconds later, so the trim is
// repeated trimTimes times, each wait twice the last (0.5 to 8 s).
const (
	trimAgain = 500 * time.Millisecond
	trimTimes = 5
)

// trimLater trims the C heap again trimAgain from now, and then again
// after waits that double (the sequence starts over, once, however many
// heavy works end meanwhile).
func (s *Server) trimLater() {
	s.trimMu.Lock()
	defer s.trimMu.Unlock()
	s.trimsLeft, s.trimWait = trimTimes, trimAgain
	if s.trim == nil {
		s.trim = time.AfterFunc(trimAgain, s.trimNow)
		return
	}
	s.trim.Reset(trimAgain)
}

// trimNow trims the C heap and schedules the next trim, if any is left.
func (s *Server) trimNow() {
	trimMalloc()
	s.trimMu.Lock()
	defer s.trimMu.Unlock()
	if s.trimsLeft--; s.trimsLeft > 0 && s.trim != nil && !s.closed {
		s.trimWait *= 2
		s.trim.Reset(s.trimWait)
	}
}

// versions renders a block's historical versions for one request,
// through the server's cache, running the renders as heavy work when the
// block is large.
type versions struct {
	s            *Server
	owner, label string
	doc          *blocks.Document
	large        bool
}

func (s *Server) versions(owner, label string, doc *blocks.Document) *versions {
	return &versions{s: s, owner: owner, label: label, doc: doc, large: doc.Size() > s.opts.InlineDiffChars}
}

// at renders the block as of heads ("" for none: before the first change).
// ctx bounds the work between renders (one render cannot be stopped).
func (v *versions) at(ctx context.Context, heads []string) (string, error) {
	if len(heads) == 0 {
		return "", nil
	}
	key := v.owner + "\x00" + v.label + "\x00" + strings.Join(heads, ",")
	if r, ok := v.s.renders.get(key); ok {
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if cur := v.doc.Heads(); len(cur) == len(heads) && slices.Equal(slices.Sorted(slices.Values(cur)), slices.Sorted(slices.Values(heads))) {
		// The current version: no copy needed.
		return v.doc.Render(), nil
	}
	d, err := v.doc.At(heads) // the current epoch: no archive to load
	if errors.Is(err, blocks.ErrOutOfRange) {
		d, err = v.s.store.Agent(v.owner).Shared(v.owner, v.label).At(ctx, heads)
	}
	if err != nil {
		return "", err
	}
	r := d.Render()
	v.s.renders.put(key, r)
	if v.large {
		// Let the copy's finalizer free it before the next one is made:
		// one copy at a time, not two.
		d = nil
		runtime.GC()
	}
	return r, nil
}

// run runs f as heavy work for a large block, directly otherwise.
func (v *versions) run(ctx context.Context, f func(ctx context.Context) error) error {
	if !v.large {
		return f(ctx)
	}
	return v.s.heavy(ctx, f)
}

// renderCache is an LRU of rendered versions bounded by their total size.
type renderCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *renderEntry, most recent first
	items map[string]*list.Element
}

type renderEntry struct {
	key, text string
}

func newRenderCache(max int) *renderCache {
	return &renderCache{max: max, order: list.New(), items: map[string]*list.Element{}}
}

func (c *renderCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return "", false
	}
	c.order.MoveToFront(e)
	return e.Value.(*renderEntry).text, true
}

func (c *renderCache) put(key, text string) {
	if len(text) > c.max/4 {
		return // one huge version would push out everything else
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[key] = c.order.PushFront(&renderEntry{key: key, text: text})
	c.size += len(key) + len(text)
	for c.size > c.max {
		last := c.order.Back()
		ent := last.Value.(*renderEntry)
		c.order.Remove(last)
		delete(c.items, ent.key)
		c.size -= len(ent.key) + len(ent.text)
	}
}
