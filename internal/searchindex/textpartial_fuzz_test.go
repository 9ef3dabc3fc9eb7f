package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialRandomWrites holds a partial cache to the SQL path
// over a random history of writes (inserts, edits, deletes, supersession,
// tags, metadata, columns the index does not hold, ids, shares and
// unshares, block owner changes and deletes) by the index's own pool,
// another pool and seen by a second index on the file, with a bound so
// small partitions are evicted and loaded again. With many agents most
// writes are to rows no partition holds, whose log entries say whether
// the statistics may stay (search_text_log.changed).
func TestTextCachePartialRandomWrites(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "random writes compared with SQL search by search")
	few := []string{"a", "b", "c", "d", `x' OR 1=1 --`, "日本", "e%"}
	// 40 agents and 150 rounds with the long tests; 20 and 40 otherwise.
	var many []string
	for i := range testenv.Scale(20, 40) {
		many = append(many, fmt.Sprint("agent-", i))
	}
	for _, tc := range []struct {
		name   string
		agents []string
	}{{"few agents", few}, {"many agents", many}} {
		t.Run(tc.name, func(t *testing.T) { randomWrites(t, tc.agents) })
	}
}

func randomWrites(t *testing.T, agents []string) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	seed := uint64(7)
	if v := os.Getenv("FUZZSEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	r := rand.New(rand.NewPCG(seed, 35))
	vocab := make([]string, 30)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	text := func() string {
		w := make([]string, 1+r.IntN(12))
		for i := range w {
			w[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)))]
		}
		return strings.Join(w, " ")
	}
	emb := search.NewOffline(0)
	inTx(t, db, func(tx execer) {
		for _, a := range agents {
			for range 15 {
				insertArchival(t, tx, archivalRow{Agent: a, Content: text()})
				insertMessage(t, tx, a, "user", text(), baseTime)
			}
			insertBlock(t, tx, a, "blk", text())
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	var cached []*searchindex.Index
	for _, limit := range []int64{1, 6 << 10, 1 << 20} {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		searchindex.ForceTextPartial(x)
		_ = x.WarmTextCache(ctx)
		cached = append(cached, x)
	}
	pick := func() string { return agents[r.IntN(len(agents))] }
	writers := []execer{db, other}
	labels := 0 // block labels are unique per owner
	ops := []func(w execer) string{
		func(w execer) string { insertArchival(t, w, archivalRow{Agent: pick(), Content: text()}); return "" },
		func(w execer) string { insertMessage(t, w, pick(), "user", text(), baseTime); return "" },
		func(w execer) string {
			return fmt.Sprintf(`UPDATE archival SET content = '%s' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, text())
		},
		func(w execer) string {
			return `DELETE FROM archival WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`
		},
		func(w execer) string { return `DELETE FROM archival WHERE id = (SELECT max(id) FROM archival)` },
		func(w execer) string {
			return `UPDATE archival SET valid_to = created_at WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE archival SET tags_json = '["%[1]s"]', tags_text = '%[1]s' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, vocab[r.IntN(5)])
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE messages SET content = '%s' WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`, text())
		},
		func(w execer) string { return `DELETE FROM messages WHERE id = (SELECT max(id) FROM messages)` },
		func(w execer) string {
			return `DELETE FROM messages WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE archival SET agent = '%s' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, strings.ReplaceAll(pick(), "'", "''"))
		},
		func(w execer) string {
			labels++
			insertBlock(t, w, pick(), fmt.Sprint("blk", labels), text())
			return ""
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE blocks SET rendered = '%s' WHERE id = (SELECT id FROM blocks ORDER BY random() LIMIT 1)`, text())
		},
		func(w execer) string {
			return `DELETE FROM blocks WHERE id = (SELECT id FROM blocks ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`INSERT OR IGNORE INTO shares (block_id, agent, permission, created_at) SELECT id, '%s', 'ReadOnly', 0 FROM blocks ORDER BY random() LIMIT 1`, strings.ReplaceAll(pick(), "'", "''"))
		},
		func(w execer) string {
			return `DELETE FROM shares WHERE (block_id, agent) = (SELECT block_id, agent FROM shares ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE OR IGNORE blocks SET owner = '%s' WHERE id = (SELECT id FROM blocks ORDER BY random() LIMIT 1)`, strings.ReplaceAll(pick(), "'", "''"))
		},
		func(w execer) string { // a supersession as memory writes it
			old := `(SELECT id FROM archival WHERE valid_to IS NULL ORDER BY random() LIMIT 1)`
			var agent string
			var id int64
			if err := w.(queryRower).QueryRowContext(ctx, `SELECT agent, id FROM archival WHERE id = `+old).Scan(&agent, &id); err != nil {
				return ""
			}
			if _, err := w.ExecContext(ctx, `UPDATE archival SET valid_to = created_at WHERE id = ?`, id); err != nil {
				t.Fatal(err)
			}
			n := insertArchival(t, w, archivalRow{Agent: agent, Content: text()})
			return fmt.Sprintf(`UPDATE archival SET superseded_by = %d WHERE id = %d`, n, id)
		},
		func(w execer) string {
			return `UPDATE messages SET role = 'assistant', name = 'n' WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return `UPDATE OR IGNORE messages SET seq = seq + 1 WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE archival SET metadata_json = '{"k": "%s"}' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, vocab[r.IntN(5)])
		},
		func(w execer) string {
			return `UPDATE archival SET tags_json = tags_json, valid_from = valid_from + 1 WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return `UPDATE archival SET id = (SELECT max(id) + 1 FROM archival) WHERE id = (SELECT id FROM archival
				WHERE id NOT IN (SELECT superseded_by FROM archival WHERE superseded_by IS NOT NULL) ORDER BY random() LIMIT 1)`
		},
		// Archival entries naming a conversation or session (migration
		// 0023: indexed with their neighbours), hand edits of columns the
		// index does and does not hold, and messages put into the middle
		// of batches or moved between them (seq gaps, neighbours filled
		// and emptied).
		func(w execer) string {
			key := []string{"conversation", "session"}[r.IntN(2)]
			insertArchival(t, w, archivalRow{Agent: pick(), Content: text(), Metadata: fmt.Sprintf(`{"%s": "c%d"}`, key, r.IntN(3))})
			return ""
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE archival SET metadata_json = '{"conversation": "c%d"}' WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, r.IntN(3))
		},
		func(w execer) string {
			return `UPDATE archival SET content = content WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return `UPDATE archival SET created_at = created_at + 1 WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`
		},
		func(w execer) string {
			return fmt.Sprintf(`INSERT OR IGNORE INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES ('%s', 'user', '%s', 'b%d', %d, 0)`, strings.ReplaceAll(pick(), "'", "''"), text(), 1+r.IntN(2), r.IntN(40))
		},
		func(w execer) string {
			return fmt.Sprintf(`UPDATE OR IGNORE messages SET batch_id = 'b%d', seq = %d WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`, 1+r.IntN(2), r.IntN(40))
		},
		func(w execer) string {
			return `UPDATE messages SET content = content, created_at = created_at + 1 WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`
		},
	}
	shapes := []func() *search.Options{
		func() *search.Options { return search.NewOptions().ContentTypes(search.Archival).Limit(10) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Messages).Limit(10) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Blocks).Limit(10) },
		func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).IncludeSuperseded(true).Limit(10)
		},
		func() *search.Options { return search.NewOptions().Limit(15) },
		func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).Since(baseTime.Add(-time.Hour)).Limit(10)
		},
	}
	compared := 0
	for round := range testenv.Scale(40, 150) {
		for range 1 + r.IntN(4) {
			w := writers[r.IntN(len(writers))]
			if q := ops[r.IntN(len(ops))](w); q != "" {
				if _, err := w.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
		for range 3 {
			agent := pick()
			q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
			sh0 := shapes[r.IntN(len(shapes))]
			mode := []search.Mode{search.FTS, search.Hybrid}[r.IntN(2)]
			sh := func() *search.Options { return sh0().Mode(mode) }
			want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, sh())
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range cached {
				got, err := x.Search(ctx, q, search.Scope{Agent: agent}, sh())
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got) {
					t.Fatalf("round %d index %d agent %q %q: SQL %d results, cache %d\nSQL   %v\ncache %v", round, i, agent, q, len(want), len(got), keys(want), keys(got))
				}
				if err := sameRanking(want, got); err != nil {
					t.Fatalf("round %d index %d agent %q %q: %v\nSQL   %v\ncache %v", round, i, agent, q, err, keys(want), keys(got))
				}
				compared += len(want)
				if d := searchindex.TextHeldDrift(x); d != 0 {
					t.Fatalf("round %d index %d: the partitions' bytes counted %d off their sum", round, i, d)
				}
			}
		}
	}
	for i, x := range cached {
		if partial, _, bytes := searchindex.TextCachePartial(x); !partial {
			t.Fatalf("index %d is not partial", i)
		} else {
			t.Logf("index %d holds %d bytes", i, bytes)
		}
	}
	t.Logf("%d results compared, answers %d %d, stats reads %d %d", compared, searchindex.TextCacheAnswers(cached[1]), searchindex.TextCacheAnswers(cached[2]), searchindex.TextStatsReads(cached[1]), searchindex.TextStatsReads(cached[2]))
}

