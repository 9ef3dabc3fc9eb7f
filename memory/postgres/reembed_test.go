package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
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
	for _, text := range []string{"the kettle is in the kitchen", "bicycles need oil each spring", "the garden gate squeaks"} {
		if _, err := a.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: text}); err != nil {
			t.Fatal(err)
		}
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
	if want := map[bool]string{true: "pgvector", false: "in-process"}[pgv]; storeaccess.Index(b).VectorEngine() != want {
		t.Errorf("VectorEngine = %q, want %q", storeaccess.Index(b).VectorEngine(), want)
	}
	rs, err := b.Agent("ada").Archival().Search(ctx, "kettle kitchen", search.NewOptions().Mode(search.Vector).Limit(1))
	if err != nil || len(rs) != 1 || rs[0].Content != "the kettle is in the kitchen" {
		t.Fatalf("vector search after Reembed: %v, %v", rs, err)
	}
	if pgv {
		// Every row carries the new vector in a column of the new
		// dimension (pgvector's typmod is the dimension).
		var unfilled, dims int
		if err := storeaccess.Backend(b).DB().QueryRowContext(ctx, `SELECT (SELECT count(*) FROM vec_archival WHERE emb IS NULL),
			(SELECT atttypmod FROM pg_attribute WHERE attrelid = 'vec_archival'::regclass AND attname = 'emb')`).Scan(&unfilled, &dims); err != nil {
			t.Fatal(err)
		}
		if unfilled != 0 || dims != 64 {
			t.Fatalf("after Reembed to 64 dims: %d rows without emb, column dimension %d", unfilled, dims)
		}
		var hnsw int
		if err := storeaccess.Backend(b).DB().QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'vec_archival_emb' AND indexdef LIKE '%hnsw%'`).Scan(&hnsw); err != nil || hnsw != 1 {
			t.Fatalf("after Reembed: %d HNSW indexes on vec_archival (%v)", hnsw, err)
		}
	}
}
