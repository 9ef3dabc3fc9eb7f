package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestTextStatsDriftPostgres: with IndexOptions.TextStatsDrift, another
// process's deletes of rows no resident partition holds do not drop a
// partial cache's statistics: every search keeps ranking in the cache
// (never in SQL), with scores near the exact ones, and a pass counts the
// statistics again only once the drifting rows pass the share, after
// which they are exact; WarmTextCache makes them exact at once.
func TestTextStatsDriftPostgres(t *testing.T) {
	ctx := context.Background()
	p, doomed := newPGWriters(t)
	const share = 0.005
	x, err := searchindex.NewIndex(ctx, p.b.DB(), p.b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: p.b.Write, TextCacheBytes: 1 << 22, VectorCacheBytes: -1, TextStatsDrift: share})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	searchindex.SetTextStatsRest(x, false) // (what passes cost is another test's)
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	opts := func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
	}
	// searched ranks "crane cargo" for agent-3 in x, which must answer
	// from the cache, and in a fresh whole copy of the store.
	searched := func(step string) (got, want []search.Result) {
		t.Helper()
		before := searchindex.TextCacheAnswers(x)
		got, err := x.Search(ctx, "crane cargo", search.Scope{Agent: "agent-3"}, opts())
		if err != nil {
			t.Fatal(err)
		}
		if searchindex.TextCacheAnswers(x) == before {
			t.Fatalf("%s: the search ranked in SQL", step)
		}
		whole := p.whole()
		defer whole.Close()
		if want, err = whole.Search(ctx, "crane cargo", search.Scope{Agent: "agent-3"}, opts()); err != nil {
			t.Fatal(err)
		}
		return got, want
	}
	if got, want := searched("warm"); sameBits(want, got) != nil {
		t.Fatalf("warm: %v", sameBits(want, got))
	}
	rows := int64(20*150 + 4*5)
	passes := searchindex.TextStatsPasses(x)

	// One delete: followed approximately, no pass, scores within a
	// hair of the exact ones, the same rows.
	if err := p.store.Agent("writer-0").Archival().Delete(ctx, doomed[0]); err != nil {
		t.Fatal(err)
	}
	got, want := searched("one delete")
	drift := searchindex.TextStatsDrift(x, search.Archival)
	if drift == 0 || searchindex.TextStatsDrops(x) != 0 {
		t.Fatalf("after another process's delete: drift %d, drops %d; want the statistics kept, drifting", drift, searchindex.TextStatsDrops(x))
	}
	searchindex.WaitTextStatsPasses(x)
	if n := searchindex.TextStatsPasses(x); n != passes {
		t.Fatalf("%d passes after a drift of %d rows in %d, want none below a share of %v", n-passes, drift, rows, share)
	}
	nearExact(t, "drifting", want, got)

	// More deletes, past the share: a pass, then exact statistics.
	deletes := 1
	for i := 1; searchindex.TextStatsPasses(x) == passes; i++ {
		deletes++
		if i == len(doomed) {
			t.Fatalf("%d deletes and no pass", i)
		}
		if err := p.store.Agent("writer-0").Archival().Delete(ctx, doomed[i]); err != nil {
			t.Fatal(err)
		}
		searched(fmt.Sprintf("delete %d", i))
		searchindex.WaitTextStatsPasses(x)
		if i > 2*int(share*float64(rows))+2 {
			t.Fatalf("%d deletes (drift %d) and no pass: want one past %v of %d rows", i, searchindex.TextStatsDrift(x, search.Archival), share, rows)
		}
	}
	if d := searchindex.TextStatsDrift(x, search.Archival); d != 0 {
		t.Fatalf("after the pass: drift %d, want 0", d)
	}
	t.Logf("one delete drifted %d rows; a pass came after %d deletes, in a store of %d rows (share %v)", drift, deletes, rows, share)
	whole := p.whole()
	defer whole.Close()
	if ready, err := searchindex.TextStatsDiff(ctx, x, whole, search.Archival); !ready || err != nil {
		t.Fatalf("after the pass: ready %v, %v; want exact statistics", ready, err)
	}
	if got, want := searched("after the pass"); sameBits(want, got) != nil {
		t.Fatalf("after the pass: %v", sameBits(want, got))
	}

	// A drift WarmTextCache makes exact at once.
	if err := p.store.Agent("writer-0").Archival().Delete(ctx, doomed[len(doomed)-1]); err != nil {
		t.Fatal(err)
	}
	searched("last delete")
	if searchindex.TextStatsDrift(x, search.Archival) == 0 {
		t.Fatal("the last delete did not drift")
	}
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if d := searchindex.TextStatsDrift(x, search.Archival); d != 0 {
		t.Fatalf("after WarmTextCache: drift %d, want 0", d)
	}
	if got, want := searched("warmed again"); sameBits(want, got) != nil {
		t.Fatalf("warmed again: %v", sameBits(want, got))
	}
	if searchindex.TextStatsDrops(x) != 0 {
		t.Fatalf("%d drops: want none with a drift share", searchindex.TextStatsDrops(x))
	}
}

