package searchindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialBudgetEstimate: what a partial text cache charges
// against TextCacheBytes for its partitions (many small textParts, one
// per owner and content type) must be what they take on the heap, or the
// bound does not bound: many agents' partitions took 1.34× their charge.
func TestTextCachePartialBudgetEstimate(t *testing.T) {
	if raceEnabled {
		t.Skip("heap figures under the race detector are not the production ones")
	}
	testenv.SkipUnlessLong(t, "measures the heap of many agents' partitions")
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	r := rand.New(rand.NewPCG(35, 2))
	vocab := make([]string, 5000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	text := func() string {
		w := make([]string, 12+r.IntN(30))
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	const agents = 40
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range agents {
		agent := fmt.Sprint("agent-", a)
		for range 200 {
			insertArchival(t, tx, archivalRow{Agent: agent, Content: text()})
			insertMessage(t, tx, agent, "user", text(), baseTime)
		}
		for i := range 20 {
			insertBlock(t, tx, agent, fmt.Sprint("block-", i), text())
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// measure opens an index on db and returns what agents 1 to 39's
	// partitions are charged and the heap they take, agent 0's search
	// first (the blocks' lazy index and the statement caches).
	measure := func() (x *searchindex.Index, est, heap int64) {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		searchindex.ForceTextPartial(x)
		_ = x.WarmTextCache(ctx)
		if _, err := x.Search(ctx, vocab[3], search.Scope{Agent: "agent-0"}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		searchindex.WaitTextPartSaves(x)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		charged := searchindex.TextCacheHeldBytes(x)
		for a := 1; a < agents; a++ {
			if _, err := x.Search(ctx, vocab[3], search.Scope{Agent: fmt.Sprint("agent-", a)}, search.NewOptions().Mode(search.FTS)); err != nil {
				t.Fatal(err)
			}
		}
		// The partitions' saves (each holds its encoded part until
		// written) are not what the cache holds.
		searchindex.WaitTextPartSaves(x)
		runtime.GC()
		runtime.ReadMemStats(&after)
		return x, searchindex.TextCacheHeldBytes(x) - charged, int64(after.HeapAlloc) - int64(before.HeapAlloc)
	}
	x, est, heap := measure()
	t.Logf("%d agents' partitions: charged %d bytes, heap grew %d bytes (%.2f×)", agents-1, est, heap, float64(est)/float64(heap))
	if est < heap*9/10 || est > heap*3/2 {
		t.Fatalf("charged %d bytes, heap grew %d: the bound would be off by more than 10%%", est, heap)
	}

	// The same partitions loaded by another process from the parts this
	// one saved: decoded, their terms packed.
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	y, est, heap := measure()
	if n := y.CacheStats().TextLoadsStored; n != 3*agents { // (agent 0's too)
		t.Fatalf("%d partitions loaded from stored parts, want %d (blocks, archival entries and messages)", n, 3*agents)
	}
	t.Logf("the same from stored parts: charged %d bytes, heap grew %d bytes (%.2f×)", est, heap, float64(est)/float64(heap))
	// (Charged as if unpacked, they were 1.47×.)
	if est < heap*9/10 || est > heap*13/10 {
		t.Fatalf("stored parts: charged %d bytes, heap grew %d: the bound would be off by more than 10%% under or 30%% over", est, heap)
	}
}
