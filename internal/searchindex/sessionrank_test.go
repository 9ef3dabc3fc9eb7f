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

// sessionWords are the words of a sessionCorpus's rows and queries.
var sessionWords = strings.Fields("river stone bridge lantern harbor meadow orchard falcon willow ember quarry thistle cobalt")

// sessionCorpus describes a SQLite store of agents a and b, each with
// rows messages (the i-th in batch "b<i mod batches>", sequence i) and
// as many archival entries (metadata metas[i mod len(metas)]), every row
// 2 to 15 of sessionWords drawn with seed, the i-th created i × step;
// superseded, when set, marks the entries it holds for superseded; each
// agent also holds blocks blocks.
type sessionCorpus struct {
	seed                  uint64
	rows, batches, blocks int
	metas                 []string
	step                  int64
	superseded            func(i int) bool
}

func (c sessionCorpus) open(t *testing.T) *sqlite.Backend {
	t.Helper()
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	r := rand.New(rand.NewPCG(c.seed, c.seed+1))
	text := func() string {
		w := make([]string, 2+r.IntN(14))
		for i := range w {
			w[i] = sessionWords[r.IntN(len(sessionWords))]
		}
		return strings.Join(w, " ")
	}
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for _, agent := range []string{"a", "b"} {
			for i := range c.rows {
				at := int64(i) * c.step
				if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					VALUES (?, 'user', ?, ?, ?, ?)`, agent, text(), fmt.Sprintf("b%d", i%c.batches), i, at); err != nil {
					return err
				}
				var validTo any
				if c.superseded != nil && c.superseded(i) {
					validTo = at + 1
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from, valid_to)
					VALUES (?, ?, '', ?, ?, 0, ?)`, agent, text(), c.metas[i%len(c.metas)], at, validTo); err != nil {
					return err
				}
			}
			for i := range c.blocks {
				insertBlock(t, tx, agent, fmt.Sprint("l", i), text())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sessionQuery is the i-th query of a session test: a word, or two.
func sessionQuery(i int) string {
	q := sessionWords[i%len(sessionWords)]
	if i%3 == 1 {
		q += " " + sessionWords[(i*5)%len(sessionWords)]
	}
	return q
}

// sessionLeg is a full-text leg as the oracle ranks it: its table, FTS5
// table and bm25 weights, and the SQL of a row's batch or conversation
// key.
type sessionLeg struct {
	typ                        search.ContentType
	table, index, weights, key string
}

var sessionLegs = []sessionLeg{
	{search.Messages, "messages", "fts_messages", "1.0, 0.5, 0.25, 0.5", "t.batch_id"},
	{search.Archival, "archival", "fts_archival", "1.0, 2.0, 0.5, 0.5, 0.25", "t.conversation_key"},
}

// sessionOracle ranks the rows of l matching q's words and cond (SQL
// over t) with FTS5's bm25, moves each of the 100 best 3/13 of the way
// toward the best of its session among them (session: SQL over t; NULL,
// a session of its own) and gives the limit best as "id:score".
func sessionOracle(t *testing.T, db *sql.DB, l sessionLeg, session, cond, q string, limit int) []string {
	t.Helper()
	const pull = 0.3 / 1.3
	f := strings.Fields(q)
	slices.Sort(f)
	match := `"` + strings.Join(slices.Compact(f), `" OR "`) + `"`
	rows, err := db.QueryContext(context.Background(), fmt.Sprintf(`SELECT t.id, bm25(%[2]s, %[3]s) AS s, %[4]s
		FROM %[2]s JOIN %[1]s t ON t.id = (%[2]s.rowid & 1099511627775)
		WHERE %[2]s MATCH ? %[5]s ORDER BY s, t.id LIMIT ?`, l.table, l.index, l.weights, session, cond), match, max(limit, 100))
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

// openSessionIndex opens an index over b ranking in SQL ("sql"), in a
// whole text cache ("whole cache") or in a partial one ("partial
// cache"), warmed.
func openSessionIndex(t *testing.T, b *sqlite.Backend, mode string) *searchindex.Index {
	t.Helper()
	cacheBytes := int64(0)
	if mode == "sql" {
		cacheBytes = -1
	}
	x, err := searchindex.NewIndex(context.Background(), b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: cacheBytes})
	if err != nil {
		t.Fatal(err)
	}
	if mode == "partial cache" {
		searchindex.ForceTextPartial(x)
	}
	if mode != "sql" {
		if err := x.WarmTextCache(context.Background()); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	return x
}

// ranked is rs as "id:score" (Source.BM25), as sessionOracle gives them.
func ranked(rs []search.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%d:%.12g", r.ID, r.Source.BM25))
	}
	return out
}

// A full-text leg of messages or archival entries moves each of its 100
// best rows' scores 3/13 of the way toward the best score of its session
// (batch; conversation key, none for an entry naming no conversation)
// among them. The oracle here ranks with FTS5's bm25 in SQL and groups in
// the test; the search ranks in SQL and in the text cache, alike.
func TestSessionRankingMatchesOracle(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "72 searches against the bm25 oracle, three indexes")
	ctx := context.Background()
	b := sessionCorpus{seed: 7, rows: 300, batches: 17, step: 1e9,
		metas: []string{`{"session": 1}`, `{"session": 2}`, `{"session": "2"}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`}}.open(t)
	moved := 0
	for _, mode := range []string{"sql", "whole cache", "partial cache"} {
		x := openSessionIndex(t, b, mode)
		for _, l := range sessionLegs {
			for i := range 12 {
				q := sessionQuery(i)
				// Pages shorter than the re-ordered window, and longer.
				limit := []int{10, 1, 3, 150}[i%4]
				got, err := x.Search(ctx, q, search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(l.typ).Limit(limit))
				if err != nil {
					t.Fatal(err)
				}
				want := sessionOracle(t, b.DB(), l, l.key, "AND t.agent = 'a'", q, limit)
				if have := ranked(got); !slices.Equal(have, want) {
					t.Fatalf("%s, %s search %q, limit %d:\n got %v\nwant %v", mode, l.table, q, limit, have, want)
				}
				if !slices.Equal(want, sessionOracle(t, b.DB(), l, "NULL", "AND t.agent = 'a'", q, limit)) {
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

// The oracle over every owner (SearchAll), with time windows and
// supersession, and metadata of every form the cache reads or leaves to
// SQL: two agents with the same batch names and conversation keys are
// different sessions.
func TestSessionParityOracleAllOwners(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "the oracle over every owner, three indexes")
	ctx := context.Background()
	const hour = int64(time.Hour)
	b := sessionCorpus{seed: 11, rows: 300, batches: 17, step: hour, superseded: func(i int) bool { return i%7 == 3 },
		metas: []string{`{"session": 1}`, `{"session": 2}`, `{"session": "2"}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`,
			`{"session":"é ü"}`, `{"thread_id": 1.0}`, `{"thread_id": 1}`, `{"session": 10000000000000000000000}`,
			`{"session": {"session": "c"}, "thread": "x"}`, `{"conversation": "", "session_id": "y"}`, `{"note": "session", "session": "z"}`,
			` { "session" : "w" } `, "{\n\"session\":\t\"w\"}", `{"session": "a\"b"}`, `{"session": "\u00e9 \u00fc"}`, `{"session": 1e2}`, `{"session": 100}`,
			`{"session": -0}`, `{"session": 0}`, `{"session": "a", "session": "b"}`, `{"conversation": null, "session": "n"}`,
			`{"session": "` + strings.Repeat("q", 1500) + `"}`}}.open(t)
	type window struct {
		since, until int64
		sup          bool
	}
	windows := []window{{}, {since: 40 * hour}, {until: 200 * hour}, {since: 20 * hour, until: 90 * hour}, {sup: true}}
	for _, mode := range []string{"sql", "whole cache"} {
		x := openSessionIndex(t, b, mode)
		for _, l := range sessionLegs {
			for i := range 20 {
				q := sessionQuery(i)
				limit := []int{10, 1, 3, 150, 99, 100, 101}[i%7]
				w := windows[i%len(windows)]
				o := search.NewOptions().Mode(search.FTS).ContentTypes(l.typ).Limit(limit).IncludeSuperseded(w.sup)
				cond := ""
				if w.since > 0 {
					o = o.Since(time.Unix(0, w.since))
					cond += fmt.Sprintf(" AND t.created_at >= %d", w.since)
				}
				if w.until > 0 {
					o = o.Until(time.Unix(0, w.until))
					cond += fmt.Sprintf(" AND t.created_at < %d", w.until)
				}
				if l.typ == search.Archival && !w.sup {
					cond += " AND t.valid_to IS NULL"
				}
				got, err := x.Search(ctx, q, search.Scope{All: true}, o)
				if err != nil {
					t.Fatal(err)
				}
				want := sessionOracle(t, b.DB(), l, "t.agent || char(0) || "+l.key, cond, q, limit)
				if have := ranked(got); !slices.Equal(have, want) {
					t.Errorf("%s, %s search %q, limit %d, window %+v:\n got %v\nwant %v", mode, l.table, q, limit, w, have, want)
				}
			}
		}
		if n := searchindex.TextCacheAnswers(x); (mode == "sql") != (n == 0) {
			t.Fatalf("%s: the text cache answered %d legs", mode, n)
		}
		x.Close()
	}
}
