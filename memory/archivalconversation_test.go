package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// roundTrip exports agents from c and imports them into a new SQL-ranked
// store.
func roundTrip(t *testing.T, c *memory.Store, agents ...string) *memory.Store {
	t.Helper()
	ctx := context.Background()
	to, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "i.db")), &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { to.Close() })
	for _, a := range agents {
		d, err := c.Agent(a).Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := to.Import(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// rankedArchival is agent's full-text archival ranking as content:score.
func rankedArchival(t *testing.T, c *memory.Store, agent, q string) string {
	t.Helper()
	rs, err := c.Agent(agent).Search(context.Background(), q,
		search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true).Limit(200))

	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s:%.9g", r.Content, r.Score))
	}
	return strings.Join(out, " | ")
}

// An export and import keeps every entry's neighbours, so rankings: the
// conversation is the order entries were written (ids), which a dump's
// created_at order is not when entries carry their own times (a backfill)
// or were written by several processes at once.
func TestArchivalConversationRoundTripKeepsNeighbours(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		at   []time.Duration // each entry's CreatedAt after base, in write order
	}{
		{"in order", []time.Duration{1, 2, 3, 4, 5}},
		{"backfilled", []time.Duration{5, 4, 3, 2, 1}},
		{"one late", []time.Duration{1, 2, 9, 3, 4}},
		{"same time", []time.Duration{1, 1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "m.db")), &memory.Options{TextCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			words := []string{"apple banana", "cherry damson", "elder fig", "grape hazel", "iris juniper"}
			var prev int64
			for i, w := range words {
				e, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: w, CreatedAt: base.Add(tc.at[i] * time.Minute),
					Metadata: map[string]any{"session": "s1"}})

				if err != nil {
					t.Fatal(err)
				}
				if i == 3 { // a supersession inside the conversation
					if _, err := c.Agent("a").Archival().Supersede(ctx, prev, memory.ArchivalEntry{Content: "kale lemon",
						CreatedAt: base.Add(tc.at[i] * time.Minute), Metadata: map[string]any{"session": "s1"}}); err != nil {
						t.Fatal(err)
					}
				}
				prev = e.ID
			}
			imported := roundTrip(t, c, "a")
			for _, q := range []string{"apple", "damson", "elder", "hazel", "juniper", "kale", "banana fig"} {
				if got, want := rankedArchival(t, imported, "a", q), rankedArchival(t, c, "a", q); got != want {
					t.Errorf("%q after a round trip:\n%s\nbefore:\n%s", q, got, want)
				}
			}
		})
	}
}

// Archival entries of one conversation written at once by goroutines on
// two Store values over one file (and another agent writing the same
// conversation value) leave text caches that followed the log, a fresh
// SQL-only store, and a store imported from the export all ranking alike:
// the triggers' neighbour rewrites must not be lost to interleaving, and
// no other agent's words may find an entry.
func TestArchivalConversationConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	open := func(p string, o *memory.Options) *memory.Store {
		c, err := memory.Open(ctx, fresh(p), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	s1, s2 := open(path, nil), open(path, nil)
	for _, c := range []*memory.Store{s1, s2} {
		if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
	}
	vocab := strings.Fields("apple banana cherry damson elder fig grape hazel iris juniper kale lemon")
	var wg sync.WaitGroup
	for g := range 6 {
		c := []*memory.Store{s1, s2}[g%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				agent, conv := "a", "c1"
				if g == 5 {
					agent = "b" // same conversation value, another owner
				}
				if i%4 == 3 {
					conv = "c2"
				}
				content := fmt.Sprintf("%s %s w%dx%d", vocab[(g*7+i)%len(vocab)], vocab[(g+i*5)%len(vocab)], g, i)
				if g == 5 {
					content = "zucchini only b says"
				}
				if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content,
					Metadata: map[string]any{"session": conv, "n": i}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	sqlOnly := open(path, &memory.Options{TextCacheBytes: -1})
	imported := roundTrip(t, s1, "a", "b")
	ranked := func(c *memory.Store, q string) string { return rankedArchival(t, c, "a", q) }
	for _, q := range append(vocab, "zucchini", "apple fig") {
		want := ranked(sqlOnly, q)
		if q == "zucchini" && want != "" {
			t.Errorf("agent a finds %v by agent b's words", want)
		}
		for name, c := range map[string]*memory.Store{"store 1": s1, "store 2": s2, "imported": imported} {
			if got := ranked(c, q); got != want {
				t.Errorf("%q: %s ranks\n%v\nSQL ranks\n%v", q, name, got, want)
			}
		}
	}
}

// Whatever the "session" value holds, an entry is stored, and only a
// non-empty string (however long, in any script) or a number lends it its
// neighbour's words; PostgreSQL's TestArchivalConversationValuesPostgres
// is the same table. (The metadata cap is off: the long value is past the
// default 64 KiB.)
func TestArchivalConversationValues(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "m.db")), &memory.Options{TextCacheBytes: -1, MaxMetadataBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name string
		conv any
	}{
		{"short", "s1"},
		{"unicode", "séance ☃ 会话"},
		{"long", strings.Repeat("0123456789abcdef", 6250)},
		{"number", 7},
		{"null", nil},
		{"object", map[string]any{"id": "s1"}},
		{"array", []any{"s1"}},
		{"bool", true},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := "a-" + tc.name
			for _, content := range []string{"we adopted a greyhound", "what a lovely albatross"} {
				if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content,
					Metadata: map[string]any{"session": tc.conv}}); err != nil {
					t.Fatalf("insert: %v", err)
				}
			}
			want := 1
			if s, ok := tc.conv.(string); ok && s != "" {
				want = 2
			}
			if _, ok := tc.conv.(int); ok {
				want = 2
			}
			if got := rankedArchival(t, c, agent, "albatross"); strings.Count(got, " | ")+1 != want {
				t.Errorf("albatross finds %q, want %d entries", got, want)
			}
		})
	}
}
