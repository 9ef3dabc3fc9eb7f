package searchindex_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

var driftWords = []string{"kiwi", "quokka", "crane", "cargo", "harbour", "zebra", "yak", "lemur", "otter", "gecko"}

func driftText(r *rand.Rand) string {
	n := 1 + r.IntN(4)
	s := ""
	for range n {
		s += driftWords[r.IntN(len(driftWords))] + " "
	}
	return s
}

// TestDriftRandomWritesSQLite: random deletes, rewrites and inserts by
// another connection pool, searches of random agents with random terms:
// a drifting partial cache finds every row SQL finds, each once, with a
// finite positive score; concurrent CacheStats for -race.
func TestDriftRandomWritesSQLite(t *testing.T) {
	for _, share := range []float64{1e-9, 0.05, 1} {
		t.Run(fmt.Sprint(share), func(t *testing.T) { driftRandom(t, share) })
	}
}

func driftRandom(t *testing.T, share float64) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	r := rand.New(rand.NewPCG(1, uint64(share*1e9)))
	var ids []int64
	inTx(t, db, func(tx execer) {
		for a := range 12 {
			for range 30 {
				ids = append(ids, insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: driftText(r)}))
			}
		}
	})
	x := partialDriftIndex(t, db, share)
	ref, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = x.CacheStats()
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(1000)
	maxDrift := int64(0)
	for step := range 300 {
		switch k := r.IntN(10); {
		case k < 3 && len(ids) > 0:
			i := r.IntN(len(ids))
			if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, ids[i]); err != nil {
				t.Fatal(err)
			}
			ids = slices.Delete(ids, i, i+1)
		case k < 6 && len(ids) > 0:
			if _, err := other.ExecContext(ctx, `UPDATE archival SET content = ? WHERE id = ?`, driftText(r), ids[r.IntN(len(ids))]); err != nil {
				t.Fatal(err)
			}
		case k < 7:
			ids = append(ids, insertArchival(t, other, archivalRow{Agent: fmt.Sprint("agent-", r.IntN(12)), Content: driftText(r)}))
		}
		agent := fmt.Sprint("agent-", r.IntN(12))
		q := driftWords[r.IntN(len(driftWords))]
		if r.IntN(3) == 0 {
			q += " " + driftWords[r.IntN(len(driftWords))]
		}
		if r.IntN(4) == 0 {
			q = `"` + driftWords[r.IntN(len(driftWords))] + `"`
		}
		want, err := ref.Search(ctx, q, search.Scope{Agent: agent}, o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
		if err != nil {
			t.Fatal(err)
		}
		maxDrift = max(maxDrift, searchindex.TextStatsDrift(x, search.Archival))
		w, g := map[int64]bool{}, map[int64]bool{}
		for _, res := range want {
			w[res.ID] = true
		}
		for _, res := range got {
			if g[res.ID] {
				t.Fatalf("step %d %q %s: %d twice", step, q, agent, res.ID)
			}
			g[res.ID] = true
			if math.IsNaN(res.Score) || math.IsInf(res.Score, 0) || res.Score <= 0 {
				t.Fatalf("step %d %q %s: %d scored %v", step, q, agent, res.ID, res.Score)
			}
		}
		if len(w) != len(g) {
			t.Fatalf("step %d %q %s: %d results, SQL %d (drift %d)", step, q, agent, len(g), len(w), searchindex.TextStatsDrift(x, search.Archival))
		}
		for id := range w {
			if !g[id] {
				t.Fatalf("step %d %q %s: %d missing", step, q, agent, id)
			}
		}
	}
	t.Logf("share %v: max drift %d, passes %d, drops %d, answers %d", share, maxDrift, searchindex.TextStatsPasses(x), searchindex.TextStatsDrops(x), searchindex.TextCacheAnswers(x))
}
