package memory_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// rollBackMessageContext puts messages' full-text index back as it was
// before migration 0015 (schema version 14), after undoing 0025 (the usage
// counter, rollBackAgentUsage), 0023 (archival
// entries' conversation context), 0021 (blocks' owner-keyed index), 0022
// (the text log's changed column and its triggers) and 0019 (its owner numbers, and
// archival triggers that need them; 0019 rebuilds fts_archival when it
// runs again).
var rollBackMessageContext = append(slices.Clip(rollBackAgentUsage), []string{
	// Migration 0023's objects (fts_archival itself is remade by 0019);
	// its triggers first, which name its views.
	`DROP TRIGGER fts_archival_ai`, `DROP TRIGGER fts_archival_ad`, `DROP TRIGGER fts_archival_au`,
	`DROP VIEW fts_archival_source`, `DROP VIEW archival_conversations`,
	`DROP INDEX archival_conversation`,
	// 0021: fts_blocks back to its external-content, id-keyed form.
	`DROP TRIGGER fts_blocks_owner`, `DROP TRIGGER fts_blocks_ai`, `DROP TRIGGER fts_blocks_ad`, `DROP TABLE fts_blocks`,
	`CREATE VIRTUAL TABLE fts_blocks USING fts5(label, description, rendered, content = 'blocks', content_rowid = 'id',
			tokenize = 'porter unicode61 remove_diacritics 2')`,
	`INSERT INTO fts_blocks (rowid, label, description, rendered) SELECT id, label, description, rendered FROM fts_blocks_indexed`,
	`CREATE TRIGGER fts_blocks_ai AFTER INSERT ON blocks BEGIN
			INSERT INTO fts_blocks (rowid, label, description, rendered) VALUES (new.id, new.label, new.description, new.rendered);
			INSERT INTO fts_blocks_indexed (id, label, description, rendered) VALUES (new.id, new.label, new.description, new.rendered);
			INSERT OR IGNORE INTO vec_blocks_dirty (id) VALUES (new.id); END`,
	`CREATE TRIGGER fts_blocks_ad AFTER DELETE ON blocks BEGIN
			INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
			SELECT 'delete', id, label, description, rendered FROM fts_blocks_indexed WHERE id = old.id;
			DELETE FROM fts_blocks_indexed WHERE id = old.id;
			DELETE FROM fts_blocks_dirty WHERE id = old.id;
			DELETE FROM vec_blocks_dirty WHERE id = old.id; END`,
	`DROP TRIGGER search_text_archival_au`, `DROP TRIGGER search_text_messages_au`, `DROP TRIGGER search_text_messages_ai`,
	`ALTER TABLE search_text_log DROP COLUMN changed`,
	`CREATE TRIGGER search_text_messages_ai AFTER INSERT ON messages BEGIN
			INSERT INTO search_text_log (kind, id) VALUES (4, new.id); END`,
	`CREATE TRIGGER search_text_archival_au AFTER UPDATE ON archival BEGIN
			INSERT INTO search_text_log (kind, id) VALUES (2, new.id); END`,
	`CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages BEGIN
			INSERT INTO search_text_log (kind, id) VALUES (4, new.id); END`,
	`CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
			INSERT INTO fts_archival (rowid, content, tags_text, metadata_values) VALUES (new.id, new.content, new.tags_text, ''); END`,
	`CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN DELETE FROM fts_archival WHERE rowid = old.id; END`,
	`CREATE TRIGGER fts_archival_au AFTER UPDATE OF content, tags_text, metadata_json ON archival BEGIN
			DELETE FROM fts_archival WHERE rowid = old.id;
			INSERT INTO fts_archival (rowid, content, tags_text, metadata_values) VALUES (new.id, new.content, new.tags_text, ''); END`,
	`DROP TABLE fts_owners`,
	`DROP TRIGGER fts_messages_ai`, `DROP TRIGGER fts_messages_ad`, `DROP TRIGGER fts_messages_au`,
	`DROP VIEW fts_messages_source`, `DROP TABLE fts_messages`,
	`CREATE VIRTUAL TABLE fts_messages USING fts5(content, content = 'messages', content_rowid = 'id',
			tokenize = 'porter unicode61 remove_diacritics 2')`,
	`CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
			INSERT INTO fts_messages (rowid, content) VALUES (new.id, new.content); END`,
	`CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
			INSERT INTO fts_messages (fts_messages, rowid, content) VALUES ('delete', old.id, old.content); END`,
	`CREATE TRIGGER fts_messages_au AFTER UPDATE OF content ON messages BEGIN
			INSERT INTO fts_messages (fts_messages, rowid, content) VALUES ('delete', old.id, old.content);
			INSERT INTO fts_messages (rowid, content) VALUES (new.id, new.content); END`,
}...)

