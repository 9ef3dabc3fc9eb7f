package searchindex_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/sqlite"
)

// sessionMetas are metadata objects whose conversation key the text cache
// reads itself or leaves to the engine.
var sessionMetas = []string{
	`{}`, `{"session": 3}`, `{"session": "3"}`, `{"session": ""}`, `{"session": "", "thread": 7}`,
	`{"thread": 7, "session": "s"}`, `{"conversation": null, "session_id": "x"}`, `{"session": true}`,
	`{"session": [1]}`, `{"session": {"id": 1}}`, `{"x": {"session": 1}}`, `{"session": 3.0}`,
	`{"session": 1e2}`, `{"session": 1E+2}`, `{"session": -0}`, `{"session": -0.0}`, `{"session": -1.5}`,
	`{"session": 10000000000000000000000}`, `{"session": "\u0033"}`, `{"session": "a\"b"}`,
	`{"session": "日本"}`, ` { "session" : "s" , "n" : [ "}" , "{" ] } `, `{"session": 1, "session": 2}`,
	`{"session": "` + strings.Repeat("long ", 300) + `"}`, `{"a": "\\", "session": "s"}`, `[1, 2]`, `"s"`,
	`{"conversation_id": 0}`, `{"thread_id": "t", "conversation": "c"}`, `{"session": 01}`,
	`{"session": "Q\u0026A"}`, `{"session": "a\/b"}`, `{"session": "\u00e9"}`, `{"session": "a\\b"}`,
	`{"session": "\ud83d\ude00"}`, `{"session": "a\tb\u001f"}`, `{"session": "\u007f"}`, `{"session": "\"q\""}`,
	`{"session": "\b\f\n\r"}`, `{"sess\u0069on": "x"}`,
}

// TestMetaConversationMatchesEngines: where the cache reads an entry's
// conversation key from its metadata, it is the engine's key (SQLite's
// conversation_key column, PostgreSQL's engram_archival_conversation),
// as the same text, or the same NULL.
func TestMetaConversationMatchesEngines(t *testing.T) {
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "k.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	check := func(t *testing.T, jsonb bool, engine func(meta string) (sql.NullString, bool)) {
		read := 0
		for _, meta := range sessionMetas {
			key, named, ok := searchindex.MetaConversation(meta, jsonb)
			if !ok {
				continue
			}
			read++
			want, stored := engine(meta)
			if !stored {
				continue
			}
			if named != want.Valid || (named && !strings.HasPrefix(want.String, "sha256:") && key != want.String) {
				t.Errorf("metadata %.60s: cache key %q (named %v), engine %q (%v)", meta, key, named, want.String, want.Valid)
			}
		}
		if read < len(sessionMetas)/2 {
			t.Fatalf("the cache read %d of %d metadata objects itself", read, len(sessionMetas))
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		check(t, false, func(meta string) (sql.NullString, bool) { return sqliteKey(t, b, meta) })
	})
	t.Run("postgres", func(t *testing.T) {
		p, err := pgbackend.Open(ctx, pgtest.Start(t).NewDatabase(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		check(t, true, func(meta string) (sql.NullString, bool) {
			var k sql.NullString
			if err := p.DB().QueryRowContext(ctx, `SELECT engram_archival_conversation($1)`, meta).Scan(&k); err != nil {
				return k, false // not JSON to PostgreSQL: no entry holds it
			}
			return k, true
		})
	})
}

// sqliteKey is the conversation key SQLite gives an archival entry whose
// metadata is meta (stored false: SQLite refused the row).
func sqliteKey(t testing.TB, b *sqlite.Backend, meta string) (k sql.NullString, stored bool) {
	ctx := context.Background()
	err := b.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from) VALUES ('k', 'x', '', ?, 0, 0)`, meta); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT conversation_key FROM archival WHERE id = last_insert_rowid()`).Scan(&k); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM archival WHERE agent = 'k'`)
		return err
	})
	return k, err == nil
}

// FuzzMetaConversation holds the cache's reading of any metadata text to
// SQLite's key, where the cache reads it at all.
func FuzzMetaConversation(f *testing.F) {
	for _, m := range sessionMetas {
		f.Add(m)
	}
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "k.db"), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	f.Fuzz(func(t *testing.T, meta string) {
		key, named, ok := searchindex.MetaConversation(meta, false)
		if !ok {
			return
		}
		want, stored := sqliteKey(t, b, meta)
		if !stored {
			return
		}
		if named != want.Valid || (named && key != want.String) {
			t.Errorf("metadata %q: cache key %q (named %v), SQLite %q (%v)", meta, key, named, want.String, want.Valid)
		}
	})
}

// FuzzMetaConversationPostgres holds the cache's reading of any metadata
// text to PostgreSQL's key (jsonb's text), where the cache reads it.
func FuzzMetaConversationPostgres(f *testing.F) {
	for _, m := range sessionMetas {
		f.Add(m)
	}
	ctx := context.Background()
	p, err := pgbackend.Open(ctx, pgtest.Start(f).NewDatabase(f), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, meta string) {
		key, named, ok := searchindex.MetaConversation(meta, true)
		if !ok {
			return
		}
		var want sql.NullString
		if err := p.DB().QueryRowContext(ctx, `SELECT engram_archival_conversation($1)`, meta).Scan(&want); err != nil {
			return // not JSON to PostgreSQL: no entry holds it
		}
		if named != want.Valid || (named && key != want.String) {
			t.Errorf("metadata %q: cache key %q (named %v), PostgreSQL %q (%v)", meta, key, named, want.String, want.Valid)
		}
	})
}
