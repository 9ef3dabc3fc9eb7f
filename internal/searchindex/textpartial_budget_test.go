package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialLoadsWithinBound: partition loads run outside the
// cache's lock, each sized against TextCacheBytes on its own; many first
// searches of different owners at once must not analyze more rows
// together than the bound holds (they used to all run at once: N owners
// near the bound held N times it before any was installed and evicted).
func TestTextCachePartialLoadsWithinBound(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	// 400 rows an owner; 100 under the race detector unless the long tests
	// run (the bound is measured from one owner's partition either way).
	const owners = 6
	rows := 400
	if testenv.Race && !testenv.Long() {
		rows = 100
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for o := range owners {
		for i := range rows {
			insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent", o), Content: fmt.Sprint("wing flutter row ", i, " of agent ", o, " mach layer")})
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Measure one owner's partition, then bound the cache at 2.5 of them.
	probe, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 64 << 20, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(probe)
	_ = probe.WarmTextCache(ctx)
	if _, err := probe.Search(ctx, "wing", search.Scope{Agent: "agent0"}, archivalFTS()); err != nil {
		t.Fatal(err)
	}
	one := searchindex.TextCacheHeldBytes(probe)
	probe.Close()
	if one <= 0 {
		t.Fatal("the probe holds no partition")
	}

	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: one * 5 / 2, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	// Each load, once its rows are read, waits a little for others to
	// join it, so that loads able to run together do.
	var in, most atomic.Int64
	searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, _ string) {
		n := in.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
		in.Add(-1)
	})
	var wg sync.WaitGroup
	for o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := x.Search(ctx, "wing", search.Scope{Agent: fmt.Sprint("agent", o)}, archivalFTS()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Fatalf("%d partition loads of about %d bytes each in flight at once under a %d-byte bound", m, one, one*5/2)
	}
}

// TestTextCachePartialLoadWaitCancelled: a load waiting for others' to
// leave room under the bound returns as soon as its search's context
// ends, and loads once they have.
func TestTextCachePartialLoadWaitCancelled(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 400 rows an owner with the long tests, 100 otherwise (the bound is
	// measured from one owner's partition either way).
	for _, agent := range []string{"one", "two"} {
		for i := range testenv.Scale(100, 400) {
			insertArchival(t, tx, archivalRow{Agent: agent, Content: fmt.Sprint("wing flutter row ", i, " mach layer")})
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	probe, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 64 << 20, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(probe)
	searchindex.SetTextPartsOff(probe) // x loads "one" from its rows (the hook is in that read)
	_ = probe.WarmTextCache(ctx)
	if _, err := probe.Search(ctx, "wing", search.Scope{Agent: "one"}, archivalFTS()); err != nil {
		t.Fatal(err)
	}
	one := searchindex.TextCacheHeldBytes(probe)
	probe.Close()

	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: one * 3 / 2, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	entered, release := holdLoad(x, "one")
	first := searchAsync(ctx, x, "wing", "one")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first load did not start")
	}
	waitCtx, cancel := context.WithCancel(ctx)
	second := searchAsync(waitCtx, x, "wing", "two")
	time.Sleep(50 * time.Millisecond)
	cancel()
	if r := await(t, second, "a load waiting for room, cancelled"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a load waiting for room, cancelled: %d results, err %v; want context.Canceled", len(r.rs), r.err)
	}
	close(release)
	if r := await(t, first, "the first load"); r.err != nil {
		t.Fatal(r.err)
	}
	if r := await(t, searchAsync(ctx, x, "wing", "two"), "a load once room is left"); r.err != nil || len(r.rs) == 0 {
		t.Fatalf("a load once room is left: %d results, err %v", len(r.rs), r.err)
	}
}
