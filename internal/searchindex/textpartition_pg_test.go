package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// A partition loaded on PostgreSQL finds each archival entry's
// neighbours among its owner's entries as archival_links does: the same
// conversation's live entries around a live one, any around a superseded
// one, in (conversation_pos, id) order: it ranks as a whole-store copy
// (which reads archival_links) does.
func TestTextCachePartitionNeighboursPostgres(t *testing.T) {
	ctx := context.Background()
	store, b := openPGStore(t)
	r := rand.New(rand.NewPCG(5, 9))
	vocab := strings.Fields("apple banana cherry damson elder fig grape hazel iris juniper kale lemon")
	text := func() string {
		w := make([]string, 1+r.IntN(4))
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	metas := []map[string]any{{"session": "s1"}, {"session": "s2"}, {"conversation": "s1"}, nil, {"session": 1}}
	for _, agent := range []string{"a", "b"} {
		for i := range 30 {
			if _, err := store.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: text(), Metadata: metas[i%len(metas)]}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, step := range []string{
		`UPDATE archival SET valid_to = created_at + 1 WHERE id % 4 = 0`,
		`UPDATE archival SET conversation_pos = 1 WHERE id % 7 = 0`,
		`UPDATE archival SET conversation_pos = 3 WHERE id % 9 = 0`,
	} {
		if _, err := b.DB().ExecContext(ctx, step); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	whole, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
	}
	for _, agent := range []string{"a", "b"} {
		for _, q := range vocab {
			o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true).Limit(50)
			want, err := whole.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRanking(want, got); err != nil || len(want) != len(got) {
				t.Fatalf("%s %q: %v (%d vs %d)\nwhole   %v\npartial %v", agent, q, err, len(want), len(got), keys(want), keys(got))
			}
		}
		if st := x.CacheStats(); !st.TextPartial {
			t.Fatal(fmt.Sprint("not partial: ", st))
		}
	}
}
