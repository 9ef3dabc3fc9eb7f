package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// On PostgreSQL the text cache of one store sees every change another
// store (another process, another machine) commits, from its very next
// search: inserts, supersessions, deletions and new messages through
// search_text_log, and block text once the lazy index took it in; and it
// answers those searches itself (CacheStats), not the tsvector query.
func TestTextCacheSeesOtherStores(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	reader, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if err := storeaccess.Index(reader).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	fts := func(types search.ContentType) *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(types).Limit(10)
	}
	results := func(query string, types search.ContentType) []search.Result {
		t.Helper()
		before := storeaccess.Index(reader).CacheStats().TextLegs
		rs, err := reader.Agent("ann").Search(ctx, query, fts(types))
		if err != nil {
			t.Fatal(err)
		}
		if after := storeaccess.Index(reader).CacheStats().TextLegs; after == before {
			t.Fatalf("search %q ran in SQL, not over the text cache", query)
		}
		return rs
	}
	ids := func(query string, types search.ContentType) []int64 {
		t.Helper()
		var out []int64
		for _, r := range results(query, types) {
			out = append(out, r.ID)
		}
		return out
	}
	labels := func(query string) []string {
		t.Helper()
		var out []string
		for _, r := range results(query, search.Blocks) {
			out = append(out, r.Label)
		}
		return out
	}

	e, err := writer.Agent("ann").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the zebra crossing by the harbour",
		Metadata: map[string]any{"place": map[string]any{"town": "Kilkenny"}, "count": 3, "checked": true}})

	if err != nil {
		t.Fatal(err)
	}
	if got := ids("zebra", search.Archival); !slices.Equal(got, []int64{e.ID}) {
		t.Fatalf("a new entry: %v, want [%d]", got, e.ID)
	}
	if got := ids("kilkenny", search.Archival); !slices.Equal(got, []int64{e.ID}) {
		t.Fatalf("a nested metadata value: %v, want [%d]", got, e.ID)
	}
	newer, err := writer.Agent("ann").Archival().Supersede(ctx, e.ID, memory.ArchivalEntry{Content: "the zebra crossing moved to the square"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids("zebra", search.Archival); !slices.Equal(got, []int64{newer.ID}) {
		t.Fatalf("after superseding: %v, want only [%d]", got, newer.ID)
	}
	if err := writer.Agent("ann").Archival().Delete(ctx, newer.ID); err != nil {
		t.Fatal(err)
	}
	if got := ids("square", search.Archival); len(got) != 0 {
		t.Fatalf("a deleted entry is still found: %v", got)
	}
	msgs, err := writer.Agent("ann").Messages().AppendMany(ctx, []memory.Message{{Role: "user", Content: "meet me at the lighthouse", BatchID: "b1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids("lighthouse", search.Messages); !slices.Equal(got, []int64{msgs[0].ID}) {
		t.Fatalf("a new message: %v, want [%d]", got, msgs[0].ID)
	}
	if _, err := writer.Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "carrots in the north bed", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if got := labels("carrots"); !slices.Equal(got, []string{"notes"}) {
		t.Fatalf("a new block: %v, want [notes]", got)
	}
	if err := writer.Agent("ann").Block("notes").SetText(ctx, "parsnips in the north bed"); err != nil {
		t.Fatal(err)
	}
	if got := labels("carrots"); len(got) != 0 {
		t.Fatalf("a block's old text is still found: %v", got)
	}
	if got := labels("parsnips"); !slices.Equal(got, []string{"notes"}) {
		t.Fatalf("a block's new text: %v, want [notes]", got)
	}
	if err := writer.Agent("ann").Block("notes").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if got := labels("parsnips"); len(got) != 0 {
		t.Fatalf("a deleted block is still found: %v", got)
	}
}
