package searchindex_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

type corpus struct {
	Notes []struct {
		ID      int64    `json:"id"`
		Tags    []string `json:"tags"`
		Content string   `json:"content"`
	} `json:"notes"`
	Queries []struct {
		Query string  `json:"query"`
		Top   []int64 `json:"top"`
	} `json:"queries"`
}

// TestCorpusRanking checks ranking on a small hand-written corpus: every
// query's expected note must be the top hit in FTS and Hybrid (offline
// embedder), and in the top 3 for Vector alone.
func TestCorpusRanking(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "a corpus ranked query by query, one goroutine")
	b, err := os.ReadFile("testdata/notes.json")
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := openDB(t)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, search.NewOffline(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Notes {
		insertArchival(t, db, archivalRow{ID: n.ID, Agent: "me", Content: n.Content, Tags: n.Tags})
	}
	// Noise from another agent must not matter.
	for _, n := range c.Notes {
		insertArchival(t, db, archivalRow{Agent: "other", Content: n.Content})
	}
	indexAll(t, ctx, db, x)
	for _, tc := range []struct {
		mode   search.Mode
		within int
		misses int // allowed misses
	}{
		{search.FTS, 1, 0},
		{search.Hybrid, 1, 0},
		{search.Vector, 3, 3},
	} {
		misses := 0
		for _, q := range c.Queries {
			rs, err := x.Search(ctx, q.Query, search.Scope{Agent: "me"}, search.NewOptions().Mode(tc.mode).Limit(tc.within))
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range rs {
				ids = append(ids, r.ID)
			}
			ok := true
			for _, want := range q.Top {
				if !slices.Contains(ids, want) {
					ok = false
				}
			}
			if !ok {
				misses++
				t.Logf("%v: %q: got %v, want %v within %d", tc.mode, q.Query, ids, q.Top, tc.within)
			}
		}
		t.Logf("%v: %d/%d queries with the expected note in the top %d", tc.mode, len(c.Queries)-misses, len(c.Queries), tc.within)
		if misses > tc.misses {
			t.Errorf("%v: %d misses, allowed %d", tc.mode, misses, tc.misses)
		}
	}
}
