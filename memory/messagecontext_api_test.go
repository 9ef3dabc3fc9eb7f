package memory_test

import (
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestMessageContextThroughAPI: messages written through Import (out of
// seq order, gaps, int64's ends), AppendMany and Append into a store with
// its text cache; its rankings equal a store over the same file that ranks
// in SQL, scores included.
func TestMessageContextThroughAPI(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	at := time.Unix(1683554160, 0)
	msg := func(agent, batch string, seq int64, content string) memory.Message {
		return memory.Message{Agent: agent, Role: memory.RoleUser, BatchID: batch, Seq: int(seq), Content: content, CreatedAt: at}
	}
	// warm the cache first, then write
	if _, err := c.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "w", Content: "warm kale"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(ctx, "a", "kale", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages)); err != nil {
		t.Fatal(err)
	}
	d := &memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{
		msg("a", "e", math.MaxInt64, "max kale"), msg("a", "e", math.MinInt64, "min fig"), msg("a", "e", math.MaxInt64-2, "max2 iris"),
		msg("a", "e", math.MinInt64+2, "min2 lemon"), msg("a", "e", math.MaxInt64-1, "max1 apple"), msg("a", "e", math.MinInt64+1, "min1 kale kale"),
		msg("a", "g", 5, "five fig"), msg("a", "g", 1, "one iris"), msg("a", "g", 3, "three apple"), msg("a", "g", 9, "nine kale"), msg("a", "g", 7, "seven lemon"),
		msg("b", "g", 2, "other agent kale"),
	}}
	if _, err := c.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("a").Messages().AppendMany(ctx, []memory.Message{
		{Role: memory.RoleUser, BatchID: "g", Seq: 4, Content: "four kale fig"}, {Role: memory.RoleUser, BatchID: "g", Content: "ten apple"},
		{Role: memory.RoleUser, BatchID: "g", Seq: 8, Content: "eight iris"}, {Role: memory.RoleUser, BatchID: "g", Seq: 2, Content: "two lemon"},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "g", Seq: 6, Content: "six kale"}); err != nil {
		t.Fatal(err)
	}
	s, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{"kale", "fig", "iris", "apple", "lemon", "kale fig", "max min", "8 May 2023"} {
		o := func() *search.Options {
			return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(50)
		}
		want, err := s.Search(ctx, "a", q, o())
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Search(ctx, "a", q, o())
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != len(got) {
			t.Fatalf("%q: SQL %d, cache %d", q, len(want), len(got))
		}
		for i := range want {
			if want[i].ID != got[i].ID || math.Abs(want[i].Score-got[i].Score) > 1e-9*math.Abs(want[i].Score) {
				t.Fatalf("%q result %d: SQL %v %.17g, cache %v %.17g", q, i, want[i].ID, want[i].Score, got[i].ID, got[i].Score)
			}
		}
	}
}