// TestMessageContextMigration: a store written before messages were
// indexed in context (schema version 14) is re-indexed by migration 0015,
// so a message is found by its neighbour's words after the upgrade, and
// the FTS index agrees with the text cache.
func TestMessageContextMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	c := openFile(t, path, nil)
	c.Close()

	// Put messages' full-text index back as it was at version 14, then
	// write a conversation under the old triggers.
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(append(append([]string{},
		`DROP TABLE login_links`,
		`DROP TABLE tokens`,
	), rollBackMessageContext...), []string{
		`PRAGMA user_version = 14`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES
			('a', 'user', 'I adopted a greyhound called Comet.', 's1', 1, 1),
			('a', 'assistant', 'What a lovely name!', 's1', 2, 2),
			('a', 'user', 'Something else entirely.', 's2', 1, 3)`,
	}...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()

	for _, mode := range []struct {
		name string
		opts *memory.Options
	}{{"sql", &memory.Options{TextCacheBytes: -1}}, {"text cache", nil}} {
		c := openFile(t, path, mode.opts)
		if mode.opts == nil {
			if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res, err := c.Agent("a").Search(ctx, "greyhound", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range res {
			got = append(got, r.Content)
		}
		if len(got) != 2 || got[0] != "I adopted a greyhound called Comet." || got[1] != "What a lovely name!" {
			t.Errorf("%s: after the migration, search found %q; want the message, then the reply found by its context", mode.name, got)
		}
		c.Close()
	}
}

// TestMessageContextSeqFloor: a message at the lowest seq (possible
// through Import, which takes a dump's seqs as they are) has no message
// before it. On SQLite seq - 1 overflows there into a REAL equal to the
// seq itself, which made the message its own context: two messages with
// the same words, alone in their batches, must score alike.
func TestMessageContextSeqFloor(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []struct {
		name string
		opts *memory.Options
	}{{"sql", &memory.Options{TextCacheBytes: -1}}, {"text cache", nil}} {
		c := openFile(t, filepath.Join(t.TempDir(), "floor.db"), mode.opts)
		if _, err := c.Import(ctx, &memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{
			{Agent: "a", Role: memory.RoleUser, BatchID: "s", Seq: math.MinInt64, Content: "the lonely heron"},
			{Agent: "a", Role: memory.RoleUser, BatchID: "t", Seq: 5, Content: "the lonely heron"},
			{Agent: "a", Role: memory.RoleUser, BatchID: "u", Seq: 1, Content: "something else"},
		}}); err != nil {
			t.Fatal(err)
		}
		if mode.opts == nil {
			if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
		}
		res, err := c.Agent("a").Search(ctx, "lonely heron", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].Source.BM25 != res[1].Source.BM25 {
			var got []string
			for _, r := range res {
				got = append(got, fmt.Sprintf("%q batch %v: %g", r.Content, r.Metadata["batch_id"], r.Source.BM25))
			}
			t.Errorf("%s: %v; want two equal scores", mode.name, got)
		}
		c.Close()
	}
}
