package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// distinctWords is text of about n bytes in which every word is new, so
// that PostgreSQL's tsvector of it holds every word: past about 1 MB of
// lexemes and positions a tsvector cannot hold it.
func distinctWords(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "w%x ", i*2654435761%(1<<40))
	}
	return b.String()[:n]
}

// On PostgreSQL a tsvector holds at most 1 MB of lexemes and positions;
// an archival entry, a message or a block within the store's caps whose
// words would take more is stored and indexed by the words that fit (its
// beginning), not refused, and so is a small entry written next to it
// (whose context it is). Its first words are found.
func TestTextPastTsvectorCapIsStored(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	s, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := "zebrafirst " + distinctWords(memory.DefaultMaxArchivalBytes-len("zebrafirst "))
	a := s.Agent("a")
	fts := search.NewOptions().Mode(search.FTS).Limit(10)
	found := func(what string, q string, ct search.ContentType) {
		t.Helper()
		res, err := a.Search(ctx, q, fts.ContentTypes(ct))
		if err != nil {
			t.Fatalf("%s: search %q: %v", what, q, err)
		}
		if len(res) == 0 {
			t.Fatalf("%s: %q finds nothing", what, q)
		}
	}
	if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: big}); err != nil {
		t.Fatalf("archival entry of %d bytes of distinct words: %v", len(big), err)
	}
	if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "a small note beside it"}); err != nil {
		t.Fatalf("a small entry after it: %v", err)
	}
	found("archival", "zebrafirst", search.Archival)
	found("archival", "small note", search.Archival)
	for i, c := range []string{big, "a short reply after it"} {
		if _, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: c, BatchID: "b"}); err != nil {
			t.Fatalf("message %d (%d bytes): %v", i, len(c), err)
		}
	}
	found("messages", "zebrafirst", search.Messages)
	found("messages", "short reply", search.Messages)
	if _, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "big", CharLimit: blocks.MaxCharLimit}); err != nil {
		t.Fatal(err)
	}
	if err := a.Block("big").SetText(ctx, big); err != nil {
		t.Fatalf("block of %d bytes of distinct words: %v", len(big), err)
	}
	found("blocks", "zebrafirst", search.Blocks)
}
