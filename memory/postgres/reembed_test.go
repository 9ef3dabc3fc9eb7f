package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Switching embedders on PostgreSQL: a store with another embedder is
// refused until Reembed, after which vector search uses the new vectors.
func TestReembedPostgres(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	pgv := srv.HasPGVector(t)
	dsn := srv.NewDatabase(t)
	a, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(32)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.InsertArchival(ctx, "ada", memory.ArchivalEntry{Content: "the kettle is in the kitchen"}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if _, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(64)}); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Fatalf("open with another embedder: err = %v", err)
	}
	b, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(64), OpenForReembed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if want := map[bool]string{true: "pgvector", false: "in-process"}[pgv]; b.Index().VectorEngine() != want {
		t.Errorf("VectorEngine = %q, want %q", b.Index().VectorEngine(), want)
	}
	rs, err := b.SearchArchival(ctx, "ada", "kettle kitchen", search.NewOptions().Mode(search.Vector))
	if err != nil || len(rs) != 1 {
		t.Fatalf("vector search after Reembed: %v, %v", rs, err)
	}
}
