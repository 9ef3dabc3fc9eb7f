package searchindex_test

// Hand edits the random walk of archivalwindow_random_test.go does not
// make: several rows moved between keys (a conversation, another, the
// stream) in one statement, runs of adjacent entries superseded, restored
// or deleted at once, places reversed, created_at set at the stream's gap
// bounds, upserts, owners swapped, ids reversed, and edits inside a
// savepoint kept or rolled back.

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

func (g *windowGen) attackStep(agents []string) []windowStmt {
	r := g.r
	a := agents[r.IntN(len(agents))]
	lo := int64(r.IntN(130))
	hi := lo + 1 + int64(r.IntN(5))
	meta := windowMetas[r.IntN(len(windowMetas))]
	n := 16
	if !g.pg {
		n = 18
	}
	switch r.IntN(n) {
	case 16: // SQLite: a place stored as a real or as text
		return []windowStmt{{`UPDATE archival SET conversation_pos = ? WHERE id = ?`, []any{[]any{float64(lo) + 0.5, fmt.Sprint(lo), float64(lo)}[r.IntN(3)], g.pick(a)}}}
	case 17: // SQLite: created_at stored as a real
		return []windowStmt{{`UPDATE archival SET created_at = created_at + 0.5 WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{a, lo, hi}}}
	case 0: // into or out of the stream, several rows
		return []windowStmt{{`UPDATE archival SET metadata_json = CASE WHEN metadata_json = '{}' THEN CAST(? AS TEXT) ELSE '{}' END WHERE agent = ? AND COALESCE(conversation_pos, id) % 3 = ?`,
			[]any{meta, a, int64(r.IntN(3))}}}
	case 1: // keys rotated, several rows
		return []windowStmt{{`UPDATE archival SET metadata_json = CASE metadata_json WHEN '{"session": "s1"}' THEN '{"session": "s2"}' WHEN '{"session": "s2"}' THEN '{}' ELSE '{"session": "s1"}' END WHERE agent = ? AND id % 4 = ?`,
			[]any{a, int64(r.IntN(4))}}}
	case 2: // a run superseded
		return []windowStmt{{`UPDATE archival SET valid_to = 1 WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{a, lo, hi}}}
	case 3: // a run restored
		return []windowStmt{{`UPDATE archival SET valid_to = NULL WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{a, lo, hi}}}
	case 4: // a run flipped
		return []windowStmt{{`UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{a, lo, hi}}}
	case 5: // a run deleted
		return []windowStmt{{`DELETE FROM archival WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{a, lo, hi}}}
	case 6: // a run's places reversed
		return []windowStmt{{`UPDATE archival SET conversation_pos = ? - COALESCE(conversation_pos, id) WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{lo + hi, a, lo, hi}}}
	case 7: // created_at at the gap's bounds from the entry before it by id
		d := []int64{1_000_000_000, 999_999_999, 1_800_000_000_000, 1_800_000_000_001, 0}[r.IntN(5)]
		id := g.pick(a)
		return []windowStmt{{`UPDATE archival SET created_at = COALESCE((SELECT p.created_at FROM archival p WHERE p.agent = archival.agent AND p.id < archival.id ORDER BY p.id DESC LIMIT 1), 0) + ? WHERE id = ?`, []any{d, id}}}
	case 8: // several created_at at the bounds at once
		d := []int64{1_000_000_000, 1_800_000_000_000, 1_800_000_000_001}[r.IntN(3)]
		return []windowStmt{{`UPDATE archival SET created_at = ? + COALESCE(conversation_pos, id) * ? WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`,
			[]any{baseTime.UnixNano(), d, a, lo, hi + 3}}}
	case 9: // an upsert over an entry
		id := g.pick(a)
		var vt any
		if r.IntN(2) == 0 {
			vt = int64(1)
		}
		var pos any
		if r.IntN(2) == 0 {
			pos = int64(r.IntN(60))
		}
		return []windowStmt{{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to, conversation_pos) VALUES (?, ?, ?, ?, '[]', '', ?, 0, ?, ?)
			ON CONFLICT (id) DO UPDATE SET content = excluded.content, metadata_json = excluded.metadata_json, valid_to = excluded.valid_to, conversation_pos = excluded.conversation_pos`,
			[]any{id, a, g.text(), meta, g.created(id), vt, pos}}}
	case 10: // owners swapped, several rows
		return []windowStmt{{`UPDATE archival SET agent = CASE agent WHEN 'a' THEN 'b' ELSE 'a' END WHERE COALESCE(conversation_pos, id) BETWEEN ? AND ?`, []any{lo, hi}}}
	case 11: // ids reversed (and back)
		return []windowStmt{{`UPDATE archival SET id = 1000 - id WHERE agent = ? AND (id BETWEEN ? AND ? OR id BETWEEN 1000 - ? AND 1000 - ?)`, []any{a, lo, hi, hi, lo}}}
	case 12: // content, key and life at once, several rows
		return []windowStmt{{`UPDATE archival SET content = content || ' ' || CAST(? AS TEXT), metadata_json = CAST(? AS TEXT), valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`,
			[]any{g.vocab[r.IntN(len(g.vocab))], meta, a, lo, hi}}}
	case 13: // kept savepoint
		st := []windowStmt{{`SAVEPOINT sp`, nil}}
		st = append(st, g.attackStep(agents)...)
		return append(st, windowStmt{`RELEASE SAVEPOINT sp`, nil})
	case 14: // rolled back savepoint after an edit
		st := []windowStmt{{`SAVEPOINT sp`, nil}}
		st = append(st, g.attackStep(agents)...)
		st = append(st, g.step(agents)...)
		return append(st, windowStmt{`ROLLBACK TO SAVEPOINT sp`, nil}, windowStmt{`RELEASE SAVEPOINT sp`, nil})
	case 15: // a run moved to another place
		return []windowStmt{{`UPDATE archival SET conversation_pos = ? + COALESCE(conversation_pos, id) - ? WHERE agent = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`,
			[]any{int64(r.IntN(130)), lo, a, lo, hi}}}
	}
	return nil
}

// attackSeed is the walk's seed and length: ENGRAM_WINDOW_SEED and
// ENGRAM_WINDOW_STEPS, 1 and 150 unless set.
func attackSeed() (uint64, int) {
	seed := uint64(1)
	if s := os.Getenv("ENGRAM_WINDOW_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 150
	if s := os.Getenv("ENGRAM_WINDOW_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	return seed, steps
}

// TestArchivalWindowAttackSQLite runs the walk on SQLite: after each
// statement, the index is what a rebuild gives (and, with
// ENGRAM_WINDOW_CACHE set, the text caches rank as SQL does).
func TestArchivalWindowAttackSQLite(t *testing.T) {
	seed, steps := attackSeed()
	ctx := context.Background()
	db := openDBAt(t, t.TempDir()+"/engram.db")
	g := &windowGen{r: rand.New(rand.NewPCG(seed, 17)), vocab: strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar`)}
	g.pick = func(agent string) int64 {
		var ids []int64
		rows, err := db.QueryContext(ctx, `SELECT id FROM archival WHERE agent = ? ORDER BY id`, agent)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
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
		tx, err := db.BeginTx(ctx, nil)
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
	var sqlx, whole *searchindex.Index
	cache := os.Getenv("ENGRAM_WINDOW_CACHE") != ""
	if cache {
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
	}
	queries := append([]string{"apple fig"}, g.vocab...)
	check := func(step string) {
		t.Helper()
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			slices.Sort(extra)
			slices.Sort(missing)
			t.Fatalf("after %s: fts drift: extra %d %v missing %d %v\nlog:\n%s", step, len(extra), extra[:min(8, len(extra))],
				len(missing), missing[:min(8, len(missing))], strings.Join(log[max(0, len(log)-10):], "\n"))
		}
		if !cache {
			return
		}
		loaded, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer loaded.Close()
		searchindex.ForceTextPartial(loaded)
		_ = loaded.WarmTextCache(ctx)
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
					for name, y := range map[string]*searchindex.Index{"whole": whole, "loaded": loaded} {
						got, err := y.Search(ctx, q, search.Scope{Agent: agent}, o())
						if err != nil {
							t.Fatal(err)
						}
						if err := sameRanking(want, got); err != nil || len(want) != len(got) {
							t.Fatalf("after %s, %s %s %q sup %v: %v\nSQL   %v\ncache %v", step, name, agent, q, sup, err, keys(want), keys(got))
						}
					}
				}
			}
		}
	}
	check("seed")
	for i := range steps {
		before := len(log)
		if g.r.IntN(3) == 0 {
			run(g.step(agents))
		} else {
			run(g.attackStep(agents))
		}
		check(fmt.Sprintf("step %d: %s", i, strings.Join(log[before:], "; ")))
	}
	fails := 0
	for _, l := range log {
		if strings.Contains(l, " -> ") {
			fails++
		}
	}
	for _, l := range log {
		if strings.Contains(l, " -> ") && os.Getenv("ENGRAM_WINDOW_FAILS") != "" {
			t.Log(l)
		}
	}
	t.Logf("%d statements, %d failed", len(log), fails)
}

