package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestTextStatsPassesTakeATenthOfTheTime: on PostgreSQL each delete by
// another writer of a row no resident partition holds drops a partial
// cache's statistics, and its next search starts a pass over every row of
// the type. One agent deleting its entries one by one must not keep every
// other process counting the whole store: a pass waits nine times the last
// one's time, so passes take at most about a tenth of the time however
// often they are dropped.
func TestTextStatsPassesTakeATenthOfTheTime(t *testing.T) {
	ctx := context.Background()
	p, doomed := newPGWriters(t)
	x := p.index(1<<22, true)
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	search1 := func() {
		t.Helper()
		if _, err := x.Search(ctx, "crane cargo", search.Scope{Agent: "agent-0"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
			t.Fatal(err)
		}
	}
	search1()
	if !searchindex.TextStatsReady(x, search.Archival) {
		t.Fatal("no statistics after WarmTextCache")
	}

	// Each round: writer-0 deletes one entry, and x searches until its
	// statistics are back (a pass ran) or the run is over; the run ends
	// after four passes (about 40 passes' time with the rest, 4 without).
	busy0, passes0 := searchindex.TextStatsPassTime(x), searchindex.TextStatsPasses(x)
	run := max(30*time.Second, 60*busy0/time.Duration(max(passes0, 1)))
	start := time.Now()
	rounds := 0
	for searchindex.TextStatsPasses(x)-passes0 < 4 && time.Since(start) < run && rounds < len(doomed) {
		if err := p.store.Agent("writer-0").Archival().Delete(ctx, doomed[rounds]); err != nil {
			t.Fatal(err)
		}
		rounds++
		search1()
		for !searchindex.TextStatsReady(x, search.Archival) && time.Since(start) < run {
			time.Sleep(2 * time.Millisecond)
			search1()
		}
	}
	searchindex.WaitTextStatsPasses(x) // a pass running at the end counts whole
	wall := time.Since(start)
	busy, passes := searchindex.TextStatsPassTime(x)-busy0, searchindex.TextStatsPasses(x)-passes0
	t.Logf("%d deletes, %d passes in %v, %v of them counting (%.0f%%)", rounds, passes, wall.Round(time.Millisecond), busy.Round(time.Millisecond), 100*busy.Seconds()/wall.Seconds())
	if passes < 3 {
		t.Fatalf("%d passes ran after %d deletes: the test measured nothing", passes, rounds)
	}
	if busy > wall/4 {
		t.Fatalf("statistics passes ran %v of %v (%d passes after %d deletes), want at most about a tenth", busy, wall, passes, rounds)
	}
}

// newPGWriters is newPGPartial with 20 more agents of 150 archival
// entries each (writer-0 … writer-19), and the ids of writer-0's, the
// entries of an agent the tests' caches never search.
func newPGWriters(t *testing.T) (p *pgPartial, doomed []int64) {
	t.Helper()
	p = newPGPartial(t)
	for a := range 20 {
		var batch []memory.ArchivalEntry
		for j := range 150 {
			batch = append(batch, memory.ArchivalEntry{Content: fmt.Sprintf("entry %d of %d: the harbour crane lifts cargo w%d w%d", j, a, j%37, (j*a)%53)})
		}
		got, err := p.store.Agent(fmt.Sprint("writer-", a)).Archival().InsertBatch(context.Background(), batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a == 0 {
			for _, e := range got {
				doomed = append(doomed, e.ID)
			}
		}
	}
	return p, doomed
}
