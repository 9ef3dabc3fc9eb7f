package searchindex_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestDriftRandomWritesPostgres: as TestDriftRandomWritesSQLite on PostgreSQL:
// raw SQL deletes and rewrites beside store inserts; the drifting
// partial cache, when it answers, finds every row SQL finds.
func TestDriftRandomWritesPostgres(t *testing.T) {
	store, b := openPGStore(t)
	p := &pgPartial{t: t, store: store, b: b}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 7))
	var ids []int64
	for a := range 10 {
		var batch []memory.ArchivalEntry
		for range 30 {
			batch = append(batch, memory.ArchivalEntry{Content: driftText(r)})
		}
		got, err := store.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			ids = append(ids, e.ID)
		}
	}
	x := driftIndex(t, p, 0.05)
	ref := p.index(-1, false)
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(1000)
	cached, maxDrift := 0, int64(0)
	for step := range 250 {
		switch k := r.IntN(10); {
		case k < 3 && len(ids) > 0:
			i := r.IntN(len(ids))
			p.raw(`DELETE FROM archival WHERE id = ?`, ids[i])
			ids = slices.Delete(ids, i, i+1)
		case k < 6 && len(ids) > 0:
			p.raw(`UPDATE archival SET content = ? WHERE id = ?`, driftText(r)+fmt.Sprint(" rare", r.IntN(4)), ids[r.IntN(len(ids))])
		case k < 7:
			ids = append(ids, p.insert(fmt.Sprint("agent-", r.IntN(10)), driftText(r)))
		}
		agent := fmt.Sprint("agent-", r.IntN(10))
		q := driftWords[r.IntN(len(driftWords))]
		if r.IntN(2) == 0 {
			q = fmt.Sprint("rare", r.IntN(4))
		}
		want, err := ref.Search(ctx, q, search.Scope{Agent: agent}, o)
		if err != nil {
			t.Fatal(err)
		}
		before := searchindex.TextCacheAnswers(x)
		got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
		if err != nil {
			t.Fatal(err)
		}
		inCache := searchindex.TextCacheAnswers(x) != before
		if inCache {
			cached++
		}
		maxDrift = max(maxDrift, searchindex.TextStatsDrift(x, search.Archival))
		g := map[int64]bool{}
		for _, res := range got {
			if g[res.ID] {
				t.Fatalf("step %d: %d twice", step, res.ID)
			}
			g[res.ID] = true
			if math.IsNaN(res.Score) || math.IsInf(res.Score, 0) || res.Score <= 0 {
				t.Fatalf("step %d: %d scored %v", step, res.ID, res.Score)
			}
		}
		for _, res := range want {
			if !g[res.ID] {
				_, _, drift, df, _ := searchindex.TextStatsFigures(x, search.Archival, q)
				t.Fatalf("step %d %q %s: %d missing (%d results, SQL %d; cache %v; drift %d df %d)", step, q, agent, res.ID, len(got), len(want), inCache, drift, df)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d results, SQL %d", step, len(got), len(want))
		}
	}
	t.Logf("cache answered %d; max drift %d; passes %d drops %d", cached, maxDrift, searchindex.TextStatsPasses(x), searchindex.TextStatsDrops(x))
}
