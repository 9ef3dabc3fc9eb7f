package searchindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestFullTextBlocksManySharers: an agent that many owners share a block
// with (a supervisor, or an agent others flood with shares) ranks its
// blocks leg in SQL at about the cost of one MATCH over the whole table,
// not one whole-table bm25 count per sharing owner, and with the scores
// and order the store-wide ranking gives the blocks it may see. The cost
// is held as a ratio to the store-wide search on the same store (minimum
// of several runs), which the machine's load moves alike.
func TestFullTextBlocksManySharers(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "6,600 blocks and a cost ratio, one goroutine")
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "osprey"}
	for _, tc := range []struct {
		name    string
		sharers int
	}{{"boss", 600}, {"few", 3}} {
		for a := range tc.sharers {
			shareBlock(t, tx, insertBlock(t, tx, fmt.Sprint(tc.name, "-sharer-", a), "shared", words[a%7]+" wing"), tc.name)
		}
	}
	for a := range 600 {
		for i := range 10 {
			insertBlock(t, tx, fmt.Sprint("agent-", a), fmt.Sprint("l", i), words[(a+i)%7]+" "+words[i%5]+" note")
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	opts := func(limit int) *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks).Limit(limit)
	}
	// The fastest of 5 searches of each scope, the scopes taken in turn
	// so that a busy spell of the machine slows both alike.
	fastest := func(scopes ...search.Scope) []time.Duration {
		best := make([]time.Duration, len(scopes))
		for i := range best {
			best[i] = time.Hour
		}
		for range 5 {
			for i, scope := range scopes {
				start := time.Now()
				if _, err := x.Search(ctx, "wing", scope, opts(10)); err != nil {
					t.Fatal(err)
				}
				best[i] = min(best[i], time.Since(start))
			}
		}
		return best
	}
	all, err := x.Search(ctx, "wing", search.Scope{All: true}, opts(100000))
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"boss", "few"} {
		t.Run(agent, func(t *testing.T) {
			got, err := x.Search(ctx, "wing", search.Scope{Agent: agent}, opts(20))
			if err != nil {
				t.Fatal(err)
			}
			var want []search.Result
			for _, r := range all {
				if r.Label == "shared" && len(r.Owner) > len(agent) && r.Owner[:len(agent)+1] == agent+"-" {
					want = append(want, r)
				}
			}
			want = want[:min(len(want), 20)]
			if len(got) != len(want) {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Source.BM25 != want[i].Source.BM25 {
					t.Fatalf("result %d: %d (%v), want %d (%v)", i, got[i].ID, got[i].Source.BM25, want[i].ID, want[i].Source.BM25)
				}
			}
		})
	}
	best := fastest(search.Scope{All: true}, search.Scope{Agent: "boss"})
	storeWide, boss := best[0], best[1]
	if boss > 4*storeWide {
		t.Fatalf("the blocks leg of an agent 600 owners share with took %v, the store-wide leg %v: over 4×", boss, storeWide)
	}
}
