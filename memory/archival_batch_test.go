package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// failingEmbedder embeds like the offline embedder until its budget of
// calls is spent, then fails.
type failingEmbedder struct {
	search.Embedder
	calls, budget atomic.Int64
}

var errEmbedderDown = errors.New("embedder down")

func (f *failingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.calls.Add(1) > f.budget.Load() {
		return nil, errEmbedderDown
	}
	return f.Embedder.Embed(ctx, texts)
}

// A batch that fails half-way keeps what it committed, reports how much,
// and the rest can be sent again.
func TestArchivalBatchFailsHalfWay(t *testing.T) {
	ctx := context.Background()
	emb := &failingEmbedder{Embedder: search.NewOffline(16)}
	emb.budget.Store(1 << 30)
	s, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "m.db")), &memory.Options{Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var in []memory.ArchivalEntry
	for i := range 30 {
		in = append(in, memory.ArchivalEntry{Content: fmt.Sprintf("entry %d", i)})
	}
	emb.calls.Store(0)
	emb.budget.Store(2) // the third slice's embedding fails
	out, err := s.Agent("a").Archival().InsertBatch(ctx, in, &memory.BatchOptions{Size: 10})
	if !errors.Is(err, errEmbedderDown) {
		t.Fatalf("err = %v, want the embedder's error", err)
	}
	if len(out) != 20 {
		t.Fatalf("reported %d stored, want 20", len(out))
	}
	stored, _ := s.Agent("a").Archival().List(ctx, nil)
	if len(stored) != 20 {
		t.Fatalf("%d stored, want 20", len(stored))
	}
	emb.budget.Store(1 << 30)
	rest, err := s.Agent("a").Archival().InsertBatch(ctx, in[len(out):], nil)
	if err != nil || len(rest) != 10 {
		t.Fatalf("resend: %d, %v", len(rest), err)
	}
	if stored, _ := s.Agent("a").Archival().List(ctx, nil); len(stored) != 30 {
		t.Fatalf("%d stored after the resend, want 30", len(stored))
	}
}

// A batch with a bad entry stores nothing and says which entry, as an
// *EntryError (the CLI turns its index into a line number).
func TestArchivalBatchNamesTheBadEntry(t *testing.T) {
	ctx := context.Background()
	s, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "m.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Agent("ada").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "a"}, {Content: "b"}, {Content: " "}}, nil)
	var ee *memory.EntryError
	if !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, memory.ErrInvalidArgument) {
		t.Fatalf("err = %v, want an *EntryError for entry 2 wrapping ErrInvalidArgument", err)
	}
	if got, _ := s.Agent("ada").Archival().List(ctx, nil); len(got) != 0 {
		t.Fatalf("%d entries stored", len(got))
	}
}
