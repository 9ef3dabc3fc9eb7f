package serve_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// /metrics renders Options.SearchCache's figures (a store whose text
// cache is partial, after two agents' first searches) as engram_search_…
// series, one per cache where both have the figure; without the option
// there are none.
func TestMetricsSearchCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "door.db")
	var st *memory.Store
	d := newDoorAt(t, path, &serve.Options{MetricsToken: metricsSecret, SearchCache: func() search.CacheStats { return st.SearchCacheStats() }})
	for a := range 8 {
		es := make([]memory.ArchivalEntry, 30)
		for i := range es {
			es[i] = memory.ArchivalEntry{Content: fmt.Sprintf("note %d of agent %d on the harbour crane and its cargo, tide %d", i, a, i%7)}
		}
		if _, err := d.store.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, es, nil); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 64 << 10
	var err error
	if st, err = memory.Open(ctx, path, &memory.Options{TextCacheBytes: limit, VectorCacheBytes: -1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := storeaccess.Index(st).WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget (a partial cache)", err)
	}
	for _, a := range []string{"agent-1", "agent-2"} {
		if _, err := st.Agent(a).Archival().Search(ctx, "crane cargo", nil); err != nil {
			t.Fatal(err)
		}
	}
	s := st.SearchCacheStats()
	got := d.scrape(t)
	want := map[string]float64{
		`engram_search_cache_partial{cache="text"}`:               1,
		`engram_search_cache_partial{cache="vector"}`:             0,
		`engram_search_cache_limit_bytes{cache="text"}`:           limit,
		`engram_search_cache_limit_bytes{cache="vector"}`:         0,
		`engram_search_cache_bytes{cache="text"}`:                 float64(s.TextBytes),
		`engram_search_cache_partitions{cache="text"}`:            float64(s.TextPartitions),
		`engram_search_cache_evictions_total{cache="text"}`:       float64(s.TextEvictions),
		`engram_search_cache_legs_total{cache="text"}`:            float64(s.TextLegs),
		`engram_search_text_partition_loads_total{from="rows"}`:   2,
		`engram_search_text_partition_loads_total{from="stored"}`: 0,
		`engram_search_text_stats_passes_total{}`:                 float64(s.TextStatsPasses),
		`engram_search_text_stats_drops_total{}`:                  0,
		`engram_search_prewarming{}`:                              0,
		`engram_search_cache_evictions_total{cache="vector"}`:     0,
		`engram_search_cache_legs_total{cache="vector"}`:          0,
		`engram_search_cache_partitions{cache="vector"}`:          0,
		`engram_search_cache_bytes{cache="vector"}`:               0,
	}
	for key, w := range want {
		if v, ok := got[key]; !ok || v != w {
			t.Errorf("%s = %v (present %v), want %v", key, v, ok, w)
		}
	}
	if s.TextBytes <= 0 || s.TextBytes > limit || s.TextPartitions == 0 || s.TextLegs < 2 {
		t.Fatalf("the store's figures: %+v, want a partial cache holding partitions within its bound, two legs answered", s)
	}

	plain := newDoor(t, &serve.Options{MetricsToken: metricsSecret})
	for key := range plain.scrape(t) {
		if strings.HasPrefix(key, "engram_search_") {
			t.Fatalf("%s rendered without Options.SearchCache", key)
		}
	}
}
