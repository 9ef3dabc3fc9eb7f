package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/storetest"
	"github.com/engram-go/engram/search"
)

func TestCacheConformance(t *testing.T) {
	modes := []string{"file", "memory", "file-cache1", "file-embedder", "file-sql", "file-notextcache", "file-caches", "file-epochs"}
	if testenv.Race && !testenv.Long() {
		// Under the race detector (about 2 s a subtest) the suite runs in
		// the modes with background work of their own: the caches' loads,
		// compaction and epoch switches. Every mode runs without -race,
		// and under it with ENGRAM_LONG_TESTS=1.
		modes = []string{"file-embedder", "file-epochs"}
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) *memory.Store {
				path := filepath.Join(t.TempDir(), "store.db")
				opts := &memory.Options{Approver: approver}
				switch mode {
				case "memory":
					path = ":memory:"
				case "file-cache1":
					opts.CacheSize = 1 // every other access is a cold load
				case "file-embedder":
					// Vector and hybrid modes run for real; the caches load
					// in the background, so searches run over them or in
					// SQL depending on timing.
					opts.Embedder = search.NewOffline(64)
				case "file-sql":
					// Every leg in SQLite: FTS5 ranking, KNN in SQL.
					opts.Embedder = search.NewOffline(64)
					opts.TextCacheBytes, opts.VectorCacheBytes = -1, -1
				case "file-caches":
					opts.Embedder = search.NewOffline(64) // both caches, loaded below
				case "file-notextcache":
					opts.TextCacheBytes = -1 // full-text legs ranked by FTS5
				case "file-epochs":
					// Compaction every 3 writes, each a candidate for a
					// new epoch: every behaviour holds across switches.
					opts.CompactAfter, opts.HistoryLimit = 3, 1
				}
				c, err := memory.Open(context.Background(), fresh(path), opts)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "file-caches" {
					// Loaded (empty) now, caught up by every search: the
					// cache paths answer from the first search on.
					if err := storeaccess.Index(c).WarmVectorCache(context.Background()); err != nil {
						t.Fatal(err)
					}
					if err := storeaccess.Index(c).WarmTextCache(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				return c
			})
		})
	}
}

// TestArchivalNeighboursConformance runs the archival neighbour suite on
// SQLite: full-text legs ranked in SQL (FTS5), by a text cache loaded
// before the writes, and by one loaded when the first search runs.
func TestArchivalNeighboursConformance(t *testing.T) {
	for _, mode := range []string{"file", "file-sql", "file-caches"} {
		t.Run(mode, func(t *testing.T) {
			storetest.RunNeighbourTests(t, func(t *testing.T, o *memory.Options) *memory.Store {
				if o == nil {
					o = &memory.Options{}
				}
				if mode == "file-sql" {
					o.TextCacheBytes = -1
				}
				c, err := memory.Open(context.Background(), fresh(filepath.Join(t.TempDir(), "store.db")), o)
				if err != nil {
					t.Fatal(err)
				}
				if mode == "file-caches" {
					if err := storeaccess.Index(c).WarmTextCache(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				return c
			})
		})
	}
}

// TestCacheLimits runs the per-entry caps and quota suite on SQLite: a
// file, the in-memory store, and a file with an embedder (entries are
// embedded before the quota's check).
func TestCacheLimits(t *testing.T) {
	modes := []string{"file", "memory", "file-embedder"}
	if testenv.Race && !testenv.Long() {
		// Under the race detector the suite runs on a file with an
		// embedder (entries embedded before the quota's check); the
		// plain file and the in-memory store, the same checks without
		// it, run without -race and under it with ENGRAM_LONG_TESTS=1.
		modes = []string{"file-embedder"}
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			storetest.RunLimitTests(t, func(t *testing.T, o *memory.Options) *memory.Store {
				if o == nil {
					o = &memory.Options{}
				}
				path := filepath.Join(t.TempDir(), "store.db")
				switch mode {
				case "memory":
					path = ":memory:"
				case "file-embedder":
					o.Embedder = search.NewOffline(64)
				}
				c, err := memory.Open(context.Background(), fresh(path), o)
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
		})
	}
}
