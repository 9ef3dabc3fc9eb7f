package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestArchivalWindowRandomPostgres: the SQLite random edits on
// PostgreSQL, one or two statements per transaction: every row's fts is
// engram_archival_fts recomputed; a whole cache following the log and a
// loaded partial rank as a whole cache loaded afresh.
func TestArchivalWindowRandomPostgres(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv("ENGRAM_WINDOW_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 80
	if s := os.Getenv("ENGRAM_WINDOW_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	noCache := os.Getenv("ENGRAM_WINDOW_NOCACHE") != ""
	ctx := context.Background()
	_, b := openPGStore(t)
	g := &windowGen{r: rand.New(rand.NewPCG(seed, 91)), vocab: strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar`), pg: true}
	g.pick = func(agent string) int64 {
		var id int64
		rows, err := b.DB().QueryContext(ctx, `SELECT id FROM archival WHERE agent = $1 ORDER BY id`, agent)
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
	var followed *searchindex.Index
	if !noCache {
		var err error
		followed, err = searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil,
			&searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer followed.Close()
		if err := followed.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
	}
	queries := append([]string{"apple fig"}, g.vocab...)
	dump := func() string {
		if len(log) > 40 && os.Getenv("ENGRAM_WINDOW_FULLLOG") == "" {
			return ".. " + strings.Join(log[len(log)-40:], "\n")
		}
		return strings.Join(log, "\n")
	}
	check := func(step string) {
		t.Helper()
		rows, err := b.DB().QueryContext(ctx, `SELECT id FROM archival WHERE fts IS DISTINCT FROM
			engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at) ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		var bad []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			bad = append(bad, id)
		}
		rows.Close()
		if len(bad) > 0 {
			rows, _ := b.DB().QueryContext(ctx, `SELECT id, agent, COALESCE(engram_archival_conversation(metadata_json), '-'), COALESCE(conversation_pos::text, '-'), valid_to IS NULL,
				(created_at - 1735732800000000000) / 1000000000, content, fts::text, engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)::text
				FROM archival WHERE agent = (SELECT agent FROM archival WHERE id = $1) ORDER BY 3, COALESCE(conversation_pos, id), id`, bad[0])
			for rows.Next() {
				var id int64
				var ag, conv, pos, content, fts, want string
				var live bool
				var at int64
				rows.Scan(&id, &ag, &conv, &pos, &live, &at, &content, &fts, &want)
				mark := ""
				if fts != want {
					mark = "  <-- stored " + fts + "\n      want " + want
				}
				t.Logf("%d %s conv=%s pos=%s live=%v at=%ds %q%s", id, ag, conv, pos, live, at, content, mark)
			}
			rows.Close()
			t.Fatalf("after %s: entries %v: fts is not engram_archival_fts\nlog:\n%s", step, bad, dump())
		}
		if noCache {
			return
		}
		var opts []func() *search.Options
		for _, sup := range []bool{true, false} {
			opts = append(opts, func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(200)
			})
		}
		partialRanksLikeWhole(t, b.DB(), b.SearchDialect(), b.Write, step+"\nlog:\n"+dump(), agents, queries,
			map[string]*searchindex.Index{"followed": followed}, opts...)
	}
	check("seed")
	for i := range steps {
		before := len(log)
		var st []windowStmt
		for range 1 + g.r.IntN(2) {
			st = append(st, g.step(agents)...)
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
	for _, l := range log {
		if strings.Contains(l, " -> ") {
			t.Log(l)
		}
	}
	t.Logf("%d transactions, %d failed", len(log), fails)
}
