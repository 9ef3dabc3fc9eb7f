package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextStatsDriftSQLite: on SQLite too, with IndexOptions.TextStatsDrift
// a delete through SQL (another process's) of rows no resident partition
// holds keeps the partial cache's statistics, drifting, instead of dropping
// them (the next search would count its terms in FTS5 again): the scores
// stay within 1% of a whole copy's, and once the drift passes the share
// a pass (FTS5's vocabulary) makes them exact. Without a share the
// same delete drops them.
func TestTextStatsDriftSQLite(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	doomed := driftCorpus(t, db)
	const share = 0.005
	open := func(limit int64, drift float64, partial bool) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1, TextStatsDrift: drift})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if partial {
			searchindex.ForceTextPartial(x)
			searchindex.SetTextStatsRest(x, false)
		}
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
		return x
	}
	x, plain, whole := open(4<<20, share, true), open(4<<20, 0, true), open(1<<30, 0, false)
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
	rank := func(y *searchindex.Index) []search.Result {
		t.Helper()
		res, err := y.Search(ctx, "crane cargo w3", search.Scope{Agent: "agent-0"}, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, y := range []*searchindex.Index{x, plain} {
		if err := sameBits(rank(whole), rank(y)); err != nil {
			t.Fatalf("before any delete: %v", err)
		}
	}
	del := func(i int) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, doomed[i]); err != nil {
			t.Fatal(err)
		}
	}
	passes := searchindex.TextStatsPasses(x)
	del(0)
	want, got := rank(whole), rank(x)
	rank(plain)
	if searchindex.TextStatsDrops(plain) == 0 {
		t.Fatal("without a share the delete kept the statistics: the test does not exercise the drift")
	}
	drift := searchindex.TextStatsDrift(x, search.Archival)
	if drift == 0 || searchindex.TextStatsDrops(x) != 0 {
		t.Fatalf("with a share: drift %d, drops %d; want the statistics kept, drifting", drift, searchindex.TextStatsDrops(x))
	}
	nearExact(t, "drifting", want, got)
	deletes := 1
	for i := 1; searchindex.TextStatsPasses(x) == passes; i++ {
		if i == len(doomed) {
			t.Fatalf("%d deletes and no pass", i)
		}
		del(i)
		deletes++
		rank(x)
		searchindex.WaitTextStatsPasses(x)
	}
	rank(x) // (catches up past the pass's snapshot)
	if d := searchindex.TextStatsDrift(x, search.Archival); d != 0 {
		t.Fatalf("after the pass: drift %d, want 0", d)
	}
	if err := sameBits(rank(whole), rank(x)); err != nil {
		t.Fatalf("after the pass: %v", err)
	}
	t.Logf("one delete drifted %d rows; a pass after %d deletes of %d rows", drift, deletes, 20*150)
}

// nearExact fails t unless got ranks the rows want does, each scored
// within 1% of want's score (finite): drifting statistics, off by a few
// rows.
func nearExact(t *testing.T, step string, want, got []search.Result) {
	t.Helper()
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%s: %d results, exact %d", step, len(got), len(want))
	}
	exact := map[int64]float64{}
	for _, r := range want {
		exact[r.ID] = r.Score
	}
	for _, r := range got {
		w, ok := exact[r.ID]
		if !ok {
			t.Fatalf("%s: %d ranked, not among the exact results %v", step, r.ID, keys(want))
		}
		if math.IsNaN(r.Score) || math.IsInf(r.Score, 0) || math.Abs(r.Score-w) > 0.01*math.Abs(w) {
			t.Fatalf("%s: %d scored %v, exact %v: more than 1%% off", step, r.ID, r.Score, w)
		}
	}
}

// TestTextStatsDriftBoundedWhilePassWaits: drifting statistics whose pass
// cannot run (here held; in a server, resting after the last) are dropped
// once the drift passes twenty times the share, as without a share, not
// kept drifting without end.
func TestTextStatsDriftBoundedWhilePassWaits(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	doomed := driftCorpus(t, db)
	const share = 0.005
	x := partialDriftIndex(t, db, share)
	hold := make(chan struct{})
	defer close(hold)
	searchindex.SetTextStatsHook(x, func(ctx context.Context, _ search.ContentType) {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	})
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
	maxDrift := int64(0)
	for i, id := range doomed {
		if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Search(ctx, "crane cargo", search.Scope{Agent: "agent-0"}, o); err != nil {
			t.Fatal(err)
		}
		if searchindex.TextStatsDrops(x) > 0 {
			rows := int64(20*150 - i - 1)
			if bound := int64(20*share*float64(rows)) + 3; maxDrift > bound || maxDrift < int64(share*float64(rows)) {
				t.Fatalf("dropped after %d deletes at a drift of %d; want past the share (%v of %d rows) and within twenty times it", i+1, maxDrift, share, rows)
			}
			t.Logf("dropped after %d deletes, the drift at %d", i+1, maxDrift)
			return
		}
		maxDrift = max(maxDrift, searchindex.TextStatsDrift(x, search.Archival))
	}
	t.Fatalf("%d deletes with the pass held: never dropped (drift %d)", len(doomed), maxDrift)
}

// driftCorpus fills db with 20 agents' 150 archival entries each and
// returns the last agent's ids, in order: rows a partition of the other
// agents never holds.
func driftCorpus(t *testing.T, db *sql.DB) (last []int64) {
	t.Helper()
	inTx(t, db, func(tx execer) {
		for a := range 20 {
			for j := range 150 {
				id := insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: fmt.Sprintf("entry %d of %d: the harbour crane lifts cargo w%d w%d", j, a, j%37, (j*a)%53)})
				if a == 19 {
					last = append(last, id)
				}
			}
		}
	})
	return last
}

// partialDriftIndex is an Index over db whose text cache is partial
// (4 MiB, forced), with the drift share, its passes without their rest,
// readied.
func partialDriftIndex(t *testing.T, db *sql.DB, share float64) *searchindex.Index {
	t.Helper()
	ctx := context.Background()
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 4 << 20, VectorCacheBytes: -1, TextStatsDrift: share})
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
