package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// lastFirst scores later candidates higher: it reverses the fused order.
type lastFirst struct{ calls int }

func (l *lastFirst) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	l.calls++
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = float64(i)
	}
	return out, nil
}

// Options.Reranker reaches the store's search index.
func TestStoreReranker(t *testing.T) {
	ctx := context.Background()
	rr := &lastFirst{}
	store, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "x.db")), &memory.Options{Reranker: rr, RerankDepth: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, c := range []string{"kiwi kiwi kiwi", "kiwi kiwi", "kiwi and other fruit"} {
		if _, err := store.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: c}); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := store.Agent("a").Search(ctx, "kiwi", search.NewOptions().Mode(search.FTS))
	if err != nil {
		t.Fatal(err)
	}
	if rr.calls != 1 || len(rs) != 3 || rs[0].Content != "kiwi and other fruit" || rs[0].Source.RerankRank != 1 {
		t.Fatalf("calls %d, results %+v", rr.calls, rs)
	}
}

// failingReranker always fails.
type failingReranker struct{}

func (failingReranker) Rerank(context.Context, string, []string) ([]float64, error) {
	return nil, errors.New("reranker down")
}

// Options.RerankStrict reaches the store's search index: without it a
// store's caller could set a Reranker but never have its failures fail
// the search (searchindex.IndexOptions.RerankStrict had no way in).
func TestStoreRerankStrict(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		strict  bool
		wantErr bool
	}{{false, false}, {true, true}} {
		store, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "x.db")), &memory.Options{Reranker: failingReranker{}, RerankStrict: tc.strict})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "kiwi"}); err != nil {
			t.Fatal(err)
		}
		rs, err := store.Agent("a").Search(ctx, "kiwi", search.NewOptions().Mode(search.FTS))
		if tc.wantErr != errors.Is(err, search.ErrReranker) || !tc.wantErr && len(rs) != 1 {
			t.Errorf("strict %v: %d results, err %v", tc.strict, len(rs), err)
		}
		store.Close()
	}
}
