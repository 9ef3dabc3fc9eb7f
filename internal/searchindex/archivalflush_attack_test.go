package searchindex_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// flushEngine is a store on one engine with its database, a check of the
// stored index against the engine's definition, and a text cache warmed
// when the engine was opened that follows the change log.
type flushEngine struct {
	store    *memory.Store
	db       *sql.DB
	check    func() string
	followed func() *searchindex.Index
	write    func(context.Context, func(*sql.Tx) error) error
	own      func() *searchindex.Index
}

func openFlushEngine(t *testing.T, engine string) *flushEngine {
	return openFlushEngineOpts(t, engine, false)
}

// openFlushEngineOpts with ownCache opens the store with its default
// options (its own text cache on, TextCacheBytes 0), and own returns
// that cache, warmed.
func openFlushEngineOpts(t *testing.T, engine string, ownCache bool) *flushEngine {
	t.Helper()
	ctx := context.Background()
	f := &flushEngine{}
	storeOpts := &memory.Options{TextCacheBytes: -1}
	if ownCache {
		storeOpts = nil
	}
	var newCache func() *searchindex.Index
	if engine == "sqlite" {
		path := filepath.Join(t.TempDir(), "flush.db")
		var err error
		if f.store, err = memory.Open(ctx, path, storeOpts); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.store.Close() })
		f.db = openDBAt(t, path)
		f.check = func() string {
			if extra, missing := archivalDrift(t, f.db); len(extra)+len(missing) > 0 {
				return fmt.Sprintf("extra %v missing %v", extra, missing)
			}
			return ""
		}
		newCache = func() *searchindex.Index {
			x, err := searchindex.NewIndex(ctx, f.db, sqlite.SearchDialect{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			if err := x.WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
			return x
		}
	} else {
		var s *memory.Store
		var b *pgbackend.Backend
		if ownCache {
			dsn := pgtest.Start(t).NewDatabase(t)
			var err error
			if s, err = memory.Open(ctx, dsn, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if b, err = pgbackend.Open(ctx, dsn, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
		} else {
			s, b = openPGStore(t)
		}
		f.store, f.db, f.write = s, b.DB(), b.Write
		f.check = func() string {
			if bad := archivalStalePostgres(t, f.db); len(bad) > 0 {
				return fmt.Sprint("stale ", bad)
			}
			return ""
		}
		newCache = func() *searchindex.Index {
			x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil,
				&searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			if err := x.WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	f.followed = newCache
	f.own = func() *searchindex.Index {
		x := storeaccess.Index(f.store)
		if err := x.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
		return x
	}
	return f
}

// fresh is a text cache loaded from the rows as they are now.
func (f *flushEngine) fresh() *searchindex.Index { return f.followed() }

// cacheLikeFresh holds the followed cache's rankings of queries to a
// cache loaded now, superseded entries included and not.
func cacheLikeFresh(t *testing.T, step string, followed, fresh *searchindex.Index, agent string, queries []string) {
	t.Helper()
	ctx := context.Background()
	for _, q := range queries {
		for _, sup := range []bool{true, false} {
			o := func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(100)
			}
			want, err := fresh.Search(ctx, q, search.Scope{Agent: agent}, o())
			if err != nil {
				t.Fatal(err)
			}
			got, err := followed.Search(ctx, q, search.Scope{Agent: agent}, o())
			if err != nil {
				t.Fatal(err)
			}
			if err := sameBits(want, got); err != nil {
				t.Errorf("after %s, %s %q (superseded %v): followed cache vs fresh: %v\nfresh    %v\nfollowed %v",
					step, agent, q, sup, err, keys(want), keys(got))
			}
		}
	}
}

// A batch holding a duplicate of the last entry of its conversation and
// new entries after it: the duplicate is merged into the stored entry
// (nothing of it written when its tags and metadata add nothing), whose
// id is then among the batch's ids, and the new entries follow it, so
// its entry after changed. A text cache following the change log (a
// second index on the database, or the store's own, on by default) must
// see the stored entry re-indexed. With a tag to add, the merge writes
// the entry (logged by its update trigger): the control case.
func TestArchivalBatchDuplicateOfLastFollowed(t *testing.T) {
	for _, c := range []struct {
		engine string
		cache  string // "second index" or "store's own"
		tags   []string
	}{
		{"sqlite", "second index", nil},
		{"sqlite", "store's own", nil},
		{"sqlite", "second index", []string{"again"}},
		{"postgres", "second index", nil},
		{"postgres", "store's own", nil},
		{"postgres", "second index", []string{"again"}},
	} {
		t.Run(fmt.Sprintf("%s/%s/tags=%v", c.engine, c.cache, c.tags), func(t *testing.T) {
			ctx := context.Background()
			f := openFlushEngineOpts(t, c.engine, c.cache == "store's own")
			ar := f.store.Agent("a").Archival()
			meta := map[string]any{"session": "s1"}
			for _, w := range []string{"alpha", "bravo", "charlie"} {
				if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: w + " entry", Metadata: meta}); err != nil {
					t.Fatal(err)
				}
			}
			followed := f.followed
			if c.cache == "store's own" {
				followed = f.own
			}
			x := followed()
			es, err := ar.InsertBatch(ctx, []memory.ArchivalEntry{
				{Content: "charlie entry", Metadata: meta, Tags: c.tags}, // merged into the stored charlie
				{Content: "kilo novel", Metadata: meta},
				{Content: "lima novel", Metadata: meta},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !es[0].Duplicate {
				t.Fatalf("the first entry was not merged: %+v", es[0])
			}
			if d := f.check(); d != "" {
				t.Fatalf("after the batch: %s", d)
			}
			cacheLikeFresh(t, "the batch", x, f.fresh(), "a", []string{"kilo", "lima", "novel", "charlie", "bravo", "entry"})
		})
	}
}

// edit runs a hand-written statement (? placeholders) as a writer would,
// under the write lock on PostgreSQL.
func (f *flushEngine) edit(q string, args ...any) error {
	if f.write != nil {
		return f.write(context.Background(), func(tx *sql.Tx) error { _, err := tx.ExecContext(context.Background(), q, args...); return err })
	}
	_, err := f.db.ExecContext(context.Background(), q, args...)
	return err
}

// Random API writes and hand edits, batches mixing conversations (string
// and numeric keys), the stream (created_at straddling the gap limits),
// duplicates of stored entries (merged, with a tag added so the merge
// writes the entry, or, when noopDups, with nothing to add), entries
// placed by hand before, between and after where batches land (ties
// included), and supersessions by hand. After every step the stored
// index is the engine's definition, and a text cache warmed at the start
// and following the log ranks bit for bit as one loaded now.
func TestArchivalFlushAttackRandom(t *testing.T) {
	for _, c := range []struct {
		engine   string
		noopDups bool
		seeds    uint64
		steps    int
	}{
		{"sqlite", false, 4, 150},
		{"postgres", false, 3, 120},
		{"sqlite", true, 2, 120},
		{"postgres", true, 2, 100},
	} {
		t.Run(fmt.Sprintf("%s/noopdups=%v", c.engine, c.noopDups), func(t *testing.T) {
			if testenv.Race && !testenv.Long() {
				// One seed each under -race (the transpiled SQLite runs
				// about 16 times slower); every seed runs without it.
				c.seeds = 1
			}
			first := uint64(0)
			if n, err := strconv.Atoi(os.Getenv("ENGRAM_FLUSH_SEEDS")); err == nil {
				first, c.seeds = c.seeds, uint64(n)
			}
			for seed := first; seed < first+c.seeds; seed++ {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
					flushAttackRandom(t, c.engine, c.noopDups, seed, c.steps)
				})
			}
		})
	}
}

func flushAttackRandom(t *testing.T, engine string, noopDups bool, seed uint64, steps int) {
	ctx := context.Background()
	f := openFlushEngine(t, engine)
	r := rand.New(rand.NewPCG(seed, 77))
	now := baseTime
	metas := []map[string]any{{"session": "s1"}, {"session": "s2"}, {"session": 7}, {"thread": "t"}, nil, nil, nil}
	words := []string{"amber", "basil", "cedar", "delta", "ember", "flint", "garnet", "hazel", "indigo", "jasper", "kestrel", "lotus"}
	agents := []string{"a", "b"}
	type stored struct {
		id      int64
		agent   string
		content string
		meta    map[string]any
	}
	var live []stored
	var hist []string
	var stats struct{ batches, groups, runs, stream, dups, places, toggles int }
	defer func() {
		t.Logf("%s seed %d: %d batches, %d groups (%d runs with no other entry between, %d of the stream), %d duplicates, %d places by hand, %d validity toggles",
			engine, seed, stats.batches, stats.groups, stats.runs, stats.stream, stats.dups, stats.places, stats.toggles)
	}()
	word := func() string { return words[r.IntN(len(words))] }
	var followed *searchindex.Index
	queries := append(append([]string{}, words...), "note", "amber basil", "cedar note")
	maxID := func() int64 {
		var n sql.NullInt64
		if err := f.db.QueryRowContext(ctx, `SELECT max(id) FROM archival`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n.Int64
	}
	count := func() int {
		var n int
		if err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM archival`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return max(n, 1)
	}
	places := func() []int64 {
		rows, err := f.db.QueryContext(ctx, `SELECT COALESCE(conversation_pos, id) FROM archival`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var p int64
			if err := rows.Scan(&p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return out
	}
	for step := range steps {
		if step == 6 {
			followed = f.followed()
		}
		now = now.Add(time.Duration(r.IntN(90)) * time.Second)
		if r.IntN(10) == 0 {
			now = now.Add(31 * time.Minute)
		}
		agent := agents[r.IntN(len(agents))]
		ar := f.store.Agent(agent).Archival()
		var what string
		switch k := r.IntN(13); {
		case k <= 1 || len(live) < 4:
			m := metas[r.IntN(len(metas))]
			e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("%s %s note%d", word(), word(), step), Metadata: m})
			if err != nil {
				t.Fatal(err)
			}
			live = append(live, stored{e.ID, agent, e.Content, m})
			what = fmt.Sprintf("insert %s %d %v", agent, e.ID, m)
		case k <= 5:
			var batch []memory.ArchivalEntry
			var dups []int64
			for i := range 2 + r.IntN(7) {
				var e memory.ArchivalEntry
				var mine []stored
				for _, s := range live {
					if s.agent == agent {
						mine = append(mine, s)
					}
				}
				if len(mine) > 0 && r.IntN(4) == 0 {
					d := mine[r.IntN(len(mine))]
					e = memory.ArchivalEntry{Content: d.content, Metadata: d.meta}
					if !noopDups {
						e.Tags = []string{fmt.Sprintf("dup%d", step)}
					}
					dups = append(dups, d.id)
				} else {
					e = memory.ArchivalEntry{Content: fmt.Sprintf("%s %s note%db%d", word(), word(), step, i), Metadata: metas[r.IntN(len(metas))]}
				}
				switch r.IntN(6) {
				case 0:
					e.CreatedAt = now.Add(time.Duration(i) * time.Minute)
				case 1:
					e.CreatedAt = now.Add(time.Duration(i) * 999 * time.Millisecond)
				case 2:
					e.CreatedAt = now.Add(time.Duration(i) * (30*time.Minute + time.Nanosecond))
				case 3:
					e.CreatedAt = now.Add(-time.Duration(i) * 30 * time.Minute)
				}
				batch = append(batch, e)
			}
			es, err := ar.InsertBatch(ctx, batch, &memory.BatchOptions{Size: 1 + r.IntN(len(batch)+1)})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for i, e := range es {
				ids = append(ids, e.ID)
				if !e.Duplicate {
					live = append(live, stored{e.ID, agent, e.Content, batch[i].Metadata})
				}
			}
			what = fmt.Sprintf("batch %s %v dups of %v", agent, ids, dups)
			// How the flush saw the last transaction's groups (the rows as
			// they stand): runs with no other entry between, or not.
			last := ids // (all the batch's transactions together)
			keyExpr := "conversation_key"
			if engine == "postgres" {
				keyExpr = "engram_archival_conversation(metadata_json)"
			}
			type grp struct {
				key    sql.NullString
				lo, hi int64
				n      int
			}
			groups := map[string]*grp{}
			for _, id := range last {
				var g grp
				if err := f.db.QueryRowContext(ctx, `SELECT `+keyExpr+`, COALESCE(conversation_pos, id) FROM archival WHERE id = ?`, id).Scan(&g.key, &g.lo); err != nil {
					t.Fatal(err)
				}
				k := fmt.Sprint(g.key.Valid, g.key.String)
				if x, ok := groups[k]; ok {
					x.lo, x.hi, x.n = min(x.lo, g.lo), max(x.hi, g.lo), x.n+1
				} else {
					g.hi, g.n = g.lo, 1
					groups[k] = &g
				}
			}
			for _, g := range groups {
				var between int
				q := `SELECT count(*) FROM archival WHERE agent = ? AND ` + keyExpr + ` = ? AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`
				args := []any{agent, g.key.String, g.lo, g.hi}
				if !g.key.Valid {
					q = `SELECT count(*) FROM archival WHERE agent = ? AND ` + keyExpr + ` IS NULL AND COALESCE(conversation_pos, id) BETWEEN ? AND ?`
					args = []any{agent, g.lo, g.hi}
				}
				if err := f.db.QueryRowContext(ctx, q, args...).Scan(&between); err != nil {
					t.Fatal(err)
				}
				stats.groups++
				if between == g.n {
					stats.runs++
				}
				if !g.key.Valid {
					stats.stream++
				}
			}
			stats.batches++
			stats.dups += len(dups)
		case k == 6:
			i := r.IntN(len(live))
			m := metas[r.IntN(len(metas))]
			ar := f.store.Agent(live[i].agent).Archival()
			e, err := ar.Supersede(ctx, live[i].id, memory.ArchivalEntry{Content: fmt.Sprintf("%s fixed%d", word(), step), Metadata: m})
			if err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("supersede %d -> %d %v", live[i].id, e.ID, m)
			live[i] = stored{e.ID, live[i].agent, e.Content, m}
		case k == 7:
			i := r.IntN(len(live))
			if err := f.store.Agent(live[i].agent).Archival().Delete(ctx, live[i].id); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("delete %d", live[i].id)
			live = append(live[:i], live[i+1:]...)
		case k <= 9:
			// A place by hand: tied with another entry's, between two, in
			// the path of the next batch's ids, or back to none.
			var id int64
			if err := f.db.QueryRowContext(ctx, `SELECT id FROM archival ORDER BY id LIMIT 1 OFFSET ?`, r.IntN(count())).Scan(&id); err != nil {
				if err == sql.ErrNoRows {
					continue
				}
				t.Fatal(err)
			}
			var pos any
			switch r.IntN(4) {
			case 0:
				ps := places()
				pos = ps[r.IntN(len(ps))]
			case 1:
				pos = maxID() + 1 + int64(r.IntN(4))
			case 2:
				pos = int64(r.IntN(int(maxID()) + 1))
			default:
				pos = nil
			}
			if err := f.edit(`UPDATE archival SET conversation_pos = ? WHERE id = ?`, pos, id); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("place %d at %v", id, pos)
			stats.places++
		case k == 10:
			// Superseded or restored by hand (a restore may meet a live
			// duplicate: refused, nothing written).
			var id int64
			if err := f.db.QueryRowContext(ctx, `SELECT id FROM archival ORDER BY id LIMIT 1 OFFSET ?`, r.IntN(count())).Scan(&id); err != nil {
				if err == sql.ErrNoRows {
					continue
				}
				t.Fatal(err)
			}
			err := f.edit(`UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN ? END WHERE id = ?`, now.UnixNano(), id)
			what = fmt.Sprintf("toggle validity of %d (%v)", id, err)
			stats.toggles++
			for i, s := range live {
				if s.id == id && err == nil {
					live = append(live[:i], live[i+1:]...)
					break
				}
			}
		case k == 12:
			// Moved to another conversation (or the stream) by hand; a
			// move onto a live duplicate's key is refused.
			var id int64
			if err := f.db.QueryRowContext(ctx, `SELECT id FROM archival ORDER BY id LIMIT 1 OFFSET ?`, r.IntN(count())).Scan(&id); err != nil {
				if err == sql.ErrNoRows {
					continue
				}
				t.Fatal(err)
			}
			m := metas[r.IntN(len(metas))]
			mj := "{}"
			if m != nil {
				b, _ := json.Marshal(m)
				mj = string(b)
			}
			err := f.edit(`UPDATE archival SET metadata_json = ? WHERE id = ?`, mj, id)
			what = fmt.Sprintf("move %d to %s (%v)", id, mj, err)
			for i := range live {
				if live[i].id == id && err == nil {
					live[i].meta = m
				}
			}
		default:
			var id int64
			if err := f.db.QueryRowContext(ctx, `SELECT id FROM archival ORDER BY id DESC LIMIT 1 OFFSET ?`, r.IntN(4)).Scan(&id); err != nil {
				if err == sql.ErrNoRows {
					continue
				}
				t.Fatal(err)
			}
			at := now.Add(-time.Duration(r.IntN(3)) * 30 * time.Minute).UnixNano()
			if err := f.edit(`UPDATE archival SET created_at = ? WHERE id = ?`, at, id); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("created_at of %d", id)
		}
		hist = append(hist, what)
		if d := f.check(); d != "" {
			t.Fatalf("step %d %s: %s\nlog %v", step, what, d, hist)
		}
		if followed != nil && (step%3 == 0 || step == steps-1) {
			fresh := f.fresh()
			for _, a := range agents {
				cacheLikeFresh(t, fmt.Sprintf("step %d %s", step, what), followed, fresh, a, queries)
			}
			fresh.Close()
			if t.Failed() {
				t.Fatalf("log %v", hist)
			}
		}
	}
}

// A log block whose entries name sessions (a field "session") rotates
// several entries at once into archival (a large append pushing them
// out): a deferred batch across two conversations and the stream, with
// an entry placed by hand in the path of the rotated entries' ids, and
// one placed after them. The stored index is the definition and a cache
// following the log ranks as one loaded now.
func TestArchivalFlushLogRotation(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			f := openFlushEngine(t, engine)
			ag := f.store.Agent("a")
			if _, err := ag.CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 600,
				Schema: schema.Log{Retention: 100, Entry: []schema.FieldDef{{Name: "session", Type: schema.FieldString}}}}); err != nil {
				t.Fatal(err)
			}
			ar := ag.Archival()
			var placed []int64
			for i, m := range []map[string]any{{"session": "s1"}, {"session": "s2"}, nil, {"session": "s1"}} {
				e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("stored%d cedar", i), Metadata: m})
				if err != nil {
					t.Fatal(err)
				}
				placed = append(placed, e.ID)
			}
			d, err := ag.Block("events").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sessions := []string{"s1", "s2", "", "s1", "s2", "", "s1"}
			round := 0
			appendN := func(n int) {
				t.Helper()
				for i := range n {
					e := map[string]any{"message": fmt.Sprintf("r%d amber basil %d", round, i)}
					if s := sessions[i%len(sessions)]; s != "" {
						e["session"] = s
					}
					if err := d.AppendLogEntry(e, blocks.Agent); err != nil {
						t.Fatal(err)
					}
				}
			}
			appendN(14)
			followed := f.followed()
			queries := []string{"amber", "basil", "cedar", "stored0", "stored3", "r0", "r1", "r2", "flood", "amber cedar"}
			for round = 1; round <= 3; round++ {
				var max int64
				if err := f.db.QueryRowContext(ctx, `SELECT max(id) FROM archival`).Scan(&max); err != nil {
					t.Fatal(err)
				}
				switch round {
				case 1: // in the path of the rotated entries' ids
					if err := f.edit(`UPDATE archival SET conversation_pos = ? WHERE id = ?`, max+2, placed[0]); err != nil {
						t.Fatal(err)
					}
				case 2: // past them
					if err := f.edit(`UPDATE archival SET conversation_pos = ? WHERE id = ?`, max+1000, placed[3]); err != nil {
						t.Fatal(err)
					}
				case 3: // tied with the first
					if err := f.edit(`UPDATE archival SET conversation_pos = ? WHERE id = ?`, max+1, placed[2]); err != nil {
						t.Fatal(err)
					}
				}
				var before, after int
				if err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM archival`).Scan(&before); err != nil {
					t.Fatal(err)
				}
				big := fmt.Sprintf("r%d flood %s", round, strings.Repeat("x", 420))
				if err := d.AppendLogEntry(map[string]any{"message": big, "session": "s1"}, blocks.Agent); err != nil {
					t.Fatal(err)
				}
				if err := f.db.QueryRowContext(ctx, `SELECT count(*) FROM archival`).Scan(&after); err != nil {
					t.Fatal(err)
				}
				if after-before < 2 {
					t.Fatalf("round %d: the append rotated %d entries, want several", round, after-before)
				}
				if dd := f.check(); dd != "" {
					t.Fatalf("round %d: %s", round, dd)
				}
				cacheLikeFresh(t, fmt.Sprintf("round %d", round), followed, f.fresh(), "a", queries)
				appendN(10)
				if dd := f.check(); dd != "" {
					t.Fatalf("round %d appends: %s", round, dd)
				}
			}
		})
	}
}

