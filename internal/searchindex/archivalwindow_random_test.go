package searchindex_test

// Random hand edits of archival rows against the two-before, one-after
// archival context (SQLite 0035, PostgreSQL 0036), checked against an
// index rebuilt from scratch.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

type windowStmt struct {
	q    string
	args []any
}

// windowGen makes random hand edits of archival rows: small conversations
// (two keys and the stream) so that neighbours two away are common.
type windowGen struct {
	r     *rand.Rand
	vocab []string
	pick  func(agent string) int64
	pg    bool
}

func (g *windowGen) text() string {
	w := make([]string, 1+g.r.IntN(2))
	for i := range w {
		w[i] = g.vocab[g.r.IntN(len(g.vocab))]
	}
	return strings.Join(w, " ")
}

var windowMetas = []string{`{"session": "s1"}`, `{"session": "s2"}`, `{}`, `{}`, `{"session": "s1"}`}

// created: 20 s apart by id-ish, sometimes far, sometimes a burst.
func (g *windowGen) created(id int64) int64 {
	base := baseTime.UnixNano() + id*20_000_000_000
	switch g.r.IntN(6) {
	case 0:
		return base + 3600_000_000_000
	case 1:
		return base + 500_000_000
	}
	return base
}

func (g *windowGen) step(agents []string) []windowStmt {
	r := g.r
	a := agents[r.IntN(len(agents))]
	id := g.pick(a)
	pos := func() any {
		if r.IntN(3) == 0 {
			return nil
		}
		return int64(r.IntN(60))
	}
	validTo := func() any {
		if r.IntN(4) == 0 {
			return int64(1)
		}
		return nil
	}
	ins := func(n int) windowStmt {
		var vals []string
		var args []any
		for range n {
			nid := int64(1 + r.IntN(120))
			vals = append(vals, `(?, ?, ?, ?, '[]', '', ?, ?, ?, ?)`)
			args = append(args, nid, a, g.text(), windowMetas[r.IntN(len(windowMetas))], g.created(nid), int64(0), validTo(), pos())
		}
		conflict := ` ON CONFLICT DO NOTHING`
		return windowStmt{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to, conversation_pos) VALUES ` +
			strings.Join(vals, ", ") + conflict, args}
	}
	switch r.IntN(21) {
	case 0, 1:
		return []windowStmt{ins(1)}
	case 2:
		return []windowStmt{ins(2 + r.IntN(3))}
	case 3:
		return []windowStmt{{`UPDATE archival SET content = ? WHERE id = ?`, []any{g.text(), id}}}
	case 4:
		return []windowStmt{{`UPDATE archival SET metadata_json = ? WHERE id = ?`, []any{windowMetas[r.IntN(len(windowMetas))], id}}}
	case 5:
		return []windowStmt{{`UPDATE archival SET conversation_pos = ? WHERE id = ?`, []any{pos(), id}}}
	case 6: // many rows moved at once
		return []windowStmt{{`UPDATE archival SET conversation_pos = COALESCE(conversation_pos, id) + ? WHERE agent = ? AND COALESCE(conversation_pos, id) % 3 = ?`,
			[]any{[]int64{-2, -1, 1, 2, 5}[r.IntN(5)], a, int64(r.IntN(3))}}}
	case 7, 8: // supersede
		return []windowStmt{{`UPDATE archival SET valid_to = 1 WHERE id = ?`, []any{id}}}
	case 9: // restore
		return []windowStmt{{`UPDATE archival SET valid_to = NULL WHERE id = ?`, []any{id}}}
	case 10:
		return []windowStmt{{`UPDATE archival SET created_at = ? WHERE id = ?`, []any{g.created(id), id}}}
	case 11:
		return []windowStmt{{`UPDATE archival SET created_at = created_at + ? WHERE agent = ? AND id % 3 = ?`,
			[]any{[]int64{3600_000_000_000, -3600_000_000_000, 500_000_000, 25 * 60_000_000_000}[r.IntN(4)], a, int64(r.IntN(3))}}}
	case 12:
		o := agents[r.IntN(len(agents))]
		return []windowStmt{{`UPDATE archival SET agent = ? WHERE id = ?`, []any{o, id}}}
	case 13:
		nid := int64(1 + r.IntN(120))
		return []windowStmt{{`UPDATE archival SET id = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM archival x WHERE x.id = ?)`, []any{nid, id, nid}}}
	case 14:
		return []windowStmt{{`DELETE FROM archival WHERE id = ?`, []any{id}}}
	case 15:
		return []windowStmt{{`DELETE FROM archival WHERE agent = ? AND id % 7 = ?`, []any{a, int64(r.IntN(7))}}}
	case 16: // supersede / restore many at once
		return []windowStmt{{`UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 ELSE NULL END WHERE agent = ? AND id % 5 = ?`, []any{a, int64(r.IntN(5))}}}
	case 17: // the Go API's supersede: the old one closed, a new one at its place
		nid := int64(1 + r.IntN(120))
		return []windowStmt{
			{`UPDATE archival SET valid_to = 1 WHERE id = ?`, []any{id}},
			{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, conversation_pos)
				SELECT CAST(? AS BIGINT), agent, CAST(? AS TEXT), metadata_json, '[]', '', created_at + 1, 0, COALESCE(conversation_pos, id) FROM archival WHERE id = ? ON CONFLICT DO NOTHING`,
				[]any{nid, g.text(), id}},
		}
	case 19: // two entries swap places in one statement
		id2 := g.pick(a)
		return []windowStmt{{`UPDATE archival SET conversation_pos = (SELECT COALESCE(x.conversation_pos, x.id) FROM archival x WHERE x.id = CASE WHEN archival.id = CAST(? AS BIGINT) THEN CAST(? AS BIGINT) ELSE CAST(? AS BIGINT) END) WHERE id IN (?, ?)`,
			[]any{id, id2, id, id, id2}}}
	case 20: // ids changed, several rows
		return []windowStmt{{`UPDATE archival SET id = id + 200 WHERE agent = ? AND id % 6 = ? AND id < 1000`, []any{a, int64(r.IntN(6))}}}
	case 18: // content and place at once, several rows
		return []windowStmt{{`UPDATE archival SET content = content || ' ' || CAST(? AS TEXT), conversation_pos = ? WHERE agent = ? AND id % 4 = ?`,
			[]any{g.vocab[r.IntN(len(g.vocab))], pos(), a, int64(r.IntN(4))}}}
	}
	return nil
}

