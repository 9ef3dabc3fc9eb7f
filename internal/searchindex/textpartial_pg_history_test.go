package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// pgHistory is a PostgreSQL store written at random through memory and
// by hand (raw SQL in the writer's lock), with a whole text cache and a
// forced-partial one over it.
type pgHistory struct {
	t       *testing.T
	store   *memory.Store
	b       *pgbackend.Backend
	r       *rand.Rand
	mu      sync.Mutex // r, labels
	agents  []string
	labels  map[string][]string
	vocab   []string
	idMoves int64
	// lenient: a write that fails (the concurrent writer's may wait
	// out the lock's timeout beside the searches' block indexing) is
	// logged, not a failure: the statistics are what is checked.
	lenient bool
}

func (h *pgHistory) fail(err error) {
	if h.lenient {
		h.t.Log(err)
		return
	}
	h.t.Error(err)
}

func newPGHistory(t *testing.T, seed uint64) *pgHistory {
	store, b := openPGStore(t)
	h := &pgHistory{t: t, store: store, b: b, r: rand.New(rand.NewPCG(seed, 36)), labels: map[string][]string{}}
	for i := range 40 {
		h.vocab = append(h.vocab, fmt.Sprintf("w%d", i))
	}
	h.vocab = append(h.vocab, "naïve", "Straße", "日本語", strings.Repeat("long", 300), "x1y2z3")
	for i := range 6 {
		h.agents = append(h.agents, fmt.Sprint("agent-", i))
	}
	for _, a := range h.agents {
		for range 8 {
			h.op(0)
		}
		for range 2 {
			h.op(3)
		}
		h.newBlock(a)
	}
	return h
}

func (h *pgHistory) text() string {
	w := make([]string, 1+h.r.IntN(10))
	for i := range w {
		w[i] = h.vocab[min(h.r.IntN(len(h.vocab)), h.r.IntN(len(h.vocab)))]
	}
	return strings.Join(w, " ")
}

func (h *pgHistory) pick() string { return h.agents[h.r.IntN(len(h.agents))] }

func (h *pgHistory) newBlock(agent string) {
	label := fmt.Sprint("blk", len(h.labels[agent]), "-", h.r.IntN(1000))
	if _, err := h.store.Agent(agent).CreateBlock(context.Background(), memory.BlockSpec{Label: label, Value: h.text(), Permission: blocks.Admin}); err != nil {
		h.fail(err)
		return
	}
	h.labels[agent] = append(h.labels[agent], label)
}

func (h *pgHistory) raw(q string, args ...any) {
	ctx := context.Background()
	if err := h.b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
		if !strings.Contains(err.Error(), "duplicate key") && !strings.Contains(err.Error(), "foreign key") {
			h.fail(fmt.Errorf("%s: %w", q, err))
		}
	}
}

func (h *pgHistory) randomID(table, agent string) (int64, bool) {
	var id int64
	err := h.b.DB().QueryRowContext(context.Background(), `SELECT id FROM `+table+` WHERE agent = ? ORDER BY random() LIMIT 1`, agent).Scan(&id)
	return id, err == nil
}

const pgHistoryOps = 22

