package searchindex_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
)

// TestTextCacheHugeBound: a bound near MaxInt64 (engram serve
// --text-cache 8EiB, say) holds a one-row store whole; the estimate's
// slack once overflowed past MaxInt64/2 and made every store partial.
func TestTextCacheHugeBound(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	insertArchival(t, db, archivalRow{Agent: "a", Content: "hello world"})
	for _, limit := range []int64{1 << 30, math.MaxInt64/2 + 1, math.MaxInt64} {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.WarmTextCache(ctx); err != nil {
			t.Errorf("bound %d: WarmTextCache: %v, want a whole cache", limit, err)
		}
		if partial, _, _ := searchindex.TextCachePartial(x); partial {
			t.Errorf("bound %d: a one-row store went partial", limit)
		}
		x.Close()
	}
}
