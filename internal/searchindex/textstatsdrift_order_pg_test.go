package searchindex_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestDriftOutOfOrderInsert: two writers insert concurrently on
// PostgreSQL, and the row with the lower id commits after a catch-up saw
// the higher one. Its id is then at or below the statistics' maximum, so
// a drifting cache cannot tell it from a change of a counted row: it is
// followed approximately, and the terms only it holds count once, so its
// search finds it.
func TestDriftOutOfOrderInsert(t *testing.T) {
	for _, share := range []float64{0, 0.005} {
		p, _ := newPGWriters(t)
		ctx := context.Background()
		x := driftIndex(t, p, share)
		driftSearch(t, x, "crane cargo", "writer-7") // writer-7 resident
		now := time.Now().UnixNano()
		tx, err := p.b.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('writer-7', 'the slowpoke quiddity', $1, $1)`, now); err != nil {
			t.Fatal(err)
		}
		p.insert("writer-8", "a quick harbour note")
		driftSearch(t, x, "crane cargo", "agent-3") // catch-up sees the higher id
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		got, inCache := driftSearch(t, x, "quiddity", "writer-7")
		rows, _, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, "quiddity")
		searchindex.WaitTextStatsPasses(x)
		got2, inCache2 := driftSearch(t, x, "quiddity", "writer-7")
		var n int64
		p.b.DB().QueryRowContext(ctx, `SELECT count(*) FROM archival`).Scan(&n)
		t.Logf("share %v: %d results (cache %v), again %d (cache %v); stats rows %d (table %d) drift %d df[quiddity] %d drops %d",
			share, len(got), inCache, len(got2), inCache2, rows, n, drift, df, searchindex.TextStatsDrops(x))
		// (Its neighbours' indexed text may hold its words too.)
		want, _ := driftSearch(t, p.whole(), "quiddity", "writer-7")
		if len(want) == 0 || len(got) != len(want) || len(got2) != len(want) {
			t.Errorf("(share %v): the late-committed row is not found: %d, %d results, want %d", share, len(got), len(got2), len(want))
		}
	}
}
