package memory_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/migrations"
	"github.com/engram-go/engram/search"
)

// foundBy returns the contents of agent's archival entries a full-text
// search for q finds, in rank order.
func foundBy(t *testing.T, c *memory.Store, agent, q string) []string {
	t.Helper()
	rs, err := c.Agent(agent).Search(context.Background(), q, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(50))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		out = append(out, r.Content)
	}
	return out
}

// labelStores opens a store ranked in SQL and one ranked by its text
// cache: both must apply the same neighbour rule.
func labelStores(t *testing.T) map[string]*memory.Store {
	t.Helper()
	ctx := context.Background()
	out := map[string]*memory.Store{}
	for name, o := range map[string]*memory.Options{"sql": {TextCacheBytes: -1}, "cache": nil} {
		c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), name+".db")), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if o == nil {
			if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
		}
		out[name] = c
	}
	return out
}

// An entry's conversation is named by a string or a number under any of
// the documented keys (first one with such a value wins), and compares as
// a JSON value: the number 3 and the string "3" are two conversations.
func TestArchivalConversationLabels(t *testing.T) {
	const reply = "That is great! Which ones?"
	for _, tc := range []struct {
		name             string
		asked, other, re map[string]any // metadata of the question, an entry between, the reply
		neighbours       bool
	}{
		{"number session", map[string]any{"session": 3}, map[string]any{"session": 4}, map[string]any{"session": 3}, true},
		{"string session", map[string]any{"session": "s3"}, map[string]any{"session": "s4"}, map[string]any{"session": "s3"}, true},
		{"number and string differ", map[string]any{"session": 3}, map[string]any{"session": 4}, map[string]any{"session": "3"}, false},
		{"conversation_id", map[string]any{"conversation_id": 17}, map[string]any{"conversation_id": 18}, map[string]any{"conversation_id": 17}, true},
		{"thread", map[string]any{"thread": "t1"}, map[string]any{"thread": "t2"}, map[string]any{"thread": "t1"}, true},
		{"thread_id", map[string]any{"thread_id": 9.5}, map[string]any{"thread_id": 9}, map[string]any{"thread_id": 9.5}, true},
		{"session_id", map[string]any{"session_id": "a"}, map[string]any{"session_id": "b"}, map[string]any{"session_id": "a"}, true},
		{"conversation before session", map[string]any{"conversation": "c1", "session": 1}, map[string]any{"session": 1},
			map[string]any{"conversation": "c1", "session": 2}, true},
		{"empty string passes to the next key", map[string]any{"conversation": "", "session": 5}, map[string]any{"session": 6},
			map[string]any{"session": 5}, true},
		{"object names none", map[string]any{"session": map[string]any{"id": 1}}, map[string]any{"session": 6},
			map[string]any{"session": map[string]any{"id": 1}}, false},
		{"boolean names none", map[string]any{"session": true}, map[string]any{"session": 6}, map[string]any{"session": true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			for name, c := range labelStores(t) {
				// One batch, one instant: the write-order rule links none
				// of them, so only the labels can.
				if _, err := c.Agent("a").Archival().InsertBatch(ctx, []memory.ArchivalEntry{
					{Content: "I have been looking into adoption agencies", Metadata: tc.asked},
					{Content: "Something about lunch", Metadata: tc.other},
					{Content: reply, Metadata: tc.re},
				}, nil); err != nil {
					t.Fatal(err)
				}
				got := foundBy(t, c, "a", "adoption agencies")
				if has := slices.Contains(got, reply); has != tc.neighbours {
					t.Errorf("%s: adoption agencies found %q; reply found = %v, want %v", name, got, has, tc.neighbours)
				}
				if slices.Contains(got, "Something about lunch") {
					t.Errorf("%s: an entry of another conversation found by its neighbour's words: %q", name, got)
				}
			}
		})
	}
}

