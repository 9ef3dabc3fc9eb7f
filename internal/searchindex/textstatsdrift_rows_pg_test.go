package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

func driftIndex(t *testing.T, p *pgPartial, drift float64) *searchindex.Index {
	t.Helper()
	ctx := context.Background()
	x, err := searchindex.NewIndex(ctx, p.b.DB(), p.b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: p.b.Write, TextCacheBytes: 1 << 22, VectorCacheBytes: -1, TextStatsDrift: drift})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	searchindex.ForceTextPartial(x)
	searchindex.SetTextStatsRest(x, false)
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	return x
}

func driftSearch(t *testing.T, x *searchindex.Index, q, agent string) ([]search.Result, bool) {
	t.Helper()
	before := searchindex.TextCacheAnswers(x)
	res, err := x.Search(context.Background(), q, search.Scope{Agent: agent}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100))
	if err != nil {
		t.Fatal(err)
	}
	return res, searchindex.TextCacheAnswers(x) != before
}

// TestDriftRewriteNewTermMissing: a row another process rewrites to hold
// a term no counted row holds is followed approximately, and its terms
// count at least once: once its owner's partition loads, the cache finds
// it, as SQL does.
func TestDriftRewriteNewTermMissing(t *testing.T) {
	p, _ := newPGWriters(t)
	ctx := context.Background()
	x, plain := driftIndex(t, p, 0.005), driftIndex(t, p, 0)
	// warm partitions of agent-3 in both
	driftSearch(t, x, "crane cargo", "agent-3")
	driftSearch(t, plain, "crane cargo", "agent-3")
	var id int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'writer-5'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	p.raw(`UPDATE archival SET content = 'the zyzzyva quokka' WHERE id = ?`, id)
	whole := p.whole()
	want, _ := driftSearch(t, whole, "zyzzyva", "writer-5")
	got, inCache := driftSearch(t, x, "zyzzyva", "writer-5")
	gotPlain, _ := driftSearch(t, plain, "zyzzyva", "writer-5")
	// again, the partition now resident
	got2, inCache2 := driftSearch(t, x, "zyzzyva", "writer-5")
	rows, tokens, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, "zyzzyva")
	t.Logf("exact %d results; drift=0.005: %d (cache %v), again %d (cache %v); drift=0: %d; stats rows %d tokens %d drift %d df[zyzzyva] %d",
		len(want), len(got), inCache, len(got2), inCache2, len(gotPlain), rows, tokens, drift, df)
	if len(want) != len(got2) {
		t.Errorf("with TextStatsDrift the rewritten row is not found: %d results, exact %d", len(got2), len(want))
	}
}

// TestDriftTokensZero: rows rewritten long by another process (followed
// approximately: the tokens keep the old length), loaded, then deleted
// (followed exactly: the tokens lose the new length) leave the token
// total at no less than a token a row, so scores stay above 0 and no
// row is returned twice.
func TestDriftTokensZero(t *testing.T) {
	p, _ := newPGWriters(t)
	ctx := context.Background()
	x := driftIndex(t, p, 0.005)
	driftSearch(t, x, "crane cargo", "agent-3")
	rows0, tokens0, _, _, _ := searchindex.TextStatsFigures(x, search.Archival, "crane")
	long := strings.Repeat("zz ", 20000)
	var ids []int64
	r, err := p.b.DB().QueryContext(ctx, `SELECT id FROM archival WHERE agent = 'writer-5' ORDER BY id LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id int64
		r.Scan(&id)
		ids = append(ids, id)
	}
	r.Close()
	for _, id := range ids {
		p.raw(`UPDATE archival SET content = content || ' ' || ? WHERE id = ?`, long, id)
	}
	driftSearch(t, x, "crane cargo", "writer-5") // catch up (drift 3), load writer-5
	_, tokens1, drift1, _, _ := searchindex.TextStatsFigures(x, search.Archival, "crane")
	for _, id := range ids {
		p.raw(`DELETE FROM archival WHERE id = ?`, id)
	}
	got, inCache := driftSearch(t, x, "crane cargo", "agent-3")
	searchindex.WaitTextStatsPasses(x)
	rows, tokens, drift, _, _ := searchindex.TextStatsFigures(x, search.Archival, "crane")
	whole := p.whole()
	want, _ := driftSearch(t, whole, "crane cargo", "agent-3")
	t.Logf("before: rows %d tokens %d; after rewrites: tokens %d drift %d; after deletes: rows %d tokens %d drift %d; cache %v", rows0, tokens0, tokens1, drift1, rows, tokens, drift, inCache)
	seen := map[int64]int{}
	for _, r := range got {
		seen[r.ID]++
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || r.Score == 0 {
			t.Errorf("result %d score %v", r.ID, r.Score)
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("result %d returned %d times", id, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d results, exact %d", len(got), len(want))
	}
	fmt.Println(keys(got)[:min(len(got), 5)], keys(want)[:min(len(want), 5)])
}

// TestDriftRewriteHidesOtherRow: a rewritten row's delete, followed
// exactly, takes its new term's count (followed approximately) down to 0;
// another, untouched row holding the term is still found: drifting
// counts are at least the partition's own.
func TestDriftRewriteHidesOtherRow(t *testing.T) {
	p, _ := newPGWriters(t)
	ctx := context.Background()
	x := driftIndex(t, p, 0.005)
	driftSearch(t, x, "crane cargo", "agent-3")
	var id int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'writer-5'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	p.raw(`UPDATE archival SET content = 'the kiwi quokka' WHERE id = ?`, id)
	driftSearch(t, x, "kiwi", "writer-5")      // catch up, load writer-5 (holds kiwi)
	p.insert("writer-6", "a kiwi on the quay") // counted exactly: df[kiwi] 1
	driftSearch(t, x, "kiwi", "agent-3")
	if err := p.store.Agent("writer-5").Archival().Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	driftSearch(t, x, "kiwi", "writer-6") // (loads writer-6)
	got, inCache := driftSearch(t, x, "kiwi", "writer-6")
	_, _, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, "kiwi")
	t.Logf("writer-6 kiwi: %d results (cache %v); drift %d df[kiwi] %d", len(got), inCache, drift, df)
	want, _ := driftSearch(t, p.whole(), "kiwi", "writer-6")
	if len(got) != len(want) || len(want) == 0 {
		t.Errorf("writer-6's rows holding kiwi: %d results (%v), exact %d (%v)", len(got), got, len(want), want)
	}
}
