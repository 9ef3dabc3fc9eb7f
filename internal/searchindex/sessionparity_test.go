package searchindex_test

// Sessions ranked together (session.go, sessionkey.go): the text cache,
// whole and partial, ranks as SQL whatever metadata and batches a hand
// edit leaves.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// sessionParity searches q in scope with opts through SQL, the whole text
// cache and the partial one, and reports the first difference.
func sessionParity(t *testing.T, db *sql.DB, d driver.Dialect, write func(context.Context, func(*sql.Tx) error) error,
	scope search.Scope, queries []string, opts func() *search.Options) {
	t.Helper()
	ctx := context.Background()
	var idxBytes int64
	open := func(mode string) *searchindex.Index {
		bytes := int64(1 << 30)
		switch mode {
		case "sql":
			bytes = -1
		case "nobodies":
			// A whole cache at its bound: it drops the rows' bodies and
			// reads every session key in SQL.
			bytes = idxBytes - 1
		}
		x, err := searchindex.NewIndex(ctx, db, d, nil, &searchindex.IndexOptions{Write: write, TextCacheBytes: bytes, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		switch mode {
		case "partial":
			searchindex.ForceTextPartial(x)
			if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatal(err)
			}
		case "whole", "nobodies":
			if err := x.WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
			if mode == "whole" {
				idxBytes = searchindex.TextCacheSize(x)
			} else if searchindex.TextCacheHoldsRows(x) || searchindex.TextCacheIndexSize(x) == 0 {
				t.Fatal("the nobodies cache holds rows")
			}
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	caches := map[string]*searchindex.Index{"whole": open("whole")}
	if !scope.All {
		caches["partial"] = open("partial")
	}
	ref := "sql"
	if d.Name() == "postgres" {
		// PostgreSQL's SQL ranks otherwise than the cache: the reference
		// is a cache that reads every key in SQL.
		ref = "nobodies"
	}
	sqlx := open(ref)
	for _, q := range queries {
		want, err := sqlx.Search(ctx, q, scope, opts())
		if err != nil {
			t.Fatalf("sql %q: %v", q, err)
		}
		for name, x := range caches {
			var got []search.Result
			for deadline := time.Now().Add(10 * time.Second); ; {
				before := searchindex.TextCacheAnswers(x)
				if got, err = x.Search(ctx, q, scope, opts()); err != nil {
					t.Fatalf("%s %q: %v", name, q, err)
				}
				if searchindex.TextCacheAnswers(x) > before {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the %s cache does not answer", name)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := sameBits(want, got); err != nil {
				t.Errorf("%q, %s cache vs %s: %v\n %s   %v\n cache %v", q, name, ref, err, ref, formatResults(want), formatResults(got))
			}
		}
	}
}

func formatResults(rs []search.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%d:%.12g ", r.ID, r.Source.BM25)
	}
	return b.String()
}

func sessionStore(t *testing.T, archival []string, messages [][3]any) *sqlite.Backend {
	t.Helper()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for i, row := range archival {
			content, meta, _ := strings.Cut(row, "|")
			if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from)
				VALUES ('a', ?, '', `+meta+`, ?, 0)`, content, int64(i)*int64(time.Hour)); err != nil {
				return fmt.Errorf("%s: %w", meta, err)
			}
		}
		for i, m := range messages {
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES (?, 'user', ?, `+m[2].(string)+`, ?, ?)`, m[0], m[1], i, int64(i)); err != nil {
				return fmt.Errorf("%v: %w", m, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sessionArchivalFTS() *search.Options {
	return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(10)
}

// SQLite keys a string written with a raw control character (a tab) as
// its escaped form: {"session":"a<TAB>b"} and {"session":"a\tb"} are one
// conversation. The cache reads the first as written ("a<TAB>b", no
// backslash) and sends the second to SQL ("a\tb").
func TestSessionParityRawTabKey(t *testing.T) {
	b := sessionStore(t, []string{
		"ember ember ember|'{\"session\":\"a" + "\t" + "b\"}'",
		"ember willow stone bridge|'{\"session\":\"a\\tb\"}'",
		"ember lantern harbor meadow orchard|'{}'",
	}, nil)
	sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, []string{"ember"}, sessionArchivalFTS)
}

// SQLite (and PostgreSQL) match a key name written with escapes:
// {"sess\u0069on":"x"} names conversation "x". The cache's scanner
// compares names as written and sees no conversation.
func TestSessionParityEscapedKeyName(t *testing.T) {
	b := sessionStore(t, []string{
		`ember ember ember|'{"sess\u0069on":"x"}'`,
		`ember willow stone bridge|'{"sess\u0069on":"x"}'`,
		`ember lantern harbor meadow orchard|'{}'`,
	}, nil)
	sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, []string{"ember"}, sessionArchivalFTS)
}

func sessionMessageFTS() *search.Options {
	return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(10)
}

// Two batches that differ in a byte that is not UTF-8 and hold a
// character JSON escapes (a quote): SQL reads the batches' bytes (two
// sessions); the cache reads them from json_object's text through
// encoding/json, which makes both bytes U+FFFD (one session).
func TestSessionParityMessageBatchInvalidUTF8(t *testing.T) {
	b := sessionStore(t, nil, [][3]any{
		{"a", "ember ember ember", `X'22FF'`},
		{"a", "ember willow stone bridge", `X'22FE'`},
		{"a", "ember lantern harbor meadow orchard", `'other'`},
	})
	sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, []string{"ember"}, sessionMessageFTS)
}

// Message batches of every form a hand edit on SQLite can leave: each
// group two messages in one batch (as SQL reads it) and one alone.
func TestSessionParityMessageBatchVariants(t *testing.T) {
	batches := [][2]string{
		{`'x'`, `'x'`},
		{`''`, `''`},
		{`'null'`, `'null'`},
		{`'a"b'`, `'a"b'`},
		{`'a\b'`, `'a\b'`},
		{`'é😀'`, `'é😀'`},
		{`'a' || char(9) || 'b'`, `'a' || char(9) || 'b'`},
		{`'a' || char(0) || 'b'`, `'a' || char(0) || 'b'`},
		{`X'6100'`, `X'6100'`},
		{`X'78'`, `'x'`},
		{`1`, `'1'`},
		{`1.0`, `'1.0'`},
		{`X'22FF'`, `X'22FF'`},
		{`CAST(X'22FF' AS TEXT)`, `CAST(X'22FF' AS TEXT)`},
		{`CAST(X'FF' AS TEXT)`, `X'FF'`},
	}
	var rows [][3]any
	var queries []string
	for i, p := range batches {
		w := groupWord(i)
		queries = append(queries, w)
		rows = append(rows, [3]any{"a", w + " " + w + " " + w, p[0]}, [3]any{"a", w + " river stone bridge", p[1]}, [3]any{"a", w + " lantern harbor meadow orchard", fmt.Sprintf("'alone%d'", i)})
	}
	b := sessionStore(t, nil, rows)
	sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, queries, func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(3)
	})
}