// TestArchivalWindowRandomSQLite: random hand edits from another
// pool; after each: fts_archival equals fts_archival_source (rows counted
// too), and whole, partial (following) and loaded partial caches rank as
// SQL.
func TestArchivalWindowRandomSQLite(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv("ENGRAM_WINDOW_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 120
	if s := os.Getenv("ENGRAM_WINDOW_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	noCache := os.Getenv("ENGRAM_WINDOW_NOCACHE") != ""
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db, other := openDBAt(t, path), openDBAt(t, path)
	g := &windowGen{r: rand.New(rand.NewPCG(seed, 91)), vocab: strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar`)}
	g.pick = func(agent string) int64 {
		var id int64
		rows, err := other.QueryContext(ctx, `SELECT id FROM archival WHERE agent = ? ORDER BY id`, agent)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) == 0 {
			return -1
		}
		return ids[g.r.IntN(len(ids))]
	}
	agents := []string{"a", "b"}
	var log []string
	run := func(st []windowStmt) {
		tx, err := other.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var parts []string
		for _, s := range st {
			_, err := tx.ExecContext(ctx, s.q, s.args...)
			p := fmt.Sprintf("%s %v", s.q, s.args)
			if err != nil {
				p += " -> " + err.Error()
			}
			parts = append(parts, p)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		log = append(log, strings.Join(parts, "; "))
	}
	for range 30 {
		run([]windowStmt{g.ins1("a")})
		run([]windowStmt{g.ins1("b")})
	}
	var sqlx, whole, partial *searchindex.Index
	if !noCache {
		var err error
		sqlx, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer sqlx.Close()
		whole, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer whole.Close()
		if err := whole.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
		partial, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer partial.Close()
		searchindex.ForceTextPartial(partial)
		_ = partial.WarmTextCache(ctx)
	}
	queries := append([]string{"apple fig", "kale lemon banana"}, g.vocab...)
	dump := func() string {
		if len(log) > 40 && os.Getenv("ENGRAM_WINDOW_FULLLOG") == "" {
			return ".. " + strings.Join(log[len(log)-40:], "\n")
		}
		return strings.Join(log, "\n")
	}
	check := func(step string) {
		t.Helper()
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			slices.Sort(extra)
			slices.Sort(missing)
			t.Fatalf("after %s: fts drift: extra %d %v missing %d %v\nlog:\n%s", step, len(extra), extra[:min(8, len(extra))],
				len(missing), missing[:min(8, len(missing))], dump())
		}
		if noCache {
			return
		}
		loaded, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer loaded.Close()
		searchindex.ForceTextPartial(loaded)
		if err := loaded.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache of a partial cache: %v", err)
		}
		for _, agent := range agents {
			for _, q := range queries {
				for _, sup := range []bool{true, false} {
					o := func() *search.Options {
						return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(200)
					}
					want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, o())
					if err != nil {
						t.Fatal(err)
					}
					for name, y := range map[string]*searchindex.Index{"whole": whole, "partial": partial, "loaded": loaded} {
						got, err := y.Search(ctx, q, search.Scope{Agent: agent}, o())
						if err != nil {
							t.Fatal(err)
						}
						if len(want) != len(got) {
							t.Fatalf("after %s, %s %s %q sup %v: SQL %d results, cache %d\nSQL   %v\ncache %v\nlog:\n%s", step, name, agent, q, sup, len(want), len(got), keys(want), keys(got), dump())
						}
						if err := sameRanking(want, got); err != nil {
							t.Fatalf("after %s, %s %s %q sup %v: %v\nSQL   %v\ncache %v\nlog:\n%s", step, name, agent, q, sup, err, keys(want), keys(got), dump())
						}
					}
				}
			}
		}
		if _, err := searchindex.TextStatsDiff(ctx, partial, whole, search.Archival); err != nil {
			t.Fatalf("after %s: stats: %v\nlog:\n%s", step, err, dump())
		}
	}
	check("seed")
	var ctxRows int
	if err := db.QueryRow(`SELECT count(*) FROM fts_archival_source WHERE context_before LIKE '% %' OR context_after LIKE '% %'`).Scan(&ctxRows); err != nil || ctxRows == 0 {
		t.Logf("entries with some context holding a space: %d (%v)", ctxRows, err)
	}
	for i := range steps {
		before := len(log)
		run(g.step(agents))
		check(fmt.Sprintf("step %d: %s", i, strings.Join(log[before:], "; ")))
	}
	fails := 0
	for _, l := range log {
		if strings.Contains(l, " -> ") {
			fails++
		}
	}
	var n, two int
	_ = db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE context_before LIKE '% %' OR context_after LIKE '% %') FROM fts_archival_source`).Scan(&n, &two)
	t.Logf("%d statements, %d failed; %d rows, %d with context holding a space", len(log), fails, n, two)
}

func (g *windowGen) ins1(a string) windowStmt {
	nid := int64(1 + g.r.IntN(120))
	var pos any
	if g.r.IntN(4) == 0 {
		pos = int64(g.r.IntN(60))
	}
	return windowStmt{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, conversation_pos) VALUES (?, ?, ?, ?, '[]', '', ?, 0, ?) ON CONFLICT DO NOTHING`,
		[]any{nid, a, g.text(), windowMetas[g.r.IntN(len(windowMetas))], g.created(nid), pos}}
}
