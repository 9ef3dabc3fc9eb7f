package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestMessageContextRandomEdits: random hand edits (another pool) of
// messages at int64's ends and in the middle, gaps, multi-row inserts and
// updates, moves between batches and agents, deletes. After every step:
// fts_messages equals fts_messages_source; a whole cache and a forced
// partial cache rank (scores included) exactly as SQL; the partial cache's
// statistics equal a fresh count (TextStatsDiff).
func TestMessageContextRandomEdits(t *testing.T) {
	seed, steps := editRun(t, 150)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(seed, 77))
	agents := []string{"a", "b", "c"}
	batches := []string{"s1", "s2"}
	seqNear := func() int64 { return editSeqs[r.IntN(len(editSeqs))] }
	var log []string
	var other *sql.DB
	exec := func(q string, args ...any) {
		_, err := other.ExecContext(ctx, q, args...)
		s := fmt.Sprintf("%s %v", q, args)
		if err != nil {
			s += " -> " + err.Error()
		}
		log = append(log, s)
	}
	e := newSQLiteEdits(t, func(o *sql.DB) {
		other = o
		for _, a := range agents {
			for _, b := range batches {
				for range 6 {
					exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, 0)`, a, editText(r), b, seqNear())
				}
			}
		}
	})
	queries := append([]string{"apple fig", "kale lemon banana"}, editWords...)
	history := func() string { return "log:\n" + strings.Join(log, "\n") }
	statsChecked := 0
	check := func(step string) {
		t.Helper()
		if e.check(t, step, agents, queries, history) {
			statsChecked++
		}
	}
	check("seed")
	if !searchindex.TextCacheHeld(e.partial, search.Messages, "a") || searchindex.TextCacheHeld(e.partial, search.Messages, "b") {
		t.Fatal("want a resident, b not")
	}
	pickID := func(agent string) int64 {
		var id int64
		if err := other.QueryRowContext(ctx, `SELECT id FROM messages WHERE agent = ? ORDER BY random() LIMIT 1`, agent).Scan(&id); err != nil {
			return -1
		}
		return id
	}
	reads0 := searchindex.TextStatsReads(e.partial)
	for i := range steps {
		before := len(log)
		a := agents[r.IntN(len(agents))]
		b := batches[r.IntN(len(batches))]
		switch r.IntN(14) {
		case 11:
			exec(`UPDATE messages SET seq = seq + ? WHERE agent = ? AND batch_id = ? AND seq BETWEEN -3 AND 10`, []int64{100, -100, 1, -1, 2}[r.IntN(5)], a, b)
		case 12:
			exec(`UPDATE messages SET seq = -seq WHERE agent = ? AND batch_id = ? AND seq BETWEEN -3 AND 10`, a, b)
		case 13:
			exec(`UPDATE messages SET batch_id = CASE batch_id WHEN 's1' THEN 's3' ELSE 's1' END WHERE agent = ? AND seq BETWEEN 0 AND 5`, a)
		case 0, 1:
			exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, 0)`, a, editText(r), b, seqNear())
		case 2: // several rows, one statement, often adjacent
			base := seqNear()
			n := 2 + r.IntN(3)
			var vals []string
			var args []any
			for k := range n {
				s := base
				if r.IntN(3) > 0 {
					if base <= math.MaxInt64-int64(k) {
						s = base + int64(k)
					}
				} else {
					s = seqNear()
				}
				vals = append(vals, `(?, 'user', ?, ?, ?, 0)`)
				args = append(args, a, editText(r), b, s)
			}
			exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES `+strings.Join(vals, ", "), args...)
		case 3:
			exec(`UPDATE messages SET seq = ? WHERE id = ?`, seqNear(), pickID(a))
		case 4:
			exec(`UPDATE messages SET batch_id = ? WHERE id = ?`, b, pickID(a))
		case 5:
			exec(`UPDATE messages SET agent = ? WHERE id = ?`, agents[r.IntN(len(agents))], pickID(a))
		case 6:
			exec(`UPDATE messages SET content = ? WHERE id = ?`, editText(r), pickID(a))
		case 7:
			exec(`UPDATE messages SET content = ?, seq = ?, batch_id = ? WHERE id = ?`, editText(r), seqNear(), b, pickID(a))
		case 8:
			exec(`DELETE FROM messages WHERE id = ?`, pickID(a))
		case 9: // many rows at once
			exec(`UPDATE messages SET content = content || ' ' || ? WHERE agent = ? AND batch_id = ? AND seq BETWEEN ? AND ?`, editWords[r.IntN(len(editWords))], a, b, -1, 4)
		case 10:
			exec(`DELETE FROM messages WHERE agent = ? AND batch_id = ? AND seq IN (?, ?)`, a, b, seqNear(), seqNear())
		}
		check(fmt.Sprintf("step %d: %s", i, strings.Join(log[before:], "; ")))
	}
	t.Logf("statistics compared %d times, read %d times over %d steps", statsChecked, searchindex.TextStatsReads(e.partial)-reads0, steps)
	if statsChecked == 0 {
		t.Error("statistics never compared")
	}
}

// TestMessageContextRandomEditsPostgres: as the SQLite one on PostgreSQL,
// several statements per transaction at times: every row's stored fts is
// engram_message_fts recomputed; a whole cache following the edits ranks
// bit for bit as one warmed afresh; a forced partial cache as the whole
// one; its statistics equal a fresh count.
func TestMessageContextRandomEditsPostgres(t *testing.T) {
	seed, steps := editRun(t, 80)
	ctx := context.Background()
	p := &pgPartial{t: t}
	p.store, p.b = openPGStore(t)
	r := rand.New(rand.NewPCG(seed, 78))
	agents := []string{"a", "b", "c"}
	batches := []string{"s1", "s2"}
	seqNear := func() int64 { return editSeqs[r.IntN(len(editSeqs))] }
	var log []string
	type stmt struct {
		q    string
		args []any
	}
	run := func(st ...stmt) {
		err := p.b.Write(ctx, func(tx *sql.Tx) error {
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
		s := "TX{" + strings.Join(parts, "; ") + "}"
		if err != nil {
			s += " -> " + err.Error()
		}
		log = append(log, s)
	}
	for _, a := range agents {
		for _, b := range batches {
			for range 6 {
				run(stmt{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, 0)`, []any{a, editText(r), b, seqNear()}})
			}
		}
	}
	whole := p.whole()
	x := p.index(1<<20, true)
	_ = x.WarmTextCache(ctx)
	msgs := func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100)
	}
	queries := append([]string{"apple fig", "kale lemon banana"}, editWords...)
	statsChecked := 0
	fellSQL, compared := map[string]int{}, map[string]int{}
	dump := func() string { return strings.Join(log, "\n") }
	check := func(step string) {
		t.Helper()
		var bad int
		if err := p.b.DB().QueryRowContext(ctx, `SELECT count(*) FROM messages
			WHERE fts IS DISTINCT FROM engram_message_fts(agent, batch_id, seq, content, created_at)`).Scan(&bad); err != nil {
			t.Fatal(err)
		}
		if bad != 0 {
			t.Fatalf("after %s: %d rows' fts differ from engram_message_fts\nlog:\n%s", step, bad, dump())
		}
		fresh := p.whole()
		defer fresh.Close()
		for _, agent := range agents {
			for _, q := range queries {
				legs := searchindex.TextCacheAnswers(fresh)
				want, err := fresh.Search(ctx, q, search.Scope{Agent: agent}, msgs())
				if err != nil {
					t.Fatal(err)
				}
				if searchindex.TextCacheAnswers(fresh)-legs != 1 {
					t.Fatalf("fresh cache ranked in SQL")
				}
				for name, y := range map[string]*searchindex.Index{"whole": whole, "partial": x} {
					if name == "partial" && agent != "a" {
						continue
					}
					before := searchindex.TextCacheAnswers(y)
					got, err := y.Search(ctx, q, search.Scope{Agent: agent}, msgs())
					if err != nil {
						t.Fatal(err)
					}
					if searchindex.TextCacheAnswers(y)-before != 1 {
						fellSQL[name]++
						continue
					}
					if err := sameBits(want, got); err != nil {
						t.Fatalf("after %s, %s %s %q: %v\nfresh %v\ncache %v\nlog:\n%s", step, name, agent, q, err, keys(want), keys(got), dump())
					}
					compared[name]++
				}
			}
		}
		ready, err := searchindex.TextStatsDiff(ctx, x, whole, search.Messages)
		if err != nil {
			t.Fatalf("after %s: stats: %v\nlog:\n%s", step, err, dump())
		}
		if ready {
			statsChecked++
		}
	}
	check("seed")
	pickID := func(agent string) int64 {
		var id int64
		if err := p.b.DB().QueryRowContext(ctx, `SELECT id FROM messages WHERE agent = ? ORDER BY random() LIMIT 1`, agent).Scan(&id); err != nil {
			return -1
		}
		return id
	}
	reads0 := searchindex.TextStatsReads(x)
	for i := range steps {
		before := len(log)
		var tx []stmt
		for range 1 + r.IntN(2) {
			a := agents[r.IntN(len(agents))]
			b := batches[r.IntN(len(batches))]
			switch r.IntN(14) {
			case 11:
				tx = append(tx, stmt{`UPDATE messages SET seq = seq + ? WHERE agent = ? AND batch_id = ? AND seq BETWEEN -3 AND 10`, []any{[]int64{100, -100, 1, -1, 2}[r.IntN(5)], a, b}})
			case 12:
				tx = append(tx, stmt{`UPDATE messages SET seq = -seq WHERE agent = ? AND batch_id = ? AND seq BETWEEN -3 AND 10`, []any{a, b}})
			case 13:
				tx = append(tx, stmt{`UPDATE messages SET batch_id = CASE batch_id WHEN 's1' THEN 's3' ELSE 's1' END WHERE agent = ? AND seq BETWEEN 0 AND 5`, []any{a}})
			case 0, 1:
				tx = append(tx, stmt{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, 0) ON CONFLICT DO NOTHING`, []any{a, editText(r), b, seqNear()}})
			case 2:
				base := seqNear()
				n := 2 + r.IntN(3)
				var vals []string
				var args []any
				used := map[int64]bool{}
				for k := range n {
					s := base
					if r.IntN(3) > 0 {
						if base <= math.MaxInt64-int64(k) {
							s = base + int64(k)
						}
					} else {
						s = seqNear()
					}
					if used[s] {
						continue
					}
					used[s] = true
					vals = append(vals, `(?, 'user', ?, ?, ?, 0)`)
					args = append(args, a, editText(r), b, s)
				}
				tx = append(tx, stmt{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ` + strings.Join(vals, ", ") + ` ON CONFLICT DO NOTHING`, args})
			case 3:
				s := seqNear()
				tx = append(tx, stmt{`UPDATE messages SET seq = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.agent = messages.agent AND m.batch_id = messages.batch_id AND m.seq = ?)`, []any{s, pickID(a), s}})
			case 4:
				tx = append(tx, stmt{`UPDATE messages SET batch_id = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.agent = messages.agent AND m.batch_id = ? AND m.seq = messages.seq)`, []any{b, pickID(a), b}})
			case 5:
				o := agents[r.IntN(len(agents))]
				tx = append(tx, stmt{`UPDATE messages SET agent = ? WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.agent = ? AND m.batch_id = messages.batch_id AND m.seq = messages.seq)`, []any{o, pickID(a), o}})
			case 6:
				tx = append(tx, stmt{`UPDATE messages SET content = ? WHERE id = ?`, []any{editText(r), pickID(a)}})
			case 7:
				tx = append(tx, stmt{`UPDATE messages SET content = ?, role = 'assistant' WHERE id = ?`, []any{editText(r), pickID(a)}})
			case 8:
				tx = append(tx, stmt{`DELETE FROM messages WHERE id = ?`, []any{pickID(a)}})
			case 9:
				tx = append(tx, stmt{`UPDATE messages SET content = content || ' ' || ? WHERE agent = ? AND batch_id = ? AND seq BETWEEN -1 AND 4`, []any{editWords[r.IntN(len(editWords))], a, b}})
			case 10:
				tx = append(tx, stmt{`DELETE FROM messages WHERE agent = ? AND batch_id = ? AND seq IN (?, ?)`, []any{a, b, seqNear(), seqNear()}})
			}
		}
		run(tx...)
		check(fmt.Sprintf("step %d: %s", i, strings.Join(log[before:], "; ")))
	}
	t.Logf("statistics compared %d times, read %d times over %d steps", statsChecked, searchindex.TextStatsReads(x)-reads0, steps)
	t.Logf("compared %v, fell to SQL %v; statistics drops %d", compared, fellSQL, searchindex.TextStatsDrops(x))
	if compared["whole"] == 0 || compared["partial"] == 0 || statsChecked == 0 {
		t.Errorf("compared %v rankings and the statistics %d times: the caches were not what was measured", compared, statsChecked)
	}
}
