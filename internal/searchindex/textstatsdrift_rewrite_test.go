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

// TestDriftSQLiteRewrite: on SQLite, a row another process rewrites to
// hold a new term, in a partition not resident when the rewrite is
// caught up, is found by that term once its owner is searched, with and
// without a drift share.
func TestDriftSQLiteRewrite(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	var victim int64
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range 20 {
		for j := range 150 {
			id := insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: fmt.Sprintf("entry %d of %d: the harbour crane lifts cargo w%d", j, a, j%37)})
			if a == 19 && j == 10 {
				victim = id
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, share := range []float64{0, 0.005} {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 4 << 20, VectorCacheBytes: -1, TextStatsDrift: share})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		searchindex.ForceTextPartial(x)
		searchindex.SetTextStatsRest(x, false)
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
		o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
		if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, o); err != nil {
			t.Fatal(err)
		}
		word := fmt.Sprintf("zyzzyva%d", int(share*1000))
		if _, err := db.ExecContext(ctx, `UPDATE archival SET content = ? WHERE id = ?`, "the "+word+" quokka", victim); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, o); err != nil {
			t.Fatal(err)
		}
		res, err := x.Search(ctx, word, search.Scope{Agent: "agent-19"}, o)
		if err != nil {
			t.Fatal(err)
		}
		res2, _ := x.Search(ctx, word, search.Scope{Agent: "agent-19"}, o)
		_, _, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, word)
		t.Logf("share %v: %d, %d results; drift %d df %d", share, len(res), len(res2), drift, df)
		if len(res2) != 1 {
			t.Errorf("(share %v): rewritten row not found", share)
		}
	}
}
