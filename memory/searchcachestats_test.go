package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// TestSearchCacheStats: a store whose text cache is partial counts what
// its first searches load (from the rows, then in the next process from
// the parts the first one stored), what it holds within its bound, and
// what it evicts to stay within it; one with the whole index counts no
// partitions.
func TestSearchCacheStats(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stats.db")
	w, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"harbour", "crane", "lifts", "cargo", "quay", "dawn", "gulls", "tugs", "barges", "tide"}
	for a := range 12 {
		es := make([]memory.ArchivalEntry, 30)
		for i := range es {
			es[i] = memory.ArchivalEntry{Content: fmt.Sprintf("%s %s %s note %d of agent %d", words[(a+i)%10], words[(a*3+i)%10], words[i%10], i, a)}
		}
		if _, err := w.Agent(fmt.Sprint("agent-", a)).Archival().InsertBatch(ctx, es, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := storeaccess.Index(w).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Agent("agent-0").Archival().Search(ctx, "crane cargo", nil); err != nil {
		t.Fatal(err)
	}
	if s := w.SearchCacheStats(); s.TextPartial || s.TextPartitions != 0 || s.TextLoadsRows != 0 || s.TextBytes <= 0 || s.TextLegs == 0 {
		t.Fatalf("whole cache: %+v, want not partial, no partitions or loads, some bytes and legs", s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	const limit = 64 << 10
	open := func() *memory.Store {
		st, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		// (The cache finds it must be partial as it is readied.)
		if err := storeaccess.Index(st).WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget (the store outgrows the bound)", err)
		}
		return st
	}
	first := open()
	for _, a := range []string{"agent-1", "agent-2"} {
		if _, err := first.Agent(a).Archival().Search(ctx, "crane cargo", nil); err != nil {
			t.Fatal(err)
		}
	}
	s := first.SearchCacheStats()
	if !s.TextPartial || s.TextLimit != limit || s.TextLoadsRows != 2 || s.TextLoadsStored != 0 || s.TextPartitions < 2 || s.TextBytes <= 0 || s.TextBytes > limit || s.Prewarming {
		t.Fatalf("after two agents' first searches: %+v, want partial, bound %d, 2 loads from the rows, at least 2 partitions, bytes within the bound", s, limit)
	}
	if err := first.Close(); err != nil { // (saves the parts it read)
		t.Fatal(err)
	}

	second := open()
	defer second.Close()
	if _, err := second.Agent("agent-1").Archival().Search(ctx, "crane cargo", nil); err != nil {
		t.Fatal(err)
	}
	if s := second.SearchCacheStats(); s.TextLoadsStored != 1 || s.TextLoadsRows != 0 {
		t.Fatalf("a stored part's load: %+v, want 1 load from a stored part, none from the rows", s)
	}
	for a := range 12 {
		if _, err := second.Agent(fmt.Sprint("agent-", a)).Archival().Search(ctx, "tide quay", nil); err != nil {
			t.Fatal(err)
		}
	}
	s = second.SearchCacheStats()
	if s.TextEvictions == 0 || s.TextBytes > limit || int64(s.TextPartitions) >= s.TextLoadsRows+s.TextLoadsStored {
		t.Fatalf("twelve agents searched in a %d-byte cache: %+v, want evictions, bytes within the bound, fewer partitions held than loaded", limit, s)
	}
	if s.VectorLimit != 0 || s.VectorBytes != 0 || s.VectorPartial {
		t.Fatalf("no vector cache (VectorCacheBytes -1): %+v", s)
	}
}

// TestOpenTextStatsDrift: Options.TextStatsDrift outside [0, 1] is
// refused with ErrInvalidArgument before anything is opened.
func TestOpenTextStatsDrift(t *testing.T) {
	ctx := context.Background()
	for _, d := range []float64{-0.1, 1.5, math.NaN(), math.Inf(1)} {
		path := filepath.Join(t.TempDir(), "drift.db")
		st, err := memory.Open(ctx, path, &memory.Options{TextStatsDrift: d})
		if !errors.Is(err, memory.ErrInvalidArgument) {
			if st != nil {
				st.Close()
			}
			t.Fatalf("TextStatsDrift %v: %v, want ErrInvalidArgument", d, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("TextStatsDrift %v: the refused Open made %s", d, path)
		}
	}
	for _, d := range []float64{0, 0.005, 1} {
		st, err := memory.Open(ctx, filepath.Join(t.TempDir(), "drift.db"), &memory.Options{TextStatsDrift: d})
		if err != nil {
			t.Fatalf("TextStatsDrift %v: %v", d, err)
		}
		st.Close()
	}
}
