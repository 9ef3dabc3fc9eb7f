package postgres_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/storetest"
)

// TestConformance runs the store conformance suite on PostgreSQL.
func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) memory.Store {
		c, err := memory.Open(context.Background(), srv.NewDatabase(t), &memory.Options{Approver: approver})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}