// The cost of a batch's deferred index by the batch's shape (run with
// ENGRAM_FLUSH_COST=1): a batch appended to its conversation (each
// conversation's run of entries contiguous: its edges looked up), the
// same with one duplicate of the conversation's first or last entry
// (merged into it, not inserted: the run stays contiguous), each entry in
// a conversation of its own, and the stream.
func TestArchivalFlushCost(t *testing.T) {
	if os.Getenv("ENGRAM_FLUSH_COST") == "" {
		t.Skip("ENGRAM_FLUSH_COST not set")
	}
	n, _ := strconv.Atoi(os.Getenv("ENGRAM_FLUSH_COST_N"))
	if n == 0 {
		n = 5000
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, shape := range []string{"append", "dup of first", "dup of last", "tagged dup of first", "one conversation each", "stream"} {
			t.Run(engine+"/"+shape, func(t *testing.T) {
				ctx := context.Background()
				f := openFlushEngine(t, engine)
				ar := f.store.Agent("a").Archival()
				meta := map[string]any{"session": "s1"}
				var seed []memory.ArchivalEntry
				for i := range n {
					seed = append(seed, memory.ArchivalEntry{Content: fmt.Sprintf("seed entry %d about things", i), Metadata: meta})
				}
				if _, err := ar.InsertBatch(ctx, seed, &memory.BatchOptions{Size: 5000}); err != nil {
					t.Fatal(err)
				}
				var total time.Duration
				const reps, size = 5, 1000
				for rep := range reps {
					var batch []memory.ArchivalEntry
					switch shape {
					case "dup of first":
						batch = append(batch, memory.ArchivalEntry{Content: "seed entry 0 about things", Metadata: meta})
					case "tagged dup of first":
						batch = append(batch, memory.ArchivalEntry{Content: "seed entry 0 about things", Metadata: meta, Tags: []string{fmt.Sprint("t", rep)}})
					case "dup of last":
						var last string
						if err := f.db.QueryRowContext(ctx, `SELECT content FROM archival ORDER BY id DESC LIMIT 1`).Scan(&last); err != nil {
							t.Fatal(err)
						}
						batch = append(batch, memory.ArchivalEntry{Content: last, Metadata: meta})
					}
					for i := len(batch); i < size; i++ {
						m := meta
						switch shape {
						case "one conversation each":
							m = map[string]any{"session": fmt.Sprintf("c%d-%d", rep, i)}
						case "stream":
							m = nil
						}
						batch = append(batch, memory.ArchivalEntry{Content: fmt.Sprintf("rep %d entry %d about other things", rep, i), Metadata: m})
					}
					start := time.Now()
					if _, err := ar.InsertBatch(ctx, batch, &memory.BatchOptions{Size: size}); err != nil {
						t.Fatal(err)
					}
					total += time.Since(start)
				}
				if d := f.check(); d != "" {
					t.Fatal(d)
				}
				t.Logf("%s %s: conversation of %d, batches of %d: %v a batch", engine, shape, n, size, total/reps)
			})
		}
	}
}