// Entries naming no conversation are neighbours in write order when
// written 1 second to 30 minutes apart (notes taken as a conversation
// goes); written at once (a batch, a load: less than a second apart) or
// further apart, each is indexed alone (docs/retrieval.md).
func TestArchivalStreamNeighboursByTime(t *testing.T) {
	base := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		apart      time.Duration
		batch      bool
		neighbours bool
	}{
		{"one batch", 0, true, false},
		{"half a second apart", 500 * time.Millisecond, false, false},
		{"one second apart", time.Second, false, true},
		{"a minute apart", time.Minute, false, true},
		{"30 minutes apart", 30 * time.Minute, false, true},
		{"31 minutes apart", 31 * time.Minute, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			for name, c := range labelStores(t) {
				facts := []memory.ArchivalEntry{
					{Content: "The user's dog is called Biscuit.", CreatedAt: base},
					{Content: "The user works night shifts.", CreatedAt: base.Add(tc.apart)},
				}
				if tc.batch {
					facts[0].CreatedAt, facts[1].CreatedAt = time.Time{}, time.Time{}
					if _, err := c.Agent("a").Archival().InsertBatch(ctx, facts, nil); err != nil {
						t.Fatal(err)
					}
				} else {
					for _, e := range facts {
						if _, err := c.Agent("a").Archival().Insert(ctx, e); err != nil {
							t.Fatal(err)
						}
					}
				}
				if got := foundBy(t, c, "a", "dog"); (len(got) == 2) != tc.neighbours {
					t.Errorf("%s: dog found %q; the next entry found = %v, want %v", name, got, len(got) == 2, tc.neighbours)
				}
			}
		})
	}
}

// rollBackArchivalLabels undoes SQLite migrations 0038 (its triggers),
// 0037 (its table and triggers), 0034 (its index; the
// views and triggers it remade go with 0028's and 0032's), 0032 (its triggers;
// the views it remade go with 0028's), 0031 (its trigger and
// column; 0028's objects it remade go with them), 0029 (its tables and
// index) and 0028: its triggers,
// views, index and column go, and 0023's objects are made again (its
// file run as it is, but for dropping triggers that are gone already).
var rollBackArchivalLabels = func() []string {
	ms, err := migrations.SQLite()
	if err != nil {
		panic(err)
	}
	i := slices.IndexFunc(ms, func(m migrations.Migration) bool { return m.Name == "0023_archival_conversation.sql" })
	if i < 0 {
		panic("no migration 0023_archival_conversation.sql")
	}
	return []string{
		// 0038.
		`DROP TRIGGER search_text_parts_blocks_ai`, `DROP TRIGGER search_text_parts_blocks_au`,
		`DROP TRIGGER search_text_parts_blocks_ad`, `DROP TRIGGER search_text_parts_blocks_owner`,
		`DROP TRIGGER search_text_parts_blocks_indexed_ad`,
		// 0037.
		`DROP TRIGGER search_text_parts_archival_ad`, `DROP TRIGGER search_text_parts_archival_au`,
		`DROP TRIGGER search_text_parts_messages_ad`, `DROP TRIGGER search_text_parts_messages_au`,
		`DROP TABLE search_text_parts`,
		`DROP INDEX archival_conversation_by_id`,
		`DROP TRIGGER fts_archival_stream_ai`, `DROP TRIGGER fts_archival_stream_ad`, `DROP TRIGGER fts_archival_stream_au`,
		`DROP TRIGGER fts_archival_stream_live`,
		`DROP TRIGGER fts_archival_live`, `DROP INDEX archival_live_conversation`,
		`DROP TABLE archival_bands`, `DROP TABLE archival_minhash`, `DROP INDEX archival_live_agent_id`,
		`DROP TRIGGER fts_archival_ai`, `DROP TRIGGER fts_archival_deferred_ai`, `DROP TRIGGER fts_archival_ad`, `DROP TRIGGER fts_archival_au`,
		`DROP TABLE archival_touched`, `DROP TABLE archival_index_deferred`, `DROP VIEW archival_adjacent`, `DROP VIEW archival_preceding`,
		`DROP VIEW fts_archival_source`, `DROP VIEW archival_links`, `DROP VIEW archival_conversations`,
		`DROP INDEX archival_conversation`, `ALTER TABLE archival DROP COLUMN conversation_pos`,
		`ALTER TABLE archival DROP COLUMN conversation_key`,
		strings.ReplaceAll(ms[i].SQL, "DROP TRIGGER fts_archival_", "DROP TRIGGER IF EXISTS fts_archival_"),
	}
}()