// TestArchivalWindowAttackPostgres runs the walk on PostgreSQL: after
// each statement no entry's stored tsvector is stale.
func TestArchivalWindowAttackPostgres(t *testing.T) {
	seed, steps := attackSeed()
	ctx := context.Background()
	_, b := openPGStore(t)
	g := &windowGen{r: rand.New(rand.NewPCG(seed, 17)), vocab: strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar`), pg: true}
	g.pick = func(agent string) int64 {
		var ids []int64
		rows, err := b.DB().QueryContext(ctx, `SELECT id FROM archival WHERE agent = $1 ORDER BY id`, agent)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
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
		err := b.Write(ctx, func(tx *sql.Tx) error {
			for _, s := range st {
				if _, err := tx.ExecContext(ctx, s.q, s.args...); err != nil {
					return err
				}
			}
			return nil
		})
		var parts []string
		for _, s := range st {
			parts = append(parts, fmt.Sprintf("%s %v", s.q, s.args))
		}
		l := "TX{" + strings.Join(parts, "; ") + "}"
		if err != nil {
			l += " -> " + err.Error()
		}
		log = append(log, l)
	}
	for range 30 {
		run([]windowStmt{g.ins1("a")})
		run([]windowStmt{g.ins1("b")})
	}
	check := func(step string) {
		t.Helper()
		if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
			t.Fatalf("after %s: entries %v stale\nlog:\n%s", step, bad, strings.Join(log[max(0, len(log)-10):], "\n"))
		}
	}
	check("seed")
	for i := range steps {
		before := len(log)
		var st []windowStmt
		if g.r.IntN(3) == 0 {
			st = g.step(agents)
		} else {
			st = g.attackStep(agents)
		}
		run(st)
		check(fmt.Sprintf("step %d: %s", i, strings.Join(log[before:], "; ")))
	}
	fails := 0
	for _, l := range log {
		if strings.Contains(l, " -> ") {
			fails++
		}
	}
	t.Logf("%d transactions, %d failed", len(log), fails)
}
