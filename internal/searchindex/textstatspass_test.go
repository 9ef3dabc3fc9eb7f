package searchindex_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// A statistics pass reads the rows owner by owner; a row whose owner the
// owner's query does not find by its name (a hand edit on SQLite left
// the name a blob, which equals no text) is still counted: the pass
// counts every row again with the store-wide query.
func TestTextStatsPassOwnerNamedOtherwise(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	for i, c := range []string{"apple banana", "banana cherry", "cherry damson", "damson elder"} {
		insertArchival(t, db, archivalRow{Agent: []string{"a", "b"}[i%2], Content: c})
	}
	if _, err := db.ExecContext(ctx, `UPDATE archival SET agent = CAST(agent AS BLOB) WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	rows, _, _, err := searchindex.TextStatsOf(ctx, x, search.Archival, false)
	if err != nil {
		t.Fatal(err)
	}
	if rows != 4 {
		t.Fatalf("%d rows counted, want 4", rows)
	}
	passLikeSel(t, x, "an owner's name made a blob")
}

// A pass reads an owner's entries together to find their neighbours in
// Go; an owner whose contents exceed the statistics' share of the bound
// is read one entry at a time instead, so that a pass never holds more
// than the bound of one agent's text.
func TestTextStatsPassHoldsNoBigOwnerWhole(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "one goroutine analyzing 30 MB twice")
	ctx := context.Background()
	db := openDB(t)
	const rows = 5000
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO archival (agent, content, created_at, valid_from)
		SELECT 'big', 'w' || i || ' ' || replace(hex(zeroblob(1000)), '00', 'apple '), i, i FROM n`, rows); err != nil {
		t.Fatal(err)
	}
	insertArchival(t, db, archivalRow{Agent: "small", Content: "apple banana"})
	const bound = 3 << 20
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	peak := func(bySel bool) uint64 {
		var base runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&base)
		var top uint64
		n := 0
		searchindex.SetTextScanFault(x, func(int64) error {
			if n++; n%500 == 0 {
				var m runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > base.HeapAlloc {
					top = max(top, m.HeapAlloc-base.HeapAlloc)
				}
			}
			return nil
		})
		defer searchindex.SetTextScanFault(x, nil)
		rows, _, _, err := searchindex.TextStatsOf(ctx, x, search.Archival, bySel)
		if err != nil {
			t.Fatal(err)
		}
		if rows != 5001 {
			t.Fatalf("%d rows counted, want 5001", rows)
		}
		return top
	}
	sel, owners := peak(true), peak(false)
	if owners > bound {
		t.Fatalf("a pass owner by owner held %d KiB, past the cache's bound (%d KiB); the store-wide query's held %d KiB", owners>>10, bound>>10, sel>>10)
	}
	passLikeSel(t, x, "a big owner")
}
