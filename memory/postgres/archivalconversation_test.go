package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// Whatever a metadata value naming the conversation holds, an entry is
// stored as it was before archival entries were indexed in their
// conversation (and as SQLite stores it), and a long conversation value
// still lends its neighbours' words: the conversation index must not
// refuse a value a btree entry cannot hold (2704 bytes). (The metadata cap
// is off: the very long value is past the default 64 KiB.)
func TestArchivalConversationValuesPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1, MaxMetadataBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(3, 5))
	long := func(n int) string { // incompressible, as a pasted title or a token would be
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, "%x", r.Uint64())
		}
		return b.String()[:n]
	}
	for _, tc := range []struct {
		name string
		conv any
	}{
		{"short", "s1"},
		{"unicode", "séance ☃ 会话"},
		{"long", long(4000)},
		{"very long", long(100000)},
		{"number", 7},
		{"null", nil},
		{"object", map[string]any{"id": long(4000)}},
		{"array", []any{"s1", long(4000)}},
		{"bool", true},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := "a-" + strings.ReplaceAll(tc.name, " ", "-")
			for _, content := range []string{"we adopted a greyhound", "what a lovely albatross"} {
				if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: content,
					Metadata: map[string]any{"session": tc.conv}}); err != nil {
					t.Fatalf("insert with session %.40v: %v", tc.conv, err)
				}
			}
			ids := archivalIDs(t, c, agent, "albatross")
			names := false
			if s, ok := tc.conv.(string); ok && s != "" {
				names = true
			}
			if _, ok := tc.conv.(int); ok {
				names = true
			}
			if want := map[bool]int{true: 2, false: 1}[names]; len(ids) != want {
				t.Errorf("albatross finds %d entries, want %d (the first through its neighbour only when the value names a conversation)", len(ids), want)
			}
		})
	}
	// The neighbour lookups still seek the index (the key is the
	// function's result on both sides).
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := db.QueryContext(ctx, `EXPLAIN SELECT before_id, after_id FROM archival_links WHERE id = 5`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "archival_conversation") {
		t.Errorf("a neighbour lookup does not use the conversation index:\n%s", plan.String())
	}
}

// Neighbours whose words would take an entry's tsvector past its 1 MB
// cap are left out, not refused: every entry of a conversation of large
// entries is stored and found by its own words.
func TestArchivalConversationLargeNeighboursPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	c, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := rand.New(rand.NewPCG(7, 9))
	for i, size := range []int{400 << 10, 400 << 10, 300 << 10, 10} {
		var b strings.Builder
		fmt.Fprintf(&b, "marker%c ", 'a'+i)
		for b.Len() < size {
			fmt.Fprintf(&b, "w%x ", r.Uint64()&0xffffffffff)
		}
		if _, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: b.String(),
			Metadata: map[string]any{"session": "big"}}); err != nil {
			t.Fatalf("entry %d (%d bytes): %v", i, size, err)
		}
	}
	for i := range 4 {
		if ids := archivalIDs(t, c, "a", fmt.Sprintf("marker%c", 'a'+i)); len(ids) == 0 {
			t.Errorf("marker%c finds nothing", 'a'+i)
		}
	}
}
