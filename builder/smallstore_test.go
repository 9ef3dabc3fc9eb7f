package builder_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/toolrules"
)

// fakeStore implements builder.Store and nothing more (plus
// builder.MessageSource, the history's own small interface): six methods,
// not the whole of memory.Store. Its data is a copy of a real store's, so
// a build from it must equal a build from that store.
type fakeStore struct {
	own     []memory.BlockMeta
	shared  []memory.SharedBlock
	msgs    []memory.Message
	batches []memory.Batch
	found   map[string][]search.Result // SearchArchival's answers, by query

	mu        sync.Mutex
	summaries []memory.Summary
}

var (
	_ builder.Store         = (*fakeStore)(nil)
	_ builder.MessageSource = (*fakeStore)(nil)
	_ builder.Store         = (*memory.Cache)(nil)
	_ builder.Store         = memory.Store(nil)
)

func (f *fakeStore) BlocksStamp(context.Context, string) (memory.BlocksStamp, error) {
	return memory.BlocksStamp{}, nil // never changes
}

func (f *fakeStore) ListBlocks(context.Context, string) ([]memory.BlockMeta, error) {
	return slices.Clone(f.own), nil
}

func (f *fakeStore) ListSharedBlocks(context.Context, string) ([]memory.SharedBlock, error) {
	return slices.Clone(f.shared), nil
}

func (f *fakeStore) SaveSummary(_ context.Context, agent string, s memory.Summary) (memory.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.ID, s.Agent = int64(len(f.summaries)+1), agent
	f.summaries = append(f.summaries, s)
	return s, nil
}

func (f *fakeStore) LatestSummary(_ context.Context, agent string) (memory.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.summaries) == 0 {
		return memory.Summary{}, fmt.Errorf("no summary of %q: %w", agent, memory.ErrNotFound)
	}
	return f.summaries[len(f.summaries)-1], nil
}

func (f *fakeStore) SearchArchival(_ context.Context, _, query string, _ *search.Options) ([]search.Result, error) {
	return f.found[query], nil
}

func (f *fakeStore) Messages(context.Context, string, *memory.MessageQuery) ([]memory.Message, error) {
	return slices.Clone(f.msgs), nil
}

func (f *fakeStore) Batches(context.Context, string) ([]memory.Batch, error) {
	return slices.Clone(f.batches), nil
}

// copyStore reads agent's blocks, shares and history out of st into a
// fakeStore, and the archival search answers for queries.
func copyStore(t *testing.T, st *memory.Cache, agent string, queries ...string) *fakeStore {
	t.Helper()
	ctx := context.Background()
	f := &fakeStore{found: map[string][]search.Result{}}
	var err error
	if f.own, err = st.ListBlocks(ctx, agent); err != nil {
		t.Fatal(err)
	}
	if f.shared, err = st.ListSharedBlocks(ctx, agent); err != nil {
		t.Fatal(err)
	}
	if f.msgs, err = st.Messages(ctx, agent, nil); err != nil {
		t.Fatal(err)
	}
	if f.batches, err = st.Batches(ctx, agent); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if f.found[q], err = st.SearchArchival(ctx, agent, q, search.NewOptions().Limit(builder.DefaultRecallLimit)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// entropyBuild is the "entropy" golden case's build over any Store.
func entropyBuild(t *testing.T, st builder.Store, src builder.MessageSource, cfg builder.ContextConfig) *builder.Request {
	t.Helper()
	req, err := builder.New(st, cfg).ForAgent("entropy").WithMessages(src).WithTools(testTools).
		WithBaseInstructions("You are Entropy, a task breakdown specialist.").
		WithToolRules(toolrules.StartConstraint("context"), toolrules.ExitLoop("send_message"), toolrules.MaxCalls("search_tickets", 3)).
		WithModelInfo(builder.ModelInfoFor("gpt-4o")).
		WithBatchBlocks("ticket-42").
		Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestSmallStoreSuffices: builder.Store's six methods are all a build
// reads. A fake holding a copy of a real store's data builds the same
// request (system prompt and messages, byte for byte) as the real store,
// and both match the "entropy" golden file; with compression and recall
// on, the fake's summaries and archival search stand in for the store's.
func TestSmallStoreSuffices(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	fake := copyStore(t, st, "entropy")

	want, err := os.ReadFile(filepath.Join("testdata", "entropy.golden"))
	if err != nil {
		t.Fatal(err)
	}
	real := dump(entropyBuild(t, st, st, builder.DefaultConfig()))
	if real != string(want) {
		t.Fatalf("the real store no longer matches entropy.golden (TestGolden says more):\n%s", real)
	}
	if got := dump(entropyBuild(t, fake, fake, builder.DefaultConfig())); got != string(want) {
		t.Fatalf("the fake store's build differs from entropy.golden:\n%s", got)
	}

	t.Run("compression and recall", func(t *testing.T) {
		ctx := context.Background()
		st := openStore(t)
		seedEntropy(t, st)
		for _, c := range []string{"Ticket 42 was filed by Sam on Monday.", "The release ships on Friday."} {
			if _, err := st.InsertArchival(ctx, "entropy", memory.ArchivalEntry{Content: c}); err != nil {
				t.Fatal(err)
			}
		}
		const query = "ticket 42 release"
		fake := copyStore(t, st, "entropy", query)
		if len(fake.found[query]) == 0 {
			t.Fatal("the real store recalls nothing: the comparison would prove little")
		}
		cfg := builder.DefaultConfig()
		cfg.MaxMessagesCap = 3
		cfg.Compression = compress.RecursiveSummarization{ChunkSize: 2}
		cfg.Recall = &builder.RecallOptions{}
		build := func(s builder.Store, src builder.MessageSource) string {
			req, err := builder.New(s, cfg).ForAgent("entropy").WithMessages(src).WithRecallQuery(query).Build(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if req.Metadata.SummaryID == 0 || len(req.Metadata.Recalled) == 0 {
				t.Fatalf("summary %d, recalled %v: compression or recall did not run", req.Metadata.SummaryID, req.Metadata.Recalled)
			}
			return dump(req)
		}
		real, got := build(st, st), build(fake, fake)
		if got != real {
			t.Fatalf("fake and real store differ:\n%s\n--- real ---\n%s", got, real)
		}
		if len(fake.summaries) == 0 {
			t.Fatal("compression saved no summary through the fake")
		}
	})

	t.Run("optional parts", func(t *testing.T) {
		// The context library is an optional part (LibraryStore): a store
		// without it is refused with ErrInvalid, never asked in a hidden way.
		cfg := builder.DefaultConfig()
		cfg.Library = &builder.LibraryOptions{}
		_, err := builder.New(fake, cfg).ForAgent("entropy").Build(context.Background())
		if !errors.Is(err, builder.ErrInvalid) {
			t.Fatalf("library over a store without one: err = %v", err)
		}
	})
}