// op runs write number i (mod pgHistoryOps).
func (h *pgHistory) op(i int) {
	ctx := context.Background()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.r
	switch i % pgHistoryOps {
	case 0, 1: // an insert, sometimes into a conversation or session
		e := memory.ArchivalEntry{Content: h.text()}
		switch r.IntN(4) {
		case 0:
			e.Metadata = map[string]any{"conversation": fmt.Sprint("c", r.IntN(2))}
		case 1:
			e.Metadata = map[string]any{"session": fmt.Sprint("s", r.IntN(2)), "topic": h.text()}
		}
		if r.IntN(3) == 0 {
			e.Tags = []string{h.vocab[r.IntN(len(h.vocab))]}
		}
		if _, err := h.store.Agent(h.pick()).Archival().Insert(ctx, e); err != nil {
			h.fail(err)
		}
	case 2:
		a := h.pick()
		var id int64
		if err := h.b.DB().QueryRowContext(ctx, `SELECT id FROM archival WHERE agent = ? AND valid_to IS NULL ORDER BY random() LIMIT 1`, a).Scan(&id); err != nil {
			return
		}
		if _, err := h.store.Agent(a).Archival().Supersede(ctx, id, memory.ArchivalEntry{Content: h.text()}); err != nil {
			h.fail(err)
		}
	case 3, 4: // appended to an open batch: a neighbour's context fills
		var msgs []memory.Message
		batch := fmt.Sprint("b", r.IntN(2))
		for range 1 + r.IntN(3) {
			msgs = append(msgs, memory.Message{Role: memory.RoleUser, Content: h.text(), BatchID: batch})
		}
		if _, err := h.store.Agent(h.pick()).Messages().AppendMany(ctx, msgs); err != nil {
			h.fail(err)
		}
	case 5:
		a := h.pick()
		if id, ok := h.randomID("archival", a); ok {
			if err := h.store.Agent(a).Archival().Delete(ctx, id); err != nil && !errors.Is(err, memory.ErrNotFound) {
				h.fail(err)
			}
		}
	case 6:
		if id, ok := h.randomID("archival", h.pick()); ok {
			h.raw(`UPDATE archival SET content = ? WHERE id = ?`, h.text(), id)
		}
	case 7: // into or out of a conversation
		if id, ok := h.randomID("archival", h.pick()); ok {
			h.raw(`UPDATE archival SET metadata_json = ? WHERE id = ?`, fmt.Sprintf(`{"conversation":"c%d"}`, r.IntN(3)), id)
		}
	case 8: // another owner
		if id, ok := h.randomID("archival", h.pick()); ok {
			h.raw(`UPDATE archival SET agent = ? WHERE id = ?`, h.pick(), id)
		}
	case 9: // a new id, above every other
		if id, ok := h.randomID("archival", h.pick()); ok {
			h.idMoves++
			h.raw(`UPDATE archival SET id = ? WHERE id = ?`, int64(1)<<40+h.idMoves, id)
		}
	case 10:
		if id, ok := h.randomID("archival", h.pick()); ok {
			h.raw(`UPDATE archival SET tags_text = ? WHERE id = ?`, h.text(), id)
		}
	case 11:
		if id, ok := h.randomID("messages", h.pick()); ok {
			h.raw(`UPDATE messages SET content = ? WHERE id = ?`, h.text(), id)
		}
	case 12: // a message moved to another batch
		if id, ok := h.randomID("messages", h.pick()); ok {
			h.raw(`UPDATE messages SET batch_id = ?, seq = ? WHERE id = ?`, fmt.Sprint("b", r.IntN(3)), 100+r.IntN(5), id)
		}
	case 13:
		if id, ok := h.randomID("messages", h.pick()); ok {
			h.raw(`DELETE FROM messages WHERE id = ?`, id)
		}
	case 14:
		if id, ok := h.randomID("messages", h.pick()); ok {
			h.raw(`UPDATE messages SET agent = ? WHERE id = ?`, h.pick(), id)
		}
	case 15: // rolled back: a gap in the log's sequence
		_ = h.b.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES (?, ?, 1, 1)`, h.pick(), h.text()); err != nil {
				return err
			}
			return errors.New("rolled back")
		})
	case 16:
		h.newBlock(h.pick())
	case 17:
		a := h.pick()
		if ls := h.labels[a]; len(ls) > 0 {
			if err := h.store.Agent(a).Block(ls[r.IntN(len(ls))]).SetText(ctx, h.text()); err != nil {
				h.fail(err)
			}
		}
	case 18:
		a, with := h.pick(), h.pick()
		if ls := h.labels[a]; len(ls) > 0 && a != with {
			_ = h.store.Agent(a).Block(ls[r.IntN(len(ls))]).Share(ctx, with, blocks.ReadOnly)
		}
	case 19:
		a, with := h.pick(), h.pick()
		if ls := h.labels[a]; len(ls) > 0 && a != with {
			_ = h.store.Agent(a).Block(ls[r.IntN(len(ls))]).Unshare(ctx, with)
		}
	case 20:
		a := h.pick()
		if ls := h.labels[a]; len(ls) > 1 {
			i := r.IntN(len(ls))
			if err := h.store.Agent(a).Block(ls[i]).Delete(ctx); err != nil {
				h.fail(err)
			}
			h.labels[a] = append(ls[:i:i], ls[i+1:]...)
		}
	case 21: // batch of inserts in one statement
		var q strings.Builder
		var args []any
		q.WriteString(`INSERT INTO archival (agent, content, created_at, valid_from) VALUES `)
		for j := range 1 + r.IntN(4) {
			if j > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, 1, 1)")
			args = append(args, h.pick(), h.text())
		}
		h.raw(q.String(), args...)
	}
}

func (h *pgHistory) index(limit int64, partial bool) *searchindex.Index {
	x, err := searchindex.NewIndex(context.Background(), h.b.DB(), h.b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: h.b.Write, TextCacheBytes: limit, VectorCacheBytes: -1})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { x.Close() })
	if partial {
		searchindex.ForceTextPartial(x)
		searchindex.SetTextBackoff(x, 5*time.Millisecond)
		searchindex.SetTextStatsRest(x, false) // ranking under writes, not what passes cost
	}
	return x
}

func historySeed() uint64 {
	if v := os.Getenv("FUZZSEED"); v != "" {
		s, _ := strconv.ParseUint(v, 10, 64)
		return s
	}
	return 7
}

// TestTextCachePartialPostgresStatsHistory holds a partial PostgreSQL
// cache's own statistics (moved along by catch-ups, dropped and counted
// again) to a whole cache's and to a fresh count of the store, term by
// term, after every round of a long random history of writes through
// memory and by hand: conversation and session neighbours, supersessions,
// owner and id changes, message batch moves, rolled-back writes (gaps in
// the log's sequence), blocks; and its searches to the whole cache's, bit
// for bit. Concurrent: a writer runs while the partial cache searches
// (its catch-ups and passes race the writes), stopped before the checks.
func TestTextCachePartialPostgresStatsHistory(t *testing.T) {
	for _, tc := range []struct {
		name       string
		concurrent bool
	}{{"sequential", false}, {"concurrent", true}} {
		t.Run(tc.name, func(t *testing.T) { testStatsHistory(t, tc.concurrent) })
	}
}

func testStatsHistory(t *testing.T, concurrent bool) {
	ctx := context.Background()
	h := newPGHistory(t, historySeed())
	whole := h.index(1<<30, false)
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	x := h.index(256<<10, true)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	kinds := []search.ContentType{search.Archival, search.Messages, search.Blocks}
	checked := map[search.ContentType]int{}
	compared, fell := 0, 0
	// 150 rounds in the long run; 40 by default still take every kind of
	// write through drops, passes and catch-ups several times.
	rounds := testenv.Scale(40, 150)
	for round := range rounds {
		if concurrent {
			h.lenient = true
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					h.mu.Lock()
					i := h.r.IntN(pgHistoryOps)
					h.mu.Unlock()
					h.op(i)
				}
			}()
			for range 5 {
				if _, err := x.Search(ctx, "w1 w2", search.Scope{Agent: h.agents[round%len(h.agents)]}, search.NewOptions().Mode(search.FTS)); err != nil {
					t.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			h.lenient = false
		} else {
			for range 1 + h.r.IntN(3) {
				h.op(h.r.IntN(pgHistoryOps))
			}
		}
		if round%10 == 9 {
			_ = x.WarmTextCache(ctx)
		}
		// Both caught up (blocks indexed first).
		for _, y := range []*searchindex.Index{whole, x} {
			if _, err := y.Search(ctx, "w1", search.Scope{Agent: h.agents[0]}, search.NewOptions().Mode(search.FTS)); err != nil {
				t.Fatal(err)
			}
		}
		for _, k := range kinds {
			ready, err := searchindex.TextStatsDiff(ctx, x, whole, k)
			if err != nil {
				t.Fatalf("round %d %v: %v", round, k, err)
			}
			if ready {
				checked[k]++
			}
		}
		for range 3 {
			agent := h.pick()
			q := h.vocab[h.r.IntN(len(h.vocab))] + " " + h.vocab[h.r.IntN(len(h.vocab))]
			o := search.NewOptions().Mode(search.FTS).Limit(10)
			switch h.r.IntN(5) {
			case 0:
				o = o.ContentTypes(search.Blocks) // the agent's and those shared with it
			case 1:
				o = o.ContentTypes(search.Archival).IncludeSuperseded(true)
			case 2:
				o = o.ContentTypes(search.Messages, search.Archival).Since(time.Unix(0, 1+h.r.Int64N(2)))
			}
			legs := searchindex.TextCacheAnswers(whole)
			want, err := whole.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			legs = searchindex.TextCacheAnswers(whole) - legs
			before := searchindex.TextCacheAnswers(x)
			got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			if searchindex.TextCacheAnswers(x)-before != legs {
				fell++
				continue
			}
			if err := sameBits(want, got); err != nil {
				t.Fatalf("round %d agent %q %q: %v\nwhole   %v\npartial %v", round, agent, q, err, keys(want), keys(got))
			}
			compared++
		}
	}
	t.Logf("stats checked %v; %d searches compared, %d fell back; passes %d drops %d replays %d",
		checked, compared, fell, searchindex.TextStatsPasses(x), searchindex.TextStatsDrops(x), searchindex.TextStatsReplays(x))
	// A history whose statistics were seldom ready, or whose searches
	// mostly ranked in SQL, compared nothing: the checks above pass
	// vacuously then. (Under -race with the concurrent writer, archival's
	// were ready in about a third of the rounds.)
	for _, k := range kinds {
		if checked[k] < rounds/10 {
			t.Errorf("%v: statistics ready in %d of %d rounds, want at least %d", k, checked[k], rounds, rounds/10)
		}
	}
	if compared < rounds/2 {
		t.Errorf("%d of %d searches compared with the whole cache (%d ranked in SQL), want at least %d", compared, 3*rounds, fell, rounds/2)
	}
}

// TestTextCachePartialPostgresScaleAfterDrop: a search over several
// content types fuses its full-text legs by each row's share of its
// leg's highest attainable score (FTSNorm, in [0, 1]). A partial
// PostgreSQL cache ranks a leg with its own bm25 statistics; when a
// write another leg's catch-up applies drops them before the leg's scale
// is read, that scale must not be PostgreSQL's ts_rank one (a different
// scale: the leg's shares come out several times 1 and outrank every
// other type's).
func TestTextCachePartialPostgresScaleAfterDrop(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	for i := range 6 {
		p.insert(fmt.Sprint("agent-", i%4), "zebra quokka grazing")
	}
	p.message("agent-0", "a zebra passed")
	x := p.index(1<<20, true)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	var victim int64
	if err := p.b.DB().QueryRowContext(ctx, `SELECT min(id) FROM archival WHERE agent = 'agent-3'`).Scan(&victim); err != nil {
		t.Fatal(err)
	}
	// While agent-0's archival partition loads (its leg then ranks with
	// the statistics as they were), another agent deletes a row no
	// partition holds: the messages leg's catch-up drops archival's
	// statistics before the legs' scales are read.
	var once bool
	searchindex.SetTextLoadHook(x, func(_ context.Context, k search.ContentType, owner string) {
		if k != search.Archival || once {
			return
		}
		once = true
		if err := p.store.Agent("agent-3").Archival().Delete(context.Background(), victim); err != nil {
			t.Error(err)
		}
	})
	answers := searchindex.TextCacheAnswers(x)
	rs, err := x.Search(ctx, "zebra", search.Scope{Agent: "agent-0"}, search.NewOptions().Mode(search.FTS))
	if err != nil {
		t.Fatal(err)
	}
	if !once || searchindex.TextCacheAnswers(x) == answers {
		t.Fatal("no leg ranked over the partitions")
	}
	for _, r := range rs {
		if r.Source.FTSNorm > 1 {
			t.Errorf("%s: FTSNorm %v (bm25 %v): a share of a scale the leg was not ranked on", key(r), r.Source.FTSNorm, r.Source.BM25)
		}
	}
}

// TestTextCachePartialPostgresMovedNextToArrival: PostgreSQL's log marks
// every entry changed (migration 0017), a message's own change too, so
// one entry of a message with a new message beside it is not proof that
// the arrival alone changed its text. Here a message of an agent no
// partition holds moves (another owner, batch and seq) between a row of
// a resident partition and a message that arrived there just before: its
// one entry is its own, its text as counted had no context, and the
// statistics must not take it for its text now less the arrival's column
// (that would keep the other neighbour's words out of them).
func TestTextCachePartialPostgresMovedNextToArrival(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	raw := p.raw
	if _, err := p.store.Agent("agent-1").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: "gamma", BatchID: "solo"}}); err != nil {
		t.Fatal(err)
	}
	q, err := p.store.Agent("agent-2").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: "kappa lambda", BatchID: "b2"}})
	if err != nil {
		t.Fatal(err)
	}
	whole := p.whole()
	x := p.index(1<<20, true)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	msgs := search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages)
	if _, err := x.Search(ctx, "kappa", search.Scope{Agent: "agent-2"}, msgs); err != nil {
		t.Fatal(err)
	}
	if !searchindex.TextCacheHeld(x, search.Messages, "agent-2") || searchindex.TextCacheHeld(x, search.Messages, "agent-1") {
		t.Fatal("want agent-2's messages resident, agent-1's not")
	}
	raw(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('agent-2', 'user', 'delta', 'b2', ?, 1)`, q[0].Seq+2)
	raw(`UPDATE messages SET agent = 'agent-2', batch_id = 'b2', seq = ? WHERE content = 'gamma'`, q[0].Seq+1)
	for _, y := range []*searchindex.Index{whole, x} {
		if _, err := y.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, msgs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := searchindex.TextStatsDiff(ctx, x, whole, search.Messages); err != nil {
		t.Fatal(err)
	}
	// Readiness is read before each comparison (a pass may finish while
	// it runs), and a comparison the whole index's own catch-up spoiled
	// (a leg of it ranked in SQL under load) is tried again: a defect
	// fails every attempt.
	for attempt := 1; ; attempt++ {
		ready := searchindex.TextStatsReady(x, search.Messages)
		if !ready || p.same(whole, x, "agent-2", "lambda") {
			break
		}
		if attempt == 3 {
			t.Fatal("ranked in SQL with statistics ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestTextCachePartialPostgresTooBigShrinks: one agent's row with a
// vocabulary past the statistics' share (a pasted log, a blob of random
// tokens) makes a pass give up, and every agent's full-text searches of
// that type rank in SQL. Once the row is gone the statistics fit again:
// a later pass (after a long back-off, here shortened) must compute them,
// not leave the type in SQL for the Index's lifetime.
func TestTextCachePartialPostgresTooBigShrinks(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	whole := p.index(1<<30, false)
	x := p.index(1<<20, true)
	searchindex.SetTextBackoff(x, time.Millisecond)
	for _, y := range []*searchindex.Index{whole, x} {
		if err := y.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	var w []string
	for i := range 2000 { // an eighth of 1 MiB in distinct terms
		w = append(w, fmt.Sprintf("blob%dtoken", i))
	}
	blob := p.insert("agent-3", strings.Join(w, " "))
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if searchindex.TextStatsReady(x, search.Archival) {
		t.Fatal("statistics past their share")
	}
	if err := p.store.Agent("agent-3").Archival().Delete(ctx, blob); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !searchindex.TextStatsReady(x, search.Archival) {
		if time.Now().After(deadline) {
			t.Fatal("the statistics never came back after the row that outgrew them went")
		}
		time.Sleep(50 * time.Millisecond)
		if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	if !p.same(whole, x, "agent-0", "crane harbour") {
		t.Fatal("ranked in SQL with statistics ready")
	}
}
