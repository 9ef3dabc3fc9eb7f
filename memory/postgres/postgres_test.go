package postgres_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/groupcommit/committest"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/storetest"
	"github.com/engram-go/engram/search"
)

// TestConformance runs the store conformance suite on PostgreSQL: plain,
// with a cache of one document (every other access a cold load), and with
// an embedder (vector and hybrid searches run for real: in pgvector when
// the server has it, and with in-process KNN).
func TestConformance(t *testing.T) {
	srv := pgtest.Start(t)
	srv.HasPGVector(t) // required under ENGRAM_TEST_PGVECTOR=1
	for _, mode := range []string{"plain", "cache1", "embedder", "embedder-in-process", "caches", "sql", "epochs"} {
		t.Run(mode, func(t *testing.T) {
			storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) memory.Store {
				opts := &memory.Options{Approver: approver}
				switch mode {
				case "cache1":
					opts.CacheSize = 1
				case "embedder":
					opts.Embedder = search.NewOffline(64)
				case "embedder-in-process":
					opts.Embedder = search.NewOffline(64)
					opts.VectorCacheBytes = 1 << 30
				case "caches":
					// Both in-process caches, loaded (empty) now and caught
					// up by every search: the cache paths answer from the
					// first search on.
					opts.Embedder = search.NewOffline(64)
					opts.VectorCacheBytes = 1 << 30
				case "sql":
					// Every full-text leg ranked by the tsvector query.
					opts.TextCacheBytes = -1
				case "epochs":
					opts.CompactAfter, opts.HistoryLimit = 3, 1 // a new epoch every few writes
				}
				c, err := memory.Open(context.Background(), srv.NewDatabase(t), opts)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "caches" {
					if err := c.Index().WarmVectorCache(context.Background()); err != nil {
						t.Fatal(err)
					}
					if err := c.Index().WarmTextCache(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				return c
			})
		})
	}
}

// TestLimits runs the per-entry caps and quota suite on PostgreSQL.
func TestLimits(t *testing.T) {
	srv := pgtest.Start(t)
	storetest.RunLimitTests(t, func(t *testing.T, o *memory.Options) memory.Store {
		c, err := memory.Open(context.Background(), srv.NewDatabase(t), o)
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

// TestGroupCommit: concurrent writes share one advisory-locked
// transaction, each failing, panicking or cancelled one alone (see
// committest.Run).
func TestGroupCommit(t *testing.T) {
	srv := pgtest.Start(t)
	b, err := postgres.Open(context.Background(), srv.NewDatabase(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	committest.Run(t, b)
}
