package syncrepo

import (
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
}

// acquire returns the copy of key, loading it with load on first use.
func (ms *Mirrors) acquire(key string, load func() (*automerge.Doc, error)) (*shared, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if sh, ok := ms.m[key]; ok {
		sh.refs++
		return sh, nil
	}
	doc, err := load()
	if err != nil {
		return nil, err
	}
	sh := &shared{doc: doc, base: hexHeads(doc.Heads()), refs: 1, key: key}
	ms.m[key] = sh
	return sh, nil
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
