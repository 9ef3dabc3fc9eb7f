package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestInMemoryPartialCacheConcurrent: an in-memory store (one pooled
// connection) whose text cache is partial, with goroutines deleting,
// superseding and searching at once, finishes. A search reading the
// statistics once kept its snapshot (the pool's connection) while it
// waited for the cache's lock, which a catch-up held while it waited for
// the connection: every goroutine hung.
func TestInMemoryPartialCacheConcurrent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	st, err := memory.Open(ctx, ":memory:", &memory.Options{TextCacheBytes: 48 << 10, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "vortex", "boundary", "lift", "drag"}
	fill := rand.New(rand.NewPCG(5, 5))
	for a := range 12 {
		es := make([]memory.ArchivalEntry, 30)
		for i := range es {
			es[i] = memory.ArchivalEntry{Content: fmt.Sprint(words[fill.IntN(10)], " ", words[fill.IntN(10)], " ", words[fill.IntN(10)], " note ", a, "-", i)}
		}
		if _, err := st.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, es, nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = storeaccess.Index(st).WarmTextCache(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range 60 {
				ar := st.Agent(fmt.Sprint("agent-", r.IntN(12))).Archival()
				es, err := ar.List(ctx, &memory.ArchivalQuery{Limit: 40})
				if err != nil {
					t.Error(err)
					return
				}
				switch {
				case len(es) > 0 && i%4 == 0:
					err = ar.Delete(ctx, es[r.IntN(len(es))].ID)
				case len(es) > 0 && i%4 == 1:
					_, err = ar.Supersede(ctx, es[r.IntN(len(es))].ID, memory.ArchivalEntry{Content: fmt.Sprint(words[r.IntN(10)], " superseded ", g, " ", i)})
				default:
					_, err = ar.Search(ctx, words[r.IntN(10)]+" "+words[r.IntN(10)], search.NewOptions().Mode(search.FTS).Limit(10))
				}
				if err != nil && !errors.Is(err, memory.ErrNotFound) { // another goroutine's delete or supersession came first
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		if !storeaccess.Index(st).CacheStats().TextPartial {
			t.Fatal("the text cache is not partial: nothing was tested")
		}
	case <-time.After(80 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("hung:\n%s", buf[:runtime.Stack(buf, true)])
	}
}
