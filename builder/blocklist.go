package builder

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/engram-go/engram/memory"
)

type blocksKey struct {
	a     Agent
	agent string
}

// blocksEntry is an agent's block listings as of stamp.
type blocksEntry struct {
	mu     sync.Mutex
	valid  bool
	stamp  memory.BlocksStamp
	own    []memory.BlockMeta
	shared []memory.SharedBlock
	render *renderMemo // renderings of these listings' blocks
	// profile is the agent's profile as of stamp (nil: none), read when
	// profileRead; a profile change changes the stamp.
	profile     *memory.Profile
	profileRead bool
}

// renderMemo keeps the renderings of the blocks of one listing (a block's
// rendering depends only on its listed metadata and the options): a warm
// build copies them instead of escaping every block again.
type renderMemo struct {
	mu sync.Mutex
	m  map[renderKey]string
}

type renderKey struct {
	id         int64
	sharedFrom string
	perm       int
	ro         RenderOptions
}

// write writes m's rendering to b, from the memo when it has it. A nil
// memo (a listing not cached) renders every time.
func (r *renderMemo) write(b *strings.Builder, m *memory.BlockMeta, ro RenderOptions) {
	if r == nil {
		writeBlock(b, *m, ro)
		return
	}
	k := renderKey{id: m.ID, sharedFrom: m.SharedFrom, perm: int(m.Permission), ro: ro}
	r.mu.Lock()
	s, ok := r.m[k]
	r.mu.Unlock()
	if !ok {
		var sb strings.Builder
		writeBlock(&sb, *m, ro)
		s = sb.String()
		r.mu.Lock()
		if r.m == nil {
			r.m = map[renderKey]string{}
		}
		r.m[k] = s
		r.mu.Unlock()
	}
	b.WriteString(s)
}

// blockLists returns the agent's own blocks and the blocks shared with it,
// and, when ps is not nil, its profile (nil: it has none). A warm call
// costs one Store.BlocksStamp query: the listings and the profile are read
// again only when the stamp changed, that is when a block the agent sees,
// a share or the agent's profile changed anywhere (this process or
// another on the same file). The returned slices and profile are shared
// with the cache and must not be modified.
func (c *Cache) blockLists(ctx context.Context, a Agent, agent string, ps ProfileStore) ([]memory.BlockMeta, []memory.SharedBlock, *renderMemo, *memory.Profile, error) {
	if !reflect.TypeOf(a).Comparable() {
		own, shared, err := listBlocks(ctx, a, agent)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		prof, err := readProfile(ctx, ps, agent)
		return own, shared, nil, prof, err
	}
	k := blocksKey{a: a, agent: agent}
	c.blocksMu.Lock()
	e := c.blocks[k]
	if e == nil {
		e = &blocksEntry{}
		c.blocks[k] = e
	}
	c.blocksMu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	// The stamp is read before the listings: a change that lands between
	// them is then in the listings or changes the next stamp, never lost.
	stamp, err := a.BlocksStamp(ctx)
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("builder: blocks of %q: %w", agent, err)
	}
	if e.valid && e.stamp == stamp {
		if ps != nil && !e.profileRead {
			if e.profile, err = readProfile(ctx, ps, agent); err != nil {
				return nil, nil, nil, nil, err
			}
			e.profileRead = true
		}
		return e.own, e.shared, e.render, e.profile, nil
	}
	e.valid = false
	own, shared, err := listBlocks(ctx, a, agent)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	prof, err := readProfile(ctx, ps, agent)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// Capped, so an append by a caller cannot write into the cache's array.
	e.own, e.shared, e.stamp, e.valid = slices.Clip(own), slices.Clip(shared), stamp, true
	e.profile, e.profileRead = prof, ps != nil
	e.render = &renderMemo{}
	return e.own, e.shared, e.render, e.profile, nil
}

// readProfile reads agent's profile from ps: nil when ps is nil or the
// agent has none.
func readProfile(ctx context.Context, ps ProfileStore, agent string) (*memory.Profile, error) {
	if ps == nil {
		return nil, nil
	}
	p, err := ps.Profile(ctx)
	if errors.Is(err, memory.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("builder: profile of %q: %w", agent, err)
	}
	return &p, nil
}

func listBlocks(ctx context.Context, a Agent, agent string) ([]memory.BlockMeta, []memory.SharedBlock, error) {
	own, err := a.Blocks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("builder: blocks of %q: %w", agent, err)
	}
	shared, err := a.SharedBlocks(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("builder: blocks shared with %q: %w", agent, err)
	}
	return own, shared, nil
}
