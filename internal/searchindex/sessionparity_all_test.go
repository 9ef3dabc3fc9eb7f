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
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// The oracle of sessionrank_test.go over every owner (SearchAll), with
// time windows and supersession: two agents with the same batch names
// and conversation keys are different sessions.
func TestSessionParityOracleAllOwners(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "the oracle over every owner, three indexes")
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields("river stone bridge lantern harbor meadow orchard falcon willow ember quarry thistle cobalt")
	text := func() string {
		w := make([]string, 2+r.IntN(14))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{"session": 1}`, `{"session": 2}`, `{"session": "2"}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`,
		`{"session":"é ü"}`, `{"thread_id": 1.0}`, `{"thread_id": 1}`, `{"session": 10000000000000000000000}`,
		`{"session": {"session": "c"}, "thread": "x"}`, `{"conversation": "", "session_id": "y"}`, `{"note": "session", "session": "z"}`,
		` { "session" : "w" } `, "{\n\"session\":\t\"w\"}", `{"session": "a\"b"}`, `{"session": "\u00e9 \u00fc"}`, `{"session": 1e2}`, `{"session": 100}`,
		`{"session": -0}`, `{"session": 0}`, `{"session": "a", "session": "b"}`, `{"conversation": null, "session": "n"}`,
		`{"session": "` + strings.Repeat("q", 1500) + `"}`}
	const hour = int64(time.Hour)
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for _, agent := range []string{"a", "b"} {
			for i := range 300 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					VALUES (?, 'user', ?, ?, ?, ?)`, agent, text(), fmt.Sprintf("b%d", i%17), i, int64(i)*hour); err != nil {
					return err
				}
				vt := any(nil)
				if i%7 == 3 {
					vt = int64(i)*hour + 1
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from, valid_to)
					VALUES (?, ?, '', ?, ?, 0, ?)`, agent, text(), metas[i%len(metas)], int64(i)*hour, int64(i)*hour, vt); err != nil {
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
	type window struct {
		since, until int64
		sup          bool
	}
	oracle := func(table, index, weights, session, q string, limit int, w window) []string {
		f := strings.Fields(q)
		slices.Sort(f)
		match := `"` + strings.Join(slices.Compact(f), `" OR "`) + `"`
		cond := ""
		if w.since > 0 {
			cond += fmt.Sprintf(" AND t.created_at >= %d", w.since)
		}
		if w.until > 0 {
			cond += fmt.Sprintf(" AND t.created_at < %d", w.until)
		}
		if table == "archival" && !w.sup {
			cond += " AND t.valid_to IS NULL"
		}
		rows, err := b.DB().QueryContext(ctx, fmt.Sprintf(`SELECT t.id, bm25(%[2]s, %[3]s) AS s, %[4]s
			FROM %[2]s JOIN %[1]s t ON t.id = (%[2]s.rowid & 1099511627775)
			WHERE %[2]s MATCH ? %[5]s ORDER BY s, t.id LIMIT ?`, table, index, weights, session, cond), match, max(limit, 100))
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
				x.key.Valid = false
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
	windows := []window{{}, {since: 40 * hour}, {until: 200 * hour}, {since: 20 * hour, until: 90 * hour}, {sup: true}}
	for _, mode := range []string{"sql", "whole cache"} {
		cacheBytes := int64(0)
		if mode == "sql" {
			cacheBytes = -1
		}
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		if mode != "sql" {
			if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			typ                            search.ContentType
			table, index, weights, session string
		}{
			{search.Messages, "messages", "fts_messages", "1.0, 0.5, 0.25, 0.5", "t.agent || char(0) || t.batch_id"},
			{search.Archival, "archival", "fts_archival", "1.0, 2.0, 0.5, 0.5, 0.25", "t.agent || char(0) || t.conversation_key"},
		} {
			for i := range 20 {
				q := words[i%len(words)]
				if i%3 == 1 {
					q += " " + words[(i*5)%len(words)]
				}
				limit := []int{10, 1, 3, 150, 99, 100, 101}[i%7]
				w := windows[i%len(windows)]
				o := search.NewOptions().Mode(search.FTS).ContentTypes(c.typ).Limit(limit).IncludeSuperseded(w.sup)
				if w.since > 0 {
					o = o.Since(time.Unix(0, w.since))
				}
				if w.until > 0 {
					o = o.Until(time.Unix(0, w.until))
				}
				got, err := x.Search(ctx, q, search.Scope{All: true}, o)
				if err != nil {
					t.Fatal(err)
				}
				var have []string
				for _, r := range got {
					have = append(have, fmt.Sprintf("%d:%.12g", r.ID, r.Source.BM25))
				}
				want := oracle(c.table, c.index, c.weights, c.session, q, limit, w)
				if !slices.Equal(have, want) {
					t.Errorf("%s, %s search %q, limit %d, window %+v:\n got %v\nwant %v", mode, c.table, q, limit, w, have, want)
				}
			}
		}
		if n := searchindex.TextCacheAnswers(x); (mode == "sql") != (n == 0) {
			t.Fatalf("%s: the text cache answered %d legs", mode, n)
		}
		x.Close()
	}
}