// BenchmarkTextStatsForeignDeletes: a resident agent's archival search
// in a PostgreSQL partial cache (20,000 entries of 100 agents), each
// right after another process deleted an entry of an agent no partition
// here holds, with exact statistics (dropped by each delete: SQL ranks
// until a pass, which rests nine times its time) and with a drift share
// of 0.005 (kept, a pass per 0.5% of rows drifted), beside the same
// searches with no delete before them. Reported: the
// search's p50, the share of searches ranked in SQL, and the passes and
// their time per 100 deletes.
//
//	go test -run '^$' -bench TextStatsForeignDeletes -benchtime 300x ./internal/searchindex
func BenchmarkTextStatsForeignDeletes(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.Start(b).NewDatabase(b)
	w, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	r := rand.New(rand.NewPCG(35, 2))
	zipf := rand.NewZipf(r, 1.07, 2, 4999)
	type entry struct {
		agent string
		id    int64
	}
	var doomed []entry // agents 90-99's entries, which no partition holds
	for a := range 100 {
		batch := make([]memory.ArchivalEntry, 200)
		for i := range batch {
			words := make([]string, 12+r.IntN(30))
			for j := range words {
				words[j] = fmt.Sprintf("w%sx%d", strings.Repeat("q", int(zipf.Uint64())%3), zipf.Uint64())
			}
			batch[i] = memory.ArchivalEntry{Content: strings.Join(words, " ")}
		}
		got, err := w.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, batch, nil)
		if err != nil {
			b.Fatal(err)
		}
		if a >= 90 {
			for _, e := range got {
				doomed = append(doomed, entry{fmt.Sprint("agent-", a), e.ID})
			}
		}
	}
	be := storeaccess.Backend(w)
	for _, v := range []struct {
		name   string
		share  float64
		delete bool
	}{{"no-delete", 0, false}, {"exact", 0, true}, {"drift", 0.005, true}} {
		b.Run(v.name, func(b *testing.B) {
			if b.N > len(doomed) {
				b.Fatalf("%d deletes asked, %d entries to delete", b.N, len(doomed))
			}
			x, err := searchindex.NewIndex(ctx, be.DB(), be.SearchDialect(), nil,
				&searchindex.IndexOptions{Write: be.Write, TextCacheBytes: 16 << 20, VectorCacheBytes: -1, TextStatsDrift: v.share})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			searchindex.ForceTextPartial(x)
			if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				b.Fatal(err)
			}
			q := "wx1 wqx7"
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
			if _, err := x.Search(ctx, q, search.Scope{Agent: "agent-1"}, opts); err != nil {
				b.Fatal(err)
			}
			passes0, busy0 := searchindex.TextStatsPasses(x), searchindex.TextStatsPassTime(x)
			var ds []time.Duration
			inSQL := 0
			b.ResetTimer()
			for i := range b.N {
				if v.delete {
					b.StopTimer()
					if err := w.Agent(doomed[0].agent).Archival().Delete(ctx, doomed[0].id); err != nil {
						b.Fatal(err)
					}
					doomed = doomed[1:]
					b.StartTimer()
				}
				before := searchindex.TextCacheAnswers(x)
				start := time.Now()
				if _, err := x.Search(ctx, q, search.Scope{Agent: fmt.Sprint("agent-", 1+i%3)}, opts); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(start))
				if searchindex.TextCacheAnswers(x) == before {
					inSQL++
				}
			}
			b.StopTimer()
			searchindex.WaitTextStatsPasses(x)
			slices.Sort(ds)
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "search-p50-ms")
			b.ReportMetric(100*float64(inSQL)/float64(b.N), "%-in-SQL")
			b.ReportMetric(100*float64(searchindex.TextStatsPasses(x)-passes0)/float64(b.N), "passes/100-deletes")
			b.ReportMetric(float64((searchindex.TextStatsPassTime(x)-busy0).Milliseconds())*100/float64(b.N), "pass-ms/100-deletes")
		})
	}
}
