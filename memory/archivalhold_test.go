package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestArchivalWritesKeepPartialStatistics: in a store whose text cache
// holds only the partitions searched lately, an agent that deletes,
// supersedes or merges entries, or inserts a duplicate of a live one, has
// its own partition loaded first, so
// the cache follows the write in its store-wide statistics; dropping
// them would make every agent's next search count its terms in the
// whole store again.
func TestArchivalWritesKeepPartialStatistics(t *testing.T) {
	ctx := context.Background()
	st := openFile(t, filepath.Join(t.TempDir(), "hold.db"), &memory.Options{TextCacheBytes: 48 << 10, VectorCacheBytes: -1})
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "vortex", "boundary"}
	for a := range 24 {
		es := make([]memory.ArchivalEntry, 25)
		for i := range es {
			es[i] = memory.ArchivalEntry{Content: fmt.Sprint(words[(a+i)%8], " ", words[i%5], " ", words[(a*i)%7], " note ", i), Metadata: map[string]any{"session": fmt.Sprint("s", i%3)}}
		}
		if _, err := st.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, es, nil); err != nil {
			t.Fatal(err)
		}
	}
	x := storeaccess.Index(st)
	if err := x.WarmTextCache(ctx); err != nil {
		t.Logf("warm: %v", err)
	}
	fts := func() *search.Options { return search.NewOptions().Mode(search.FTS).Limit(10) }
	reader := st.Agent("agent-0").Archival()
	for range 2 {
		if _, err := reader.Search(ctx, "wing flutter", fts()); err != nil {
			t.Fatal(err)
		}
	}
	if s := x.CacheStats(); !s.TextPartial {
		t.Fatalf("the text cache is not partial (%d bytes): nothing is measured", s.TextBytes)
	}
	second := func(agent string) memory.ArchivalEntry {
		t.Helper()
		es, err := st.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{Limit: 2})
		if err != nil || len(es) < 2 {
			t.Fatalf("list %s: %v (%d entries)", agent, err, len(es))
		}
		return es[1]
	}
	first := func(agent string) int64 { return second(agent).ID }
	for _, w := range []struct {
		name   string
		agents []string // each one's first write of the test: not resident
		write  func(agent string) error
	}{
		{"delete", []string{"agent-5", "agent-9"}, func(agent string) error { return st.Agent(agent).Archival().Delete(ctx, first(agent)) }},
		{"supersede", []string{"agent-6", "agent-10"}, func(agent string) error {
			_, err := st.Agent(agent).Archival().Supersede(ctx, first(agent), memory.ArchivalEntry{Content: "wing wing superseding"})
			return err
		}},
		// Merged into the live entry it duplicates, an insert rewrites
		// that entry's tags.
		{"duplicate insert", []string{"agent-7", "agent-11"}, func(agent string) error {
			dup := second(agent)
			e, err := st.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: dup.Content, Metadata: dup.Metadata, Tags: []string{"again"}})
			if err == nil && !e.Duplicate {
				err = fmt.Errorf("entry %d is not a duplicate", e.ID)
			}
			return err
		}},
	} {
		for i, agent := range w.agents {
			drops := x.CacheStats().TextStatsDrops
			if err := w.write(agent); err != nil {
				t.Fatalf("%s by %s: %v", w.name, agent, err)
			}
			if _, err := reader.Search(ctx, "wing flutter", fts()); err != nil {
				t.Fatal(err)
			}
			if got := x.CacheStats().TextStatsDrops - drops; got != 0 {
				t.Errorf("%s by %s (write %d): the statistics were dropped %d times", w.name, agent, i, got)
			}
		}
	}
}