// Batches into conversations an import brought in: the dump's entries
// (a superseded one among them, one placed by hand past the others, and
// the stream) are inserted one at a time and placed, and their keys
// backfilled; a batch appended to the imported conversation and the
// stream, then one starting with a duplicate of the conversation's last
// imported entry (merged into it, nothing to add), are indexed as the
// engine's definition says and followed by a text cache.
func TestArchivalFlushAfterImport(t *testing.T) {
	ctx := context.Background()
	srcPath := filepath.Join(t.TempDir(), "src.db")
	src, err := memory.Open(ctx, srcPath, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sar := src.Agent("a").Archival()
	meta := map[string]any{"session": "s1"}
	var ids []int64
	for i, w := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
		m := meta
		if i == 4 {
			m = nil
		}
		e, err := sar.Insert(ctx, memory.ArchivalEntry{Content: w + " entry", Metadata: m, CreatedAt: baseTime.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if _, err := sar.Supersede(ctx, ids[1], memory.ArchivalEntry{Content: "bravo fixed", Metadata: meta}); err != nil {
		t.Fatal(err)
	}
	srcDB := openDBAt(t, srcPath)
	// alpha goes past every entry (a place beyond the dump's last entry).
	if _, err := srcDB.ExecContext(ctx, `UPDATE archival SET conversation_pos = 1000 WHERE id = ?`, ids[0]); err != nil {
		t.Fatal(err)
	}
	dump, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dump.ArchivalPlaces) == 0 {
		t.Fatal("the dump places no entry")
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, dup := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/dup=%v", engine, dup), func(t *testing.T) {
				f := openFlushEngine(t, engine)
				if _, err := f.store.Import(ctx, dump); err != nil {
					t.Fatal(err)
				}
				if d := f.check(); d != "" {
					t.Fatalf("after the import: %s", d)
				}
				followed := f.followed()
				ar := f.store.Agent("a").Archival()
				var batch []memory.ArchivalEntry
				if dup {
					// The last imported entry before the batch's place: bravo
					// fixed (alpha is placed past the others).
					batch = append(batch, memory.ArchivalEntry{Content: "bravo fixed", Metadata: meta})
				}
				batch = append(batch,
					memory.ArchivalEntry{Content: "kilo novel", Metadata: meta},
					memory.ArchivalEntry{Content: "lima novel", CreatedAt: baseTime.Add(5 * time.Minute)},
					memory.ArchivalEntry{Content: "mike novel", Metadata: meta})
				es, err := ar.InsertBatch(ctx, batch, nil)
				if err != nil {
					t.Fatal(err)
				}
				if dup && !es[0].Duplicate {
					t.Fatalf("bravo fixed was not merged: %+v", es[0])
				}
				if d := f.check(); d != "" {
					t.Fatalf("after the batch: %s", d)
				}
				cacheLikeFresh(t, "the batch", followed, f.fresh(), "a",
					[]string{"alpha", "bravo", "charlie", "delta", "echo", "kilo", "lima", "mike", "novel", "fixed"})
			})
		}
	}
}
