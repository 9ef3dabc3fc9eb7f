package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// TestInMemoryStoreSearches: a ":memory:" store (one connection for
// readers and the writer) answers a search right after a write, its
// caches loading over that one connection.
func TestInMemoryStoreSearches(t *testing.T) {
	for range 3 { // the caches' first reads race the search: try a few
		func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s, err := memory.Open(ctx, ":memory:", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			a := s.Agent("a")
			if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "the flutter of wings"}); err != nil {
				t.Fatal(err)
			}
			hits, err := a.Search(ctx, "flutter", nil)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if len(hits) == 0 {
				t.Fatal("Search found nothing")
			}
		}()
	}
}
