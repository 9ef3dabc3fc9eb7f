package searchindex_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
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