// queryRower is what the random history's supersession reads with.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// TestTextCachePartialChurnBounded: searches by many agents that hold no
// rows (thousands of agents each searching once, or any agent name a
// client sends) must not grow a partial cache past its bound: each leaves
// a partition behind, and what it holds must be charged and evicted.
func TestTextCachePartialChurnBounded(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "many partitions loaded and evicted in turn")
	for _, limit := range []int64{32 << 10, 64} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) { churnBounded(t, limit) })
	}
}

func churnBounded(t *testing.T, limit int64) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) {
		for a := range 4 {
			for range 20 {
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: "wing flutter at mach two"})
			}
		}
	})
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	// 5000 strangers with the long tests, 500 otherwise: either is many
	// times the partitions the bound holds (limit/512+4 at most).
	churn := testenv.Scale(500, 5000)
	for i := range churn {
		if _, err := x.Search(ctx, "wing", search.Scope{Agent: fmt.Sprint("stranger-", i)}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	_, parts, bytes := searchindex.TextCachePartial(x)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d partitions, %d bytes charged, heap grew %d bytes", parts, bytes, grown)
	// The partition count is the deterministic check (each partition is
	// charged at least 512 bytes); the heap's growth, which the GC and the
	// connection pool make noisy, only catches what nothing charges.
	if bytes > limit || int64(parts) > limit/512+4 || grown > max(8*limit, 1<<20) {
		t.Fatalf("after %d agents searched once: %d partitions, %d bytes charged, heap grew %d bytes; bound %d", churn, parts, bytes, grown, limit)
	}
}

// TestTextCachePartialBigOwnerNotReread: an owner whose rows are longer
// than the sample's (so the row-count estimate lets its load start) is
// read, found over the bound and refused; writes by other agents must not
// make each of its next searches read and analyze all its rows again only
// to refuse them again.
func TestTextCachePartialBigOwnerNotReread(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "a large owner searched repeatedly")
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range 30 {
		for range 20 {
			insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: "wing flutter"})
		}
	}
	long := strings.Repeat("wing flutter at mach two over the boundary layer ", 40)
	for i := range 60 {
		insertArchival(t, tx, archivalRow{Agent: "big", Content: fmt.Sprint(long, " row", i)})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 40 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival) }
	if _, err := x.Search(ctx, "wing", search.Scope{Agent: "big"}, opts()); err != nil {
		t.Fatal(err)
	}
	if searchindex.TextCacheHeld(x, search.Archival, "big") {
		t.Skip("the big owner fits the bound: the test needs it over")
	}
	start := searchindex.TextRowsAnalyzed(x)
	searches := testenv.Scale(8, 20)
	for i := range searches {
		insertArchival(t, db, archivalRow{Agent: "agent-1", Content: fmt.Sprint("more wing ", i)})
		if _, err := x.Search(ctx, "wing", search.Scope{Agent: "big"}, opts()); err != nil {
			t.Fatal(err)
		}
	}
	if n := searchindex.TextRowsAnalyzed(x) - start; n > 60 {
		t.Fatalf("%d searches of an owner over the bound, each after another agent's write, analyzed %d rows: its rows are read again each time", searches, n)
	}
}

