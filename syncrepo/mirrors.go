package syncrepo

import (
	"context"
	"sync"

	"github.com/automerge/automerge-go"
)

// Mirrors holds the server's copy of each document that sessions sync,
// shared by all the sessions of a process (Options.Mirrors): one automerge
// document per block epoch however many peers sync it, instead of one per
// peer. A shared copy only ever holds the store's changes; a session whose
// peer made a refused change moves to a private copy of its own (see
// docs/sync.md). The zero value is not usable: use NewMirrors.
type Mirrors struct {
	mu sync.Mutex
	m  map[string]*shared
}

// NewMirrors returns an empty set of shared copies.
func NewMirrors() *Mirrors { return &Mirrors{m: map[string]*shared{}} }

// shared is one document's copy: the store's state as of base.
type shared struct {
	mu   sync.Mutex // guards doc (and the sync states on it) and base
	doc  *automerge.Doc
	base []string
	refs int // sessions' documents using it; guarded by Mirrors.mu
	key  string
	// ready is closed once doc is loaded, or loading it failed (err);
	// doc, base and err are not read before.
	ready chan struct{}
	err   error
}

// has reports whether a copy of key is held or being loaded.
func (ms *Mirrors) has(key string) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	_, ok := ms.m[key]
	return ok
}

// acquire returns the copy of key, loading it with load on first use,
// and reports whether this call loaded it. The load runs outside ms.mu:
// copying a large document holds up no other document's sessions, and
// the sessions of the same document wait for it (or for ctx). A failed
// load is not kept, and is the loader's own (its view, its context):
// a session that waited for it loads the copy itself.
func (ms *Mirrors) acquire(ctx context.Context, key string, load func() (*automerge.Doc, error)) (*shared, bool, error) {
	for {
		ms.mu.Lock()
		sh, ok := ms.m[key]
		if !ok {
			sh = &shared{refs: 1, key: key, ready: make(chan struct{})}
			ms.m[key] = sh
			ms.mu.Unlock()
			return ms.load(sh, load)
		}
		sh.refs++
		ms.mu.Unlock()
		select {
		case <-sh.ready:
		case <-ctx.Done():
			ms.release(sh)
			return nil, false, ctx.Err()
		}
		if sh.err == nil {
			return sh, false, nil
		}
		ms.release(sh)
	}
}

// load fills sh, just put in ms.m, with load. If load fails, or panics
// (the panic goes on), sh leaves ms.m and its waiters are told.
func (ms *Mirrors) load(sh *shared, load func() (*automerge.Doc, error)) (_ *shared, _ bool, err error) {
	done := false
	defer func() {
		if done {
			return
		}
		ms.mu.Lock()
		if ms.m[sh.key] == sh {
			delete(ms.m, sh.key)
		}
		sh.refs--
		ms.mu.Unlock()
		sh.err = err
		if sh.err == nil {
			sh.err = errLoadPanicked
		}
		close(sh.ready)
	}()
	doc, err := load()
	if err != nil {
		return nil, false, err
	}
	sh.doc, sh.base = doc, hexHeads(doc.Heads())
	done = true
	close(sh.ready)
	return sh, true, nil
}

// release drops one use of sh; the last one frees it.
func (ms *Mirrors) release(sh *shared) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if sh.refs--; sh.refs == 0 && ms.m[sh.key] == sh {
		delete(ms.m, sh.key)
	}
}

// Len is the number of documents held (for tests and diagnostics).
func (ms *Mirrors) Len() int {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return len(ms.m)
}
