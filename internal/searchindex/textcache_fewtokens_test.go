package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestPartialRanksExactWithFewTokens: without a drift share (the library
// default), a store whose rows mostly hold no token (empty or
// punctuation-only content: fewer tokens than rows) ranks in a partial
// cache exactly as in a whole one: the mean length floored at a token a
// row is for drifting statistics only.
func TestPartialRanksExactWithFewTokens(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) {
		for a := range 4 {
			for j := range 40 {
				c := "---"
				if j%10 == 0 {
					c = fmt.Sprintf("harbour crane %d lifts cargo", j)
				}
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: c})
			}
		}
	})
	open := func(limit int64, partial bool) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if partial {
			searchindex.ForceTextPartial(x)
		}
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
		return x
	}
	x, whole := open(4<<20, true), open(1<<30, false)
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
	sqlOnly, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlOnly.Close()
	var res [3][]search.Result
	for i, y := range []*searchindex.Index{sqlOnly, whole, x} {
		for range 2 {
			res[i], err = y.Search(ctx, "crane cargo", search.Scope{Agent: "agent-1"}, o)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("sql %v\nwhole %v\npartial %v (cache answers %d)", res[0], res[1], res[2], searchindex.TextCacheAnswers(x))
	if err := sameResults(res[0], res[1], 1e-12); err != nil {
		t.Logf("whole vs SQL: %v", err)
	}
	if searchindex.TextCacheAnswers(x) == 0 {
		t.Fatal("partial never answered")
	}
	if err := sameBits(res[1], res[2]); err != nil {
		t.Fatalf("share 0, partial vs whole: %v", err)
	}
}
