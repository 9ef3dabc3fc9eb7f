package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/storetest"
	"github.com/engram-go/engram/search"
)

func TestCacheConformance(t *testing.T) {
	for _, mode := range []string{"file", "memory", "file-cache1", "file-embedder", "file-vectorcache", "file-notextcache", "file-caches", "file-epochs"} {
		t.Run(mode, func(t *testing.T) {
			storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) memory.Store {
				path := filepath.Join(t.TempDir(), "store.db")
				opts := &memory.Options{Approver: approver}
				switch mode {
				case "memory":
					path = ":memory:"
				case "file-cache1":
					opts.CacheSize = 1 // every other access is a cold load
				case "file-embedder":
					opts.Embedder = search.NewOffline(64) // vector and hybrid modes run for real
				case "file-vectorcache":
					opts.Embedder = search.NewOffline(64)
					opts.VectorCache = true
				case "file-caches":
					opts.Embedder = search.NewOffline(64)
					opts.VectorCache = true
				case "file-notextcache":
					opts.TextCacheBytes = -1 // full-text legs ranked by FTS5
				case "file-epochs":
					// Compaction every 3 writes, each a candidate for a
					// new epoch: every behaviour holds across switches.
					opts.CompactAfter, opts.HistoryLimit = 3, 1
				}
				c, err := memory.Open(context.Background(), path, opts)
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
		})
	}
}
