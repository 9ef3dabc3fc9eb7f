package searchindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestDriftSQLiteRewrite: on SQLite, a row another process rewrites to
// hold a new term, in a partition not resident when the rewrite is
// caught up, is found by that term once its owner is searched, with and
// without a drift share.
func TestDriftSQLiteRewrite(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	doomed := driftCorpus(t, db)
	for _, share := range []float64{0, 0.005} {
		x := partialDriftIndex(t, db, share)
		o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
		if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, o); err != nil {
			t.Fatal(err)
		}
		word := fmt.Sprintf("zyzzyva%d", int(share*1000))
		if _, err := db.ExecContext(ctx, `UPDATE archival SET content = ? WHERE id = ?`, "the "+word+" quokka", doomed[10]); err != nil {
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
