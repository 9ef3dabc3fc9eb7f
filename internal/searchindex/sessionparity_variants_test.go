package searchindex_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// groupWord is the word only group i's entries hold.
func groupWord(i int) string {
	return "grp" + string(rune('a'+i/26)) + string(rune('a'+i%26))
}

// Metadata variants on SQLite, each as a group of entries found by a
// word of their own: the group's first entry with metadata a, its
// second with b, a third naming no conversation. SQL, the whole cache
// and the partial cache must give the same scores.
func TestSessionParitySQLiteMetadataVariants(t *testing.T) {
	pairs := [][2]string{
		// held (both sides read alike)
		{`'{"session":"x"}'`, `'{"session":"x"}'`},
		{`'{"session":"x"}'`, `' {  "session"  :  "x"  } '`},
		{`'{"session":"x"}'`, `'{"session":"\u0078"}'`},
		{`'{"session":"x"}'`, `'{session:"x"}'`},
		{`'{"session":"x"}'`, `'{"session":''x''}'`},
		{`'{"session":"x"}'`, `jsonb('{"session":"x"}')`},
		{`'{"session":"x"}'`, `CAST('{"session":"x"}' AS BLOB)`},
		{`'{"session":"x"}'`, `'{"session":"x",}'`},
		{`'{"session":"x"}'`, `'{"session":"x" /* c */}'`},
		{`'{"session":31}'`, `'{"session":0x1F}'`},
		{`'{"session":1}'`, `'{"session":+1}'`},
		{`'{"session":0.5}'`, `'{"session":.5}'`},
		{`'{"session":1.0}'`, `'{"session":1.0}'`},
		{`'{"session":100}'`, `'{"session":1e2}'`},
		{`'{"session":0}'`, `'{"session":-0}'`},
		{`'{"session":10000000000000000000000}'`, `'{"session":10000000000000000000000}'`},
		{`'{"session":"x"}'`, `'{"session":"x","session":"y"}'`},
		{`'{"session":"y"}'`, `'{"session":"x","session":"y"}'`},
		{`'{"session":"é"}'`, `'{"session":"\u00e9"}'`},
		{`'{"session":"` + strings.Repeat("k", 2000) + `"}'`, `'{"session":"` + strings.Repeat("k", 2000) + `"}'`},
		{`'{"session":"x"}'`, `'{"session":{"session":"y"},"thread":"x"}'`},
		{`'{"session":"x"}'`, `'{"a":[1,{"session":"q"}],"session":"x"}'`},
		{`'{"session":"x"}'`, `'{"a":"}{\"","session":"x"}'`},
		{`'{"session":"x"}'`, `CAST(X'7B2273657373696F6E223A2278227D' AS TEXT)`},
		{`'{"session":"a` + "\x7f" + `"}'`, `'{"session":"a\u007f"}'`},
		{`'{"session":"x"}'`, `'{"session":"x"}' || char(10)`},
		{`'{"session":"x"}'`, `char(65279) || '{"session":"x"}'`},
		{`'{"session":"x"}'`, `'{"session":"x"}' || char(160)`},
		{`'{"session":"x"}'`, `'{"session":"x"' || char(11) || '}'`},
		// raw control characters, escaped names (sessionparity_test.go)
		{`'{"session":"a` + "\t" + `b"}'`, `'{"session":"a\tb"}'`},
		{`'{"session":"a` + "\n" + `b"}'`, `'{"session":"a\nb"}'`},
		{`'{"session":"a` + "\x01" + `b"}'`, `'{"session":"a\u0001b"}'`},
		{`'{"sess\u0069on":"x"}'`, `'{"sess\u0069on":"x"}'`},
		{`'{"session":"x"}'`, `'{"sess\u0069on":"x"}'`},
		{`'{"session":"y"}'`, `'{"sess\u0069on":"x","session":"y"}'`},
		{`'{"session":"x"}'`, `'{"\u0073ession":"x"}'`},
		{`'{"session":"x"}'`, `'{"conversation\u005fid":"z","session":"x"}'`},
	}
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var queries []string
	at := int64(0)
	for i, p := range pairs {
		w := groupWord(i)
		queries = append(queries, w)
		for j, row := range [][2]string{{w + " " + w + " " + w, p[0]}, {w + " river stone bridge", p[1]}, {w + " lantern harbor meadow orchard", `'{}'`}} {
			at += int64(time.Hour)
			err := b.Write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from)
					VALUES ('a', ?, '', `+row[1]+`, ?, 0)`, row[0], at)
				return err
			})
			if err != nil {
				t.Logf("group %d (%s) entry %d: %s refused: %v", i, w, j, row[1], err)
			}
		}
	}
	sessionParity(t, b.DB(), b.SearchDialect(), b.Write, search.Scope{Agent: "a"}, queries, func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(3)
	})
}
