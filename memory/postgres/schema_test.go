package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// A database migrated by a newer engram is refused, not written to.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(ctx, dsn, &memory.Options{Embedder: search.NewOffline(16)})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE engram_schema SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := memory.Open(ctx, dsn, nil); !errors.Is(err, postgres.ErrNewerSchema) {
		t.Fatalf("open of a newer schema: err = %v", err)
	}
}