// TestTextCachePartialConcurrent: many agents' searches at once, some
// cancelled mid-way (during a partition load), while another pool writes
// and the bound evicts; then, quiet, every agent's answer is the SQL
// path's.
func TestTextCachePartialConcurrent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow"}
	const agents = 12
	inTx(t, db, func(tx execer) {
		for a := range agents {
			for i := range 30 {
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: words[(a+i)%6] + " " + words[i%5]})
				insertMessage(t, tx, fmt.Sprint("agent-", a), "user", words[(a*i)%6]+" "+words[i%4], baseTime)
			}
			insertBlock(t, tx, fmt.Sprint("agent-", a), "blk", words[a%6])
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 24 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	done := make(chan struct{})
	errs := make(chan error, 16)
	go func() {
		defer close(done)
		for i := range testenv.Scale(50, 150) {
			a := fmt.Sprint("agent-", i%agents)
			var err error
			switch i % 3 {
			case 0:
				_, err = other.ExecContext(ctx, `INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from) VALUES (?, ?, '{}', '[]', '', 0, 0)`, a, words[i%6]+" new")
			case 1:
				_, err = other.ExecContext(ctx, `UPDATE archival SET content = content || ' wing' WHERE id = (SELECT id FROM archival WHERE agent = ? ORDER BY random() LIMIT 1)`, a)
			case 2:
				_, err = other.ExecContext(ctx, `DELETE FROM messages WHERE id = (SELECT id FROM messages WHERE agent = ? ORDER BY random() LIMIT 1)`, a)
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for {
				select {
				case <-done:
					return
				default:
				}
				sctx, cancel := context.WithCancel(ctx)
				if r.IntN(3) == 0 {
					time.AfterFunc(time.Duration(r.IntN(300))*time.Microsecond, cancel)
				}
				_, err := x.Search(sctx, words[r.IntN(6)], search.Scope{Agent: fmt.Sprint("agent-", r.IntN(agents))}, search.NewOptions().Mode(search.FTS).Limit(10))
				cancel()
				if err != nil && sctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for a := range agents {
		for _, w := range words {
			scope := search.Scope{Agent: fmt.Sprint("agent-", a)}
			want, err := sqlx.Search(ctx, w, scope, search.NewOptions().Mode(search.FTS).Limit(10))
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Search(ctx, w, scope, search.NewOptions().Mode(search.FTS).Limit(10))
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != len(got) {
				t.Fatalf("agent-%d %q: SQL %d results, cache %d", a, w, len(want), len(got))
			}
			if err := sameRanking(want, got); err != nil {
				t.Fatalf("agent-%d %q: %v\nSQL   %v\ncache %v", a, w, err, keys(want), keys(got))
			}
		}
	}
	if _, _, bytes := searchindex.TextCachePartial(x); bytes > 24<<10 {
		t.Fatalf("the cache holds %d bytes, bound %d", bytes, 24<<10)
	}
}

// TestTextCachePartialSharedScopeThrash: an agent with blocks shared by
// many owners, whose partitions together exceed the bound: each block
// search must not load every sharer's partition again (each evicting the
// one before) only to rank in SQL.
func TestTextCachePartialSharedScopeThrash(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	const owners = 40
	for o := range owners {
		for b := range 10 {
			id := insertBlock(t, db, fmt.Sprint("owner-", o), fmt.Sprint("blk-", b), "wing flutter at mach two over the boundary layer")
			if b == 0 {
				shareBlock(t, db, id, "reader")
			}
		}
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 16 << 10, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks) }
	if _, err := x.Search(ctx, "wing", search.Scope{Agent: "reader"}, opts()); err != nil {
		t.Fatal(err)
	}
	start := searchindex.TextRowsAnalyzed(x)
	const searches = 10
	for range searches {
		rs, err := x.Search(ctx, "wing", search.Scope{Agent: "reader"}, opts())
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 10 {
			t.Fatalf("%d results, want 10 (the limit)", len(rs))
		}
	}
	if n := searchindex.TextRowsAnalyzed(x) - start; n > owners*10 {
		t.Fatalf("%d block searches by an agent sharing with %d owners analyzed %d rows: every search loads every sharer's blocks again", searches, owners, n)
	}
}
