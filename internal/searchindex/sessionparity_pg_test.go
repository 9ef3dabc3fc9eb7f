package searchindex_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

func pgSessionArchival(t *testing.T, rows []string) (func(*testing.T, []string, func() *search.Options), *sql.DB) {
	t.Helper()
	ctx := context.Background()
	_, b := openPGStore(t)
	for i, row := range rows {
		content, meta, _ := strings.Cut(row, "|")
		at := int64(i) * int64(time.Hour)
		if err := b.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
				VALUES ('a', ?, ?, '[]', '', ?, ?)`, content, meta, at, at)
			return err
		}); err != nil {
			t.Fatalf("%s: %v", meta, err)
		}
	}
	return func(t *testing.T, qs []string, o func() *search.Options) {
		sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, qs, o)
	}, b.DB()
}

// PostgreSQL's jsonb keeps the last of two names that decode alike:
// {"session":"a","sess\u0069on":"b"} is conversation "b" (SQLite: "a").
// The cache sees one "session" and reads "a".
func TestSessionParityPostgresEscapedDuplicateName(t *testing.T) {
	check, _ := pgSessionArchival(t, []string{
		`ember ember ember|{"session": "b"}`,
		`ember willow stone bridge|{"session": "a", "sess\u0069on": "b"}`,
		`ember lantern harbor meadow orchard|{}`,
	})
	check(t, []string{"ember"}, sessionArchivalFTS)
}

// PostgreSQL keys a conversation over 1 KiB by its hash. The cache keys
// a plain long string as written, and SQL (for the rows the cache sends
// there, here one naming "session" twice) by its hash: one conversation
// becomes two.
func TestSessionParityPostgresLongKeyMixed(t *testing.T) {
	long := strings.Repeat("k", 1500)
	check, _ := pgSessionArchival(t, []string{
		`ember ember ember|{"session": "` + long + `"}`,
		`ember willow stone bridge|{"session": "` + long + `", "session": "` + long + `"}`,
		`ember lantern harbor meadow orchard|{}`,
	})
	check(t, []string{"ember"}, sessionArchivalFTS)
}

// {"sess\u0069on": "x"} names conversation "x" on PostgreSQL too.
func TestSessionParityPostgresEscapedName(t *testing.T) {
	check, _ := pgSessionArchival(t, []string{
		`ember ember ember|{"sess\u0069on": "x"}`,
		`ember willow stone bridge|{"sess\u0069on": "x"}`,
		`ember lantern harbor meadow orchard|{}`,
	})
	check(t, []string{"ember"}, sessionArchivalFTS)
}

// Metadata variants on PostgreSQL (groups as in
// TestSessionParitySQLiteMetadataVariants), against a cache that reads every
// key in SQL.
func TestSessionParityPostgresMetadataVariants(t *testing.T) {
	long := strings.Repeat("k", 1500)
	pairs := [][2]string{
		{`{"session":"x"}`, `{"session":"x"}`},
		{`{"session":"x"}`, ` {  "session"  :  "x"  } `},
		{`{"session":"x"}`, `{"session":"\u0078"}`},
		{`{"session":"x"}`, "{\"session\":\t\"x\"\n}"},
		{`{"session":1.0}`, `{"session":1.0}`},
		{`{"session":1.50}`, `{"session":1.5}`},
		{`{"session":100}`, `{"session":1e2}`},
		{`{"session":100}`, `{"session":1E+2}`},
		{`{"session":0}`, `{"session":-0}`},
		{`{"session":0.0}`, `{"session":-0.0}`},
		{`{"session":10000000000000000000000}`, `{"session":10000000000000000000000}`},
		{`{"session":0.1000000000000000000000001}`, `{"session":0.1000000000000000000000001}`},
		{`{"session":"x"}`, `{"session":"x","session":"y"}`},
		{`{"session":"y"}`, `{"session":"x","session":"y"}`},
		{`{"session":"é"}`, `{"session":"\u00e9"}`},
		{`{"session":"😀"}`, `{"session":"\ud83d\ude00"}`},
		{`{"session":"a/b"}`, `{"session":"a\/b"}`},
		{`{"session":"a\"b"}`, `{"session":"a\u0022b"}`},
		{`{"session":"` + long + `"}`, `{"session":"` + long + `"}`},
		{`{"session":"` + long + `"}`, `{"session":"` + long[:1] + `\u006b` + long[2:] + `"}`},
		{`{"session":` + strings.Repeat("7", 1100) + `}`, `{"session":` + strings.Repeat("7", 1100) + `}`},
		{`{"session":` + strings.Repeat("7", 1100) + `}`, `{"session":` + strings.Repeat("7", 1100) + `, "thread": 1, "thread": 2}`},
		{`{"session":"x"}`, `{"session":{"session":"y"},"thread":"x"}`},
		{`{"session":"x"}`, `{"a":"}{\"","session":"x"}`},
		// escaped names
		{`{"session":"x"}`, `{"sess\u0069on":"x"}`},
		{`{"session":"y"}`, `{"session":"x","sess\u0069on":"y"}`},
		{`{"session":"x"}`, `{"conversation\u005fid":"z","session":"x"}`},
	}
	var rows []string
	var queries []string
	for i, p := range pairs {
		w := groupWord(i)
		queries = append(queries, w)
		rows = append(rows, w+" "+w+" "+w+"|"+p[0], w+" river stone bridge|"+p[1], w+" lantern harbor meadow orchard|{}")
	}
	check, _ := pgSessionArchival(t, rows)
	check(t, queries, func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(3)
	})
}

// The SQL paths on PostgreSQL: every owner, one agent, metadata and tag
// filters, messages and archival entries, hybrid-free; no error.
func TestSessionParityPostgresSQLPaths(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	for i := range 60 {
		agent := []string{"a", "b"}[i%2]
		if err := b.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
				VALUES (?, ?, ?, '["t"]', 't', ?, ?)`, agent, "ember willow "+groupWord(i%5), `{"session":"s`+groupWord(i%4)+`"}`, int64(i)*int64(time.Hour), 0); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, ?)`,
				agent, "ember willow "+groupWord(i%5), "b"+groupWord(i%4), i, int64(i))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, bytes := range []int64{-1, 1 << 30} {
		x, err := newPGIndex(t, b, bytes)
		if err != nil {
			t.Fatal(err)
		}
		for _, scope := range []search.Scope{{All: true}, {Agent: "a"}} {
			for _, o := range []*search.Options{
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(5),
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5),
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages).Limit(5),
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5).MetadataEquals("session", "s"+groupWord(0)),
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5).Tags("t"),
			} {
				rs, err := x.Search(ctx, "ember "+groupWord(1), scope, o)
				if err != nil {
					t.Fatalf("bytes %d %+v: %v", bytes, scope, err)
				}
				if len(rs) != 5 && len(o.Settings().TagsAny) == 0 {
					t.Errorf("bytes %d %+v %v: %d results", bytes, scope, o.Settings(), len(rs))
				}
			}
		}
		x.Close()
	}
}

func newPGIndex(t *testing.T, b *pgbackend.Backend, bytes int64) (*searchindex.Index, error) {
	x, err := searchindex.NewIndex(context.Background(), b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: bytes, VectorCacheBytes: -1})
	if err == nil && bytes > 0 {
		if err := x.WarmTextCache(context.Background()); err != nil {
			return nil, err
		}
	}
	return x, err
}
