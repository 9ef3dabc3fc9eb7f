package memory_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Metadata values are searchable, keys are not; metadata
// filters work in search and listings; bad vector weights are refused.
func TestArchivalMetadata(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	add := func(agent, content string, meta map[string]any) {
		t.Helper()
		if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content, Metadata: meta}); err != nil {
			t.Fatal(err)
		}
	}
	add("ada", "We talked about the garden.", map[string]any{"date": "2025-03-01", "session": 3, "speaker": "zebulon"})
	add("ada", "The roof needs repair.", map[string]any{"date": "2025-04-15", "session": 7})
	add("ada", "Plain note.", nil)
	add("bob", "Bob's garden note.", map[string]any{"date": "2025-03-02", "session": 3})
	fts := func(q string, opts *search.Options) []search.Result {
		t.Helper()
		rs, err := c.Agent("ada").Archival().Search(ctx, q, opts.Mode(search.FTS))
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	if rs := fts("what was the date of that session", search.NewOptions()); len(rs) != 0 {
		t.Fatalf("metadata keys matched a question: %+v", rs)
	}
	if rs := fts("zebulon", search.NewOptions()); len(rs) != 1 || rs[0].Metadata["speaker"] != "zebulon" {
		t.Fatalf("metadata values are not searchable: %+v", rs)
	}
	if rs := fts("garden roof", search.NewOptions().MetadataEquals("session", 7)); len(rs) != 1 || rs[0].Metadata["session"] != float64(7) {
		t.Fatalf("MetadataEquals(session, 7): %+v", rs)
	}
	if rs := fts("garden roof", search.NewOptions().MetadataRange("date", "2025-03-01", "2025-03-31")); len(rs) != 1 || rs[0].Content != "We talked about the garden." {
		t.Fatalf("MetadataRange on dates (never another agent's): %+v", rs)
	}
	if rs := fts("garden roof", search.NewOptions().MetadataRange("session", 4, nil)); len(rs) != 1 {
		t.Fatalf("MetadataRange(session >= 4): %+v", rs)
	}
	list, err := c.Agent("ada").Archival().List(ctx, &memory.ArchivalQuery{Metadata: []search.MetadataFilter{search.MetadataRangeFilter("session", 1, 5)}})
	if err != nil || len(list) != 1 || list[0].Content != "We talked about the garden." {
		t.Fatalf("ListArchival with a metadata range: %+v, %v", list, err)
	}
	for _, w := range []float64{math.NaN(), math.Inf(1), -1} {
		if _, err := c.Agent("ada").Archival().Search(ctx, "garden", search.NewOptions().VectorWeight(w)); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("VectorWeight(%v): err = %v", w, err)
		}
	}
	if _, err := c.Agent("ada").Archival().Search(ctx, "garden", search.NewOptions().MetadataEquals(`bad"key`, 1)); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("a quoted metadata key: err = %v", err)
	}
	if _, err := c.Agent("ada").Archival().Search(ctx, "garden", search.NewOptions().MetadataEquals("k", time.Now())); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("a time.Time metadata value: err = %v", err)
	}
}

// A metadata filter written as a literal is an equality: Archival.List
// refuses one that also sets Min or Max (it listed the entries equal to
// Equals, the bounds ignored), and a range that also sets Equals, instead
// of listing what the caller did not ask for.
func TestArchivalListRefusesMixedMetadataFilter(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	for _, s := range []int{3, 7} {
		if _, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "session note " + string(rune('a'+s)), Metadata: map[string]any{"session": s}}); err != nil {
			t.Fatal(err)
		}
	}
	rangeWithEquals := search.MetadataRangeFilter("session", 5, nil)
	rangeWithEquals.Equals = 3
	for _, f := range []search.MetadataFilter{
		{Key: "session", Min: 5},
		{Key: "session", Equals: 3, Min: 5},
		{Key: "session", Equals: 7, Max: 5},
		rangeWithEquals,
	} {
		list, err := c.Agent("ada").Archival().List(ctx, &memory.ArchivalQuery{Metadata: []search.MetadataFilter{f}})
		if !errors.Is(err, search.ErrInvalidQuery) || !errors.Is(err, memory.ErrInvalidArgument) {
			t.Errorf("List with %+v: %d entries, err = %v; want ErrInvalidQuery and ErrInvalidArgument", f, len(list), err)
		}
	}
}
