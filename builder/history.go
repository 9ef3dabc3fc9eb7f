package builder

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// MessageSource is where one agent's history comes from: its
// *memory.Messages (store.Agent(id).Messages()). The history cache is
// keyed by the source and the agent: a store gives the same handles for
// the same agent id, so builds of one agent share one entry.
type MessageSource interface {
	List(ctx context.Context, q *memory.MessageQuery) ([]memory.Message, error)
	Batches(ctx context.Context) ([]memory.Batch, error)
}

type histKey struct {
	src   MessageSource
	agent string
}

// histEntry is the history read so far from one source for one agent.
// Messages are append-only with increasing ids, so only newer ones are
// fetched; a batch once complete stays complete.
type histEntry struct {
	mu       sync.Mutex
	msgs     []memory.Message
	lastID   int64
	seen     map[string]bool // batch ids among msgs
	order    []string        // batch ids in order of first message
	complete map[string]bool
	batches  []memory.Batch // states of order, rebuilt when stale
	stale    bool
	tokens   map[uint8][]int // MessageTokens per message, by encoding id
	// last is the last truncation of this history (compressKey's doc).
	last atomic.Pointer[compressMemo]
}

// compressKey is everything a compress.Truncate result depends on, given
// that the history is append-only: its first n messages, the batch states
// (e.batches is a new slice whenever one changes, so the slice identifies
// them), the active batch, the budgets and the token encoding.
type compressKey struct {
	trunc               compress.Truncate
	enc                 uint8
	n                   int
	batches             []memory.Batch
	active              string
	budget, maxMessages int
}

func (k compressKey) same(o compressKey) bool {
	return k.trunc == o.trunc && k.enc == o.enc && k.n == o.n && k.active == o.active &&
		k.budget == o.budget && k.maxMessages == o.maxMessages && len(k.batches) == len(o.batches) &&
		(len(k.batches) == 0 || &k.batches[0] == &o.batches[0])
}

type compressMemo struct {
	key compressKey
	res compress.Result
}

// compressed returns the remembered result for key, with its id lists
// copied (callers may change what they are given).
func (e *histEntry) compressed(key compressKey, pure bool) (compress.Result, bool) {
	if e == nil || !pure {
		return compress.Result{}, false
	}
	m := e.last.Load()
	if m == nil || !m.key.same(key) {
		return compress.Result{}, false
	}
	r := m.res
	r.Kept, r.Summarized = slices.Clone(r.Kept), slices.Clone(r.Summarized)
	r.Dropped, r.Excluded = slices.Clone(r.Dropped), slices.Clone(r.Excluded)
	r.Warnings = slices.Clone(r.Warnings)
	return r, true
}

func (e *histEntry) remember(key compressKey, res compress.Result) {
	res.Kept, res.Summarized = slices.Clone(res.Kept), slices.Clone(res.Summarized)
	res.Dropped, res.Excluded = slices.Clone(res.Dropped), slices.Clone(res.Excluded)
	res.Warnings = slices.Clone(res.Warnings)
	res.Messages = slices.Clip(res.Messages)
	e.last.Store(&compressMemo{key: key, res: res})
}

// messageTokens returns compress.MessageTokens of the first n cached
// messages for a cached counter, counting only messages not priced before.
func (e *histEntry) messageTokens(c cachedCounter, n int) []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n > len(e.msgs) {
		return nil
	}
	if e.tokens == nil {
		e.tokens = map[uint8][]int{}
	}
	t := e.tokens[c.enc]
	for i := len(t); i < n; i++ {
		t = append(t, compress.MessageTokens(c, e.msgs[i]))
	}
	e.tokens[c.enc] = t
	return t[:n:n]
}

// history returns the agent's messages (chronological) and the states of
// their batches, reading only what changed since the last call. The
// returned slices must not be modified.
func (c *Cache) history(ctx context.Context, src MessageSource, agent, active string) ([]memory.Message, []memory.Batch, *histEntry, error) {
	if !reflect.TypeOf(src).Comparable() {
		msgs, bs, err := readHistory(ctx, src, agent)
		return msgs, bs, nil, err
	}
	k := histKey{src: src, agent: agent}
	c.histMu.Lock()
	e := c.hist[k]
	if e == nil {
		e = &histEntry{seen: map[string]bool{}, complete: map[string]bool{}}
		c.hist[k] = e
	}
	c.histMu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	newMsgs, err := src.List(ctx, &memory.MessageQuery{AfterID: e.lastID})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("builder: messages of %q: %w", agent, err)
	}
	for _, m := range newMsgs {
		if m.ID <= e.lastID {
			// Not append-only after all (a different store behind the same
			// source?): start over.
			e.msgs, e.lastID, e.order, e.batches, e.stale, e.tokens = nil, 0, nil, nil, true, nil
			clear(e.seen)
			clear(e.complete)
			msgs, bs, err := readHistory(ctx, src, agent)
			return msgs, bs, nil, err
		}
		e.lastID = m.ID
		// Appending never rewrites what earlier snapshots (capped slices)
		// see.
		e.msgs = append(e.msgs, m)
		if !e.seen[m.BatchID] {
			e.seen[m.BatchID] = true
			e.order = append(e.order, m.BatchID)
			e.stale = true
		}
	}
	// Ask about batches only when one that matters is not known complete:
	// the active batch is kept whatever its state.
	ask := false
	for _, b := range e.order {
		if b != active && !e.complete[b] {
			ask = true
			break
		}
	}
	if ask {
		bs, err := src.Batches(ctx)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("builder: batches of %q: %w", agent, err)
		}
		for _, b := range bs {
			if b.Complete && !e.complete[b.ID] {
				e.complete[b.ID] = true
				e.stale = true
			}
		}
	}
	if e.stale {
		e.batches = make([]memory.Batch, len(e.order))
		for i, id := range e.order {
			e.batches[i] = memory.Batch{ID: id, Agent: agent, Complete: e.complete[id]}
		}
		e.stale = false
	}
	return e.msgs[:len(e.msgs):len(e.msgs)], e.batches, e, nil
}

func readHistory(ctx context.Context, src MessageSource, agent string) ([]memory.Message, []memory.Batch, error) {
	msgs, err := src.List(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("builder: messages of %q: %w", agent, err)
	}
	bs, err := src.Batches(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("builder: batches of %q: %w", agent, err)
	}
	return msgs, bs, nil
}
