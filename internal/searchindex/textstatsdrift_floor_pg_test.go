package searchindex_test

import (
	"context"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestDriftFloorOnPostgres: on PostgreSQL too (statistics of the cache's
// own, ownStats) a drifting count is never below the searched partition's
// own. Two rows of agents no partition holds are rewritten by another
// process to hold a new term (its count floored at 1, not 2); one's
// partition loads and that row is deleted, followed exactly (count 0);
// the other row, still holding the term, is found from the cache.
func TestDriftFloorOnPostgres(t *testing.T) {
	p, _ := newPGWriters(t)
	ctx := context.Background()
	x := driftIndex(t, p, 0.005)
	driftSearch(t, x, "crane cargo", "agent-3")
	var a, b int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'writer-5'`).Scan(&a); err != nil {
		t.Fatal(err)
	}
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'writer-6'`).Scan(&b); err != nil {
		t.Fatal(err)
	}
	p.raw(`UPDATE archival SET content = 'the kiwi quokka' WHERE id = ?`, a)
	p.raw(`UPDATE archival SET content = 'a kiwi on the quay' WHERE id = ?`, b)
	driftSearch(t, x, "kiwi", "writer-5") // catch up (drift 2), load writer-5
	driftSearch(t, x, "kiwi", "writer-5")
	_, _, drift0, df0, _ := searchindex.TextStatsFigures(x, search.Archival, "kiwi")
	if err := p.store.Agent("writer-5").Archival().Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	driftSearch(t, x, "kiwi", "writer-6")
	got, inCache := driftSearch(t, x, "kiwi", "writer-6")
	_, _, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, "kiwi")
	want, _ := driftSearch(t, p.whole(), "kiwi", "writer-6")
	t.Logf("before delete: drift %d df %d; after: drift %d df[kiwi] %d; writer-6 kiwi: %d results (cache %v), exact %d", drift0, df0, drift, df, len(got), inCache, len(want))
	if len(got) != len(want) {
		t.Fatalf("writer-6's row holding kiwi is not found: %d results, exact %d (cache answered: %v)", len(got), len(want), inCache)
	}
}
