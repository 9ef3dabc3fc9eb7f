package tools_test

import (
	"context"
	"regexp"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/tools"
)

// smallStore has tools.Store's ten methods and no others: each forwards to
// a real store held in an unexported field (so no type assertion on a
// smallStore can find more of memory.Store) and records its name.
type smallStore struct {
	inner tools.Store

	mu     sync.Mutex
	called map[string]bool
}

var (
	_ tools.Store = (*smallStore)(nil)
	_ tools.Store = (*memory.Cache)(nil)
	_ tools.Store = memory.Store(nil)
)

func (s *smallStore) saw(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.called == nil {
		s.called = map[string]bool{}
	}
	s.called[name] = true
}

func (s *smallStore) GetBlock(ctx context.Context, agent, label string) (*blocks.Document, error) {
	s.saw("GetBlock")
	return s.inner.GetBlock(ctx, agent, label)
}

func (s *smallStore) GetSharedBlock(ctx context.Context, requester, owner, label string) (*blocks.Document, error) {
	s.saw("GetSharedBlock")
	return s.inner.GetSharedBlock(ctx, requester, owner, label)
}

func (s *smallStore) RenderedContent(ctx context.Context, agent, label string) (string, error) {
	s.saw("RenderedContent")
	return s.inner.RenderedContent(ctx, agent, label)
}

func (s *smallStore) ListBlocks(ctx context.Context, agent string) ([]memory.BlockMeta, error) {
	s.saw("ListBlocks")
	return s.inner.ListBlocks(ctx, agent)
}

func (s *smallStore) ListSharedBlocks(ctx context.Context, agent string) ([]memory.SharedBlock, error) {
	s.saw("ListSharedBlocks")
	return s.inner.ListSharedBlocks(ctx, agent)
}

func (s *smallStore) ApplyEdit(ctx context.Context, agent, owner, label string, e memory.Edit) error {
	s.saw("ApplyEdit")
	return s.inner.ApplyEdit(ctx, agent, owner, label, e)
}

func (s *smallStore) ProposeEdit(ctx context.Context, agent, owner, label string, e memory.Edit, reason string) (memory.Proposal, error) {
	s.saw("ProposeEdit")
	return s.inner.ProposeEdit(ctx, agent, owner, label, e, reason)
}

func (s *smallStore) InsertArchival(ctx context.Context, agent string, e memory.ArchivalEntry) (memory.ArchivalEntry, error) {
	s.saw("InsertArchival")
	return s.inner.InsertArchival(ctx, agent, e)
}

func (s *smallStore) SearchArchival(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	s.saw("SearchArchival")
	return s.inner.SearchArchival(ctx, agent, query, opts)
}

func (s *smallStore) Search(ctx context.Context, agent, query string, opts *search.Options) ([]search.Result, error) {
	s.saw("Search")
	return s.inner.Search(ctx, agent, query, opts)
}

// TestSmallStoreSuffices: a Toolset over a store with only tools.Store's
// methods gives, call for call, the same results and leaves the same
// memory as a Toolset over the real store. The calls use every tool and,
// between them, every method of tools.Store: none is there for nothing.
func TestSmallStoreSuffices(t *testing.T) {
	calls := []struct{ tool, args string }{
		{"block_append", `{"label":"notes","text":"third"}`},
		{"block_append", `{"label":"nope","text":"x"}`}, // not found: the error lists own and shared blocks
		{"block_append", `{"label":"shared_rw","owner":"bob","text":" and more"}`},
		{"block_replace", `{"label":"notes","old":"second","new":"2nd"}`},
		{"block_set_field", `{"label":"profile","field":"age","value":31}`},
		{"block_push_item", `{"label":"todo","item":"walk dog"}`},
		{"block_insert_line", `{"label":"notes","line":2,"text":"middle"}`},
		{"log_append", `{"label":"events","message":"started","fields":{"level":"info"}}`},
		{"archival_insert", `{"content":"Sam prefers tea","tags":["prefs"]}`},
		{"archival_search", `{"query":"tea"}`},
		{"conversation_search", `{"query":"tea"}`},
		{"propose_edit", `{"label":"approval","op":"append_text","text":" now","reason":"r"}`},
		{"load_skill", `{"name":"nope"}`},
	}
	var used []string
	for _, c := range calls {
		used = append(used, c.tool)
	}
	for _, name := range tools.Names() {
		// archival_consolidate needs more than tools.Store (a store that
		// consolidates, memory.Cache): TestArchivalConsolidateTool.
		if !slices.Contains(used, name) && name != "archival_consolidate" {
			t.Fatalf("tool %s is not exercised", name)
		}
	}

	real, other := openStore(t, nil), openStore(t, nil)
	fixture(t, real)
	fixture(t, other)
	small := &smallStore{inner: other}
	tsReal, tsSmall := newToolset(t, real, "alice", nil), newToolset(t, small, "alice", nil)
	for _, c := range calls {
		want, got := call(t, tsReal, c.tool, c.args), call(t, tsSmall, c.tool, c.args)
		if got != want {
			t.Fatalf("%s(%s):\nsmall store: %+v\nreal store:  %+v", c.tool, c.args, got, want)
		}
	}
	// Heads name automerge actors, random per store: compare the rest.
	heads := regexp.MustCompile(`\[[0-9a-f]{64}\]`)
	got, want := heads.ReplaceAllString(snapshot(t, other), "[heads]"), heads.ReplaceAllString(snapshot(t, real), "[heads]")
	if got != want {
		t.Fatalf("memory differs:\nsmall store:\n%s\nreal store:\n%s", got, want)
	}
	var seen []string
	for m := range small.called {
		seen = append(seen, m)
	}
	sort.Strings(seen)
	if len(seen) != 10 {
		t.Fatalf("methods called %v: want all ten of tools.Store", seen)
	}
}
