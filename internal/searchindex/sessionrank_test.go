package searchindex_test

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// A full-text leg of messages or archival entries moves each of its 100
// best rows' scores 3/13 of the way toward the best score of its session
// (batch; conversation key, none for an entry naming no conversation)
// among them. The oracle here ranks with FTS5's bm25 in SQL and groups in
// the test; the search ranks in SQL and in the text cache, alike.
func TestSessionRankingMatchesOracle(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "72 searches against the bm25 oracle, three indexes")
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := rand.New(rand.NewPCG(7, 8))
	words := strings.Fields("river stone bridge lantern harbor meadow orchard falcon willow ember quarry thistle cobalt")
	text := func() string {
		w := make([]string, 2+r.IntN(14))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{"session": 1}`, `{"session": 2}`, `{"session": "2"}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`}
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for _, agent := range []string{"a", "b"} {
			for i := range 300 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					VALUES (?, 'user', ?, ?, ?, ?)`, agent, text(), fmt.Sprintf("b%d", i%17), i, int64(i)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from)
					VALUES (?, ?, '', ?, ?, 0)`, agent, text(), metas[i%len(metas)], int64(i)*1e9); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const pull = 0.3 / 1.3
	oracle := func(table, index, weights, session, q string, limit int) []string {
		match := `"` + strings.Join(strings.Fields(q), `" OR "`) + `"`
		rows, err := b.DB().QueryContext(ctx, fmt.Sprintf(`SELECT t.id, bm25(%[2]s, %[3]s) AS s, %[4]s
			FROM %[2]s JOIN %[1]s t ON t.id = (%[2]s.rowid & 1099511627775)
			WHERE %[2]s MATCH ? AND t.agent = 'a' ORDER BY s, t.id LIMIT ?`, table, index, weights, session), match, max(limit, 100))
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		type row struct {
			id  int64
			s   float64
			key sql.NullString
		}
		var rs []row
		best := map[string]float64{}
		for rows.Next() {
			var x row
			if err := rows.Scan(&x.id, &x.s, &x.key); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, x)
			if len(rs) > 100 {
				x.key.Valid = false // past the 100 re-ordered
			}
			if x.key.Valid {
				if v, ok := best[x.key.String]; !ok || -x.s > v {
					best[x.key.String] = -x.s
				}
			}
		}
		for i, x := range rs[:min(len(rs), 100)] {
			if x.key.Valid {
				rs[i].s = -(-x.s + pull*(best[x.key.String]+x.s))
			}
		}
		slices.SortStableFunc(rs[:min(len(rs), 100)], func(a, b row) int { return cmp.Compare(a.s, b.s) })
		var out []string
		for _, x := range rs[:min(limit, len(rs))] {
			out = append(out, fmt.Sprintf("%d:%.12g", x.id, x.s))
		}
		return out
	}
	moved := 0
	for _, mode := range []string{"sql", "whole cache", "partial cache"} {
		cacheBytes := int64(0)
		if mode == "sql" {
			cacheBytes = -1
		}
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		if mode == "partial cache" {
			searchindex.ForceTextPartial(x)
		}
		if mode != "sql" {
			if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			typ                                   search.ContentType
			table, index, weights, session, plain string
		}{
			{search.Messages, "messages", "fts_messages", "1.0, 0.5, 0.25, 0.5", "t.batch_id", "NULL"},
			{search.Archival, "archival", "fts_archival", "1.0, 2.0, 0.5, 0.5, 0.25", "t.conversation_key", "NULL"},
		} {
			for i := range 12 {
				q := words[i%len(words)]
				if i%3 == 1 {
					q += " " + words[(i*5)%len(words)]
				}
				// Pages shorter than the re-ordered window, and longer.
				limit := []int{10, 1, 3, 150}[i%4]
				got, err := x.Search(ctx, q, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(c.typ).Limit(limit))
				if err != nil {
					t.Fatal(err)
				}
				var have []string
				for _, r := range got {
					have = append(have, fmt.Sprintf("%d:%.12g", r.ID, r.Source.BM25))
				}
				want := oracle(c.table, c.index, c.weights, c.session, q, limit)
				if !slices.Equal(have, want) {
					t.Fatalf("%s, %s search %q, limit %d:\n got %v\nwant %v", mode, c.table, q, limit, have, want)
				}
				if !slices.Equal(want, oracle(c.table, c.index, c.weights, c.plain, q, limit)) {
					moved++
				}
			}
		}
		if n := searchindex.TextCacheAnswers(x); (mode == "sql") != (n == 0) {
			t.Fatalf("%s: the text cache answered %d legs", mode, n)
		}
		x.Close()
	}
	if moved == 0 {
		t.Fatal("no query's first ten moved by sessions: the test shows nothing")
	}
	t.Logf("%d of 72 searches re-ordered by sessions", moved)
}
