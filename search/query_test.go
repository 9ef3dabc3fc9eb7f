package search_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/search"
)

func TestMatchExpression(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "quick brown fox", want: `"quick" OR "brown" OR "fox"`},
		{in: "The quick brown fox", want: `"quick" OR "brown" OR "fox"`},
		{in: "  Fox fox FOX  ", want: `"fox"`},
		{in: `"unbalanced quote`, want: `"unbalanced" OR "quote"`},
		{in: `say "hello world"`, want: `"say" OR "hello" OR "world"`},
		{in: "cats AND dogs", want: `"cats" OR "dogs"`},
		{in: "cats OR dogs NOT birds", want: `"cats" OR "dogs" OR "birds"`},
		{in: "NEAR(a b, 3)", want: `"near" OR "b" OR "3"`},
		{in: "prefix* ^start", want: `"prefix" OR "start"`},
		{in: "title:hello body:world", want: `"title" OR "hello" OR "body" OR "world"`},
		{in: "(nested (parens))", want: `"nested" OR "parens"`},
		{in: "don't stop", want: `"stop"`},
		{in: "the who", want: `"the" OR "who"`}, // all stopwords: keep them
		{in: "Café crème brûlée", want: `"café" OR "crème" OR "brûlée"`},
		{in: "日本語 テキスト", want: `"日本語" OR "テキスト"`},
		{in: "emoji 🚀 rocket", want: `"emoji" OR "rocket"`},
		{in: "nul\x00byte", want: `"nul" OR "byte"`},
		{in: "bad\xffutf8", want: `"bad" OR "utf8"`},
		{in: "v1.2.3 ipv6 ::1", want: `"v1" OR "2" OR "3" OR "ipv6" OR "1"`},
		{in: "what is the meaning of life?", want: `"meaning" OR "life"`},
		{in: "", err: true},
		{in: "   \t\n", err: true},
		{in: `"" ** ^^ :: () -- ++`, err: true},
		{in: "🚀🔥", err: true},
		{in: "\x00\xff", err: true},
	}
	for _, tc := range tests {
		got, err := search.MatchExpression(tc.in)
		if tc.err {
			if !errors.Is(err, search.ErrInvalidQuery) {
				t.Errorf("MatchExpression(%q) = %q, %v; want ErrInvalidQuery", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("MatchExpression(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestMatchExpressionCapsTerms(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 500; i++ {
		b.WriteString("w")
		b.WriteString(strings.Repeat("x", i%7+1))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(string(rune('a' + i/26%26)))
		b.WriteString(" ")
	}
	got, err := search.MatchExpression(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, " OR ") + 1; n != search.MaxQueryTerms {
		t.Fatalf("%d terms, want %d", n, search.MaxQueryTerms)
	}
	long := strings.Repeat("a", 10000)
	got, err = search.MatchExpression(long)
	if err != nil || len(got) > 200 {
		t.Fatalf("long term: len %d, %v", len(got), err)
	}
}

// fuzzDB is an in-memory FTS5 table with the production tokenizer.
func fuzzDB(tb testing.TB) *sql.DB {
	tb.Helper()
	db, err := sql.Open(sqlitedriver.Name, ":memory:")
	if err != nil {
		tb.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one in-memory database
	tb.Cleanup(func() { db.Close() })
	for _, s := range []string{
		`CREATE VIRTUAL TABLE f USING fts5(a, b, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`INSERT INTO f (a, b) VALUES ('the quick brown fox', 'jumps over the lazy dog'),
			('café crème brûlée', '日本語 テキスト'), ('near and or not', 'prefix start title body')`,
	} {
		if _, err := db.Exec(s); err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"", "hello", `"`, `""`, `"a" "b`, "a AND b", "a OR b", "NOT a", "a NOT b",
		"NEAR(a b)", "NEAR(a b, 2)", "a*", "*", "^a", "^", "col:a", "a:b:c", ":", "(", ")",
		"((a)", "a)", "{a b}:c", "a + b", "a - b", "-a", "a' OR '1'='1", "café", "日本語",
		"🚀", "a\x00b", "\xff\xfe", "\u0301", "e\u0301", "\U000E0001", "\uFFFD", "İstanbul",
		"ǅ", "ⅷ", "٣", "Ⅻ", "\u200b", "a\u200db", strings.Repeat("a ", 200), strings.Repeat("x", 5000),
	} {
		f.Add(s)
	}
	db := fuzzDB(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q string) {
		expr, err := search.MatchExpression(q)
		if err != nil {
			if !errors.Is(err, search.ErrInvalidQuery) {
				t.Fatalf("MatchExpression(%q): unexpected error %v", q, err)
			}
			return
		}
		rows, err := db.QueryContext(ctx, `SELECT rowid, bm25(f), snippet(f, -1, '«', '»', '…', 8) FROM f WHERE f MATCH ? ORDER BY rank`, expr)
		if err != nil {
			t.Fatalf("MATCH %q (from %q): %v", expr, q, err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("MATCH %q (from %q): %v", expr, q, err)
		}
		rows.Close()
	})
}
