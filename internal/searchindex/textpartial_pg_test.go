package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/storetest"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialPostgres holds a partial text cache on PostgreSQL
// (whose dialect has no TextStats: the cache computes the store-wide
// statistics itself, in background passes) to a whole text cache of the
// same store, bit for bit (ids, order, scores), across a random history of
// several agents' writes: inserts, supersessions, message appends (a
// neighbour's context column filled), deletes, hand edits of indexed
// text, blocks created, edited, deleted, shared and unshared. Bounds small
// enough that partitions are evicted and loaded again. A leg the partial
// cache hands to SQL (statistics not ready, an owner too big) ranks with
// the tsvector query, not comparable: such searches are counted, and must
// be few; under the large bound, none.
func TestTextCachePartialPostgres(t *testing.T) {
	ctx := context.Background()
	store, b := openPGStore(t)
	seed := uint64(11)
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
	var agents []string
	for i := range 8 {
		agents = append(agents, fmt.Sprint("agent-", i))
	}
	pick := func() string { return agents[r.IntN(len(agents))] }
	labels := map[string][]string{} // an agent's blocks
	newBlock := func(agent string) {
		label := fmt.Sprint("blk", len(labels[agent]), "-", r.IntN(1000))
		if _, err := store.Agent(agent).CreateBlock(ctx, memory.BlockSpec{Label: label, Value: text(), Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
		labels[agent] = append(labels[agent], label)
	}
	for _, a := range agents {
		for range 10 {
			if _, err := store.Agent(a).Archival().Insert(ctx, memory.ArchivalEntry{Content: text()}); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			var msgs []memory.Message
			for range 4 {
				msgs = append(msgs, memory.Message{Role: memory.RoleUser, Content: text(), BatchID: "b1"})
			}
			if _, err := store.Agent(a).Messages().AppendMany(ctx, msgs); err != nil {
				t.Fatal(err)
			}
		}
		newBlock(a)
	}
	open := func(limit int64, partial bool) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: limit, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if partial {
			searchindex.ForceTextPartial(x)
		}
		return x
	}
	whole := open(1<<30, false)
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	limits := []int64{48 << 10, 1 << 20}
	var cached []*searchindex.Index
	for _, limit := range limits {
		cached = append(cached, open(limit, true))
	}
	warm := func(x *searchindex.Index) {
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	for _, x := range cached {
		warm(x)
		if partial, _, _ := searchindex.TextCachePartial(x); !partial {
			t.Fatal("a PostgreSQL text cache forced partial is not partial")
		}
	}
	raw := func(q string, args ...any) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	randomID := func(table, agent string) (int64, bool) {
		var id int64
		err := b.DB().QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE agent = ? ORDER BY random() LIMIT 1`, agent).Scan(&id)
		return id, err == nil
	}
	ops := []func(){
		func() { // an insert, sometimes into a conversation (indexed with its neighbours)
			e := memory.ArchivalEntry{Content: text()}
			if r.IntN(3) == 0 {
				e.Metadata = map[string]any{"conversation": fmt.Sprint("c", r.IntN(2))}
			}
			if _, err := store.Agent(pick()).Archival().Insert(ctx, e); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			a := pick()
			var id int64
			if err := b.DB().QueryRowContext(ctx, `SELECT id FROM archival WHERE agent = ? AND valid_to IS NULL ORDER BY random() LIMIT 1`, a).Scan(&id); err != nil {
				return
			}
			if _, err := store.Agent(a).Archival().Supersede(ctx, id, memory.ArchivalEntry{Content: text()}); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			a := pick()
			if id, ok := randomID("archival", a); ok {
				if err := store.Agent(a).Archival().Delete(ctx, id); err != nil && !errors.Is(err, memory.ErrNotFound) {
					t.Fatal(err)
				}
			}
		},
		func() { // appended to the open batch: the last message's context_after fills
			var msgs []memory.Message
			for range 1 + r.IntN(2) {
				msgs = append(msgs, memory.Message{Role: memory.RoleAssistant, Content: text(), BatchID: "b1"})
			}
			if _, err := store.Agent(pick()).Messages().AppendMany(ctx, msgs); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if id, ok := randomID("archival", pick()); ok {
				raw(`UPDATE archival SET content = ? WHERE id = ?`, text(), id)
			}
		},
		func() {
			if id, ok := randomID("messages", pick()); ok {
				raw(`UPDATE messages SET content = ? WHERE id = ?`, text(), id)
			}
		},
		func() {
			if id, ok := randomID("messages", pick()); ok {
				raw(`DELETE FROM messages WHERE id = ?`, id)
			}
		},
		func() { newBlock(pick()) },
		func() {
			a := pick()
			if ls := labels[a]; len(ls) > 0 {
				if err := store.Agent(a).Block(ls[r.IntN(len(ls))]).SetText(ctx, text()); err != nil {
					t.Fatal(err)
				}
			}
		},
		func() {
			a := pick()
			if ls := labels[a]; len(ls) > 1 {
				i := r.IntN(len(ls))
				if err := store.Agent(a).Block(ls[i]).Delete(ctx); err != nil {
					t.Fatal(err)
				}
				labels[a] = append(ls[:i:i], ls[i+1:]...)
			}
		},
		func() {
			a, with := pick(), pick()
			if ls := labels[a]; len(ls) > 0 && a != with {
				_ = store.Agent(a).Block(ls[r.IntN(len(ls))]).Share(ctx, with, blocks.ReadOnly)
			}
		},
		func() {
			a, with := pick(), pick()
			if ls := labels[a]; len(ls) > 0 && a != with {
				_ = store.Agent(a).Block(ls[r.IntN(len(ls))]).Unshare(ctx, with)
			}
		},
	}
	shapes := []func() *search.Options{
		func() *search.Options { return search.NewOptions().ContentTypes(search.Archival) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Messages) },
		func() *search.Options { return search.NewOptions().ContentTypes(search.Blocks) },
		func() *search.Options {
			return search.NewOptions().ContentTypes(search.Archival).IncludeSuperseded(true)
		},
		func() *search.Options { return search.NewOptions() },
	}
	compared, results := make([]int, len(cached)), 0
	fellBack := make([]int, len(cached))
	for round := range 120 {
		for range 1 + r.IntN(4) {
			ops[r.IntN(len(ops))]()
		}
		// A search over blocks indexes their new text first (logged: the
		// partial caches' block statistics go); then the statistics the
		// writes dropped are computed again.
		if _, err := whole.Search(ctx, "w1", search.Scope{Agent: agents[0]}, search.NewOptions().ContentTypes(search.Blocks).Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		for _, x := range cached {
			warm(x)
		}
		for range 3 {
			agent := pick()
			q := vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
			opts := func() *search.Options { return shapes[r.IntN(len(shapes))]().Mode(search.FTS).Limit(10) }
			o := opts()
			legs := searchindex.TextCacheAnswers(whole)
			want, err := whole.Search(ctx, q, search.Scope{Agent: agent}, o)
			if err != nil {
				t.Fatal(err)
			}
			legs = searchindex.TextCacheAnswers(whole) - legs
			if legs == 0 {
				t.Fatalf("round %d: the whole cache ranked %q in SQL", round, q)
			}
			for i, x := range cached {
				before := searchindex.TextCacheAnswers(x)
				got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o)
				if err != nil {
					t.Fatal(err)
				}
				if searchindex.TextCacheAnswers(x)-before != legs {
					fellBack[i]++
					continue
				}
				if err := sameBits(want, got); err != nil {
					t.Fatalf("round %d bound %d agent %q %q: %v\nwhole   %v\npartial %v", round, limits[i], agent, q, err, keys(want), keys(got))
				}
				compared[i]++
				results += len(got)
			}
		}
	}
	for i, x := range cached {
		partial, parts, bytes := searchindex.TextCachePartial(x)
		t.Logf("bound %d: partial %v, %d partitions, %d bytes; %d searches compared, %d ranked in SQL; %d statistics passes",
			limits[i], partial, parts, bytes, compared[i], fellBack[i], searchindex.TextStatsPasses(x))
		if !partial {
			t.Fatalf("bound %d: not partial", limits[i])
		}
		if bytes > limits[i] {
			t.Fatalf("bound %d: holds %d bytes", limits[i], bytes)
		}
		if fellBack[i] > compared[i]/5 {
			t.Fatalf("bound %d: %d searches ranked in SQL, %d compared", limits[i], fellBack[i], compared[i])
		}
	}
	if fellBack[len(cached)-1] != 0 {
		t.Fatalf("under the large bound %d searches ranked in SQL", fellBack[len(cached)-1])
	}
	t.Logf("%d results compared", results)
}

// pgPartial is a PostgreSQL store of a few agents' rows, written through
// memory, with indexes over it.
type pgPartial struct {
	t     *testing.T
	store *memory.Store
	b     *pgbackend.Backend
}

// openPGStore opens a new PostgreSQL database as a store that writes
// (its own text cache off) and as a backend to open indexes over; both
// close with the test.
func openPGStore(t *testing.T) (*memory.Store, *pgbackend.Backend) {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	store, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	b, err := pgbackend.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return store, b
}

func newPGPartial(t *testing.T) *pgPartial {
	store, b := openPGStore(t)
	p := &pgPartial{t: t, store: store, b: b}
	for i := range 4 {
		a := fmt.Sprint("agent-", i)
		for j := range 5 {
			p.insert(a, fmt.Sprintf("harbour crane %d lifts cargo", j))
		}
		p.message(a, "the harbour crane broke")
	}
	return p
}

// savePart saves owner's parts as a process does whose search of query
// (opts) loaded them from the rows, and closes that process's Index.
func (p *pgPartial) savePart(owner, query string, opts *search.Options) {
	p.t.Helper()
	ctx := context.Background()
	x := p.index(1<<30, true)
	defer x.Close()
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		p.t.Fatal(err)
	}
	if _, err := x.Search(ctx, query, search.Scope{Agent: owner}, opts); err != nil {
		p.t.Fatal(err)
	}
	searchindex.WaitTextPartSaves(x)
}

// raw runs q in one write transaction of p's backend (SQL beside the
// store's own writes, as a hand edit is).
func (p *pgPartial) raw(q string, args ...any) {
	p.t.Helper()
	ctx := context.Background()
	if err := p.b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pgPartial) insert(agent, content string) int64 {
	p.t.Helper()
	e, err := p.store.Agent(agent).Archival().Insert(context.Background(), memory.ArchivalEntry{Content: content})
	if err != nil {
		p.t.Fatal(err)
	}
	return e.ID
}

func (p *pgPartial) message(agent, content string) {
	p.t.Helper()
	if _, err := p.store.Agent(agent).Messages().AppendMany(context.Background(), []memory.Message{{Role: memory.RoleUser, Content: content, BatchID: "b1"}}); err != nil {
		p.t.Fatal(err)
	}
}

// whole opens an Index over the store whose text cache holds it whole,
// warmed: the reference a partial cache must rank as.
func (p *pgPartial) whole() *searchindex.Index {
	p.t.Helper()
	x := p.index(1<<30, false)
	if err := x.WarmTextCache(context.Background()); err != nil {
		p.t.Fatal(err)
	}
	return x
}

// index opens an Index over the store (limit: TextCacheBytes), forced
// partial if partial.
func (p *pgPartial) index(limit int64, partial bool) *searchindex.Index {
	p.t.Helper()
	x, err := searchindex.NewIndex(context.Background(), p.b.DB(), p.b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: p.b.Write, TextCacheBytes: limit, VectorCacheBytes: -1})
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { x.Close() })
	if partial {
		searchindex.ForceTextPartial(x)
	}
	return x
}

// same checks that x ranks query for agent (FTS, archival and messages)
// as want does, bit for bit, when x's text cache ranked every leg want's
// did, and reports whether it did.
func (p *pgPartial) same(want, x *searchindex.Index, agent, query string) (cached bool) {
	p.t.Helper()
	ctx := context.Background()
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages)
	legs := searchindex.TextCacheAnswers(want)
	w, err := want.Search(ctx, query, search.Scope{Agent: agent}, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	legs = searchindex.TextCacheAnswers(want) - legs
	before := searchindex.TextCacheAnswers(x)
	g, err := x.Search(ctx, query, search.Scope{Agent: agent}, opts)
	if err != nil {
		p.t.Fatal(err)
	}
	if searchindex.TextCacheAnswers(x)-before != legs {
		return false // a leg ranked in SQL
	}
	if err := sameBits(w, g); err != nil {
		p.t.Fatalf("%q for %s: %v\nwant %v\ngot  %v", query, agent, err, keys(w), keys(g))
	}
	return true
}

// TestTextCachePartialPostgresReplay: a statistics pass the cache's
// catch-ups overtook (writes and searches while it counted) replays the
// log since its snapshot onto its result: rows added since (archival
// entries, messages filling a neighbour's context) are followed and the
// result installed, ranking bit for bit as a whole cache; a change it
// cannot follow (a deleted row it counted) throws the result away, the
// searches of that type rank in SQL, and a later pass computes them.
func TestTextCachePartialPostgresReplay(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	whole := p.whole()
	x := p.index(1<<20, true)
	searchindex.SetTextBackoff(x, 10*time.Millisecond) // and a discarded pass's
	var mu sync.Mutex                                  // the kinds' passes run side by side
	first := map[search.ContentType]bool{}
	searchindex.SetTextStatsHook(x, func(_ context.Context, k search.ContentType) {
		mu.Lock()
		defer mu.Unlock()
		if first[k] || k == search.Blocks {
			return
		}
		first[k] = true
		switch k {
		case search.Archival:
			p.insert("agent-0", "harbour tug tows the crane")
			p.insert("agent-1", "a crane seen by the replay")
		case search.Messages:
			p.message("agent-0", "crane fixed by the harbour master") // agent-0's last message gains a context_after
		}
		// A search (in SQL: no statistics yet) catches the cache up past
		// the pass's snapshot.
		if _, err := x.Search(context.Background(), "crane", search.Scope{Agent: "agent-2"}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Error(err)
		}
	})
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	for _, k := range []search.ContentType{search.Archival, search.Messages} {
		if !searchindex.TextStatsReady(x, k) {
			t.Fatalf("%v: the pass's statistics were not installed", k)
		}
	}
	if n := searchindex.TextStatsPasses(x); n != 3 {
		t.Fatalf("%d passes, want one per type", n)
	}
	if n := searchindex.TextStatsReplays(x); n < 2 {
		t.Fatalf("%d passes replayed the log, want archival's and messages' (blocks' too when overtaken)", n)
	}
	for _, a := range []string{"agent-0", "agent-1", "agent-2"} {
		for _, q := range []string{"crane", "harbour tug", "master cargo"} {
			if !p.same(whole, x, a, q) {
				t.Fatalf("%q for %s ranked in SQL", q, a)
			}
		}
	}

	// A deletion of a row no partition holds (agent-3 never searched):
	// the statistics go; then one during the next pass: its result goes.
	var agent3 []int64
	rows, err := p.b.DB().QueryContext(ctx, `SELECT id FROM archival WHERE agent = 'agent-3' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		agent3 = append(agent3, id)
	}
	rows.Close()
	var once bool // (archival's passes run one at a time)
	hooked := make(chan struct{})
	searchindex.SetTextStatsHook(x, func(_ context.Context, k search.ContentType) {
		if k != search.Archival || once {
			return
		}
		once = true
		defer close(hooked)
		p.insert("agent-3", "crane gone soon")
		if err := p.store.Agent("agent-3").Archival().Delete(context.Background(), agent3[1]); err != nil {
			t.Error(err)
		}
		if _, err := x.Search(context.Background(), "crane", search.Scope{Agent: "agent-2"}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Error(err)
		}
	})
	if err := p.store.Agent("agent-3").Archival().Delete(ctx, agent3[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-2"}, search.NewOptions().Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	passes, drops := searchindex.TextStatsPasses(x), searchindex.TextStatsDrops(x)
	if drops == 0 {
		t.Fatal("the statistics outlived the deletion of a row no partition held")
	}
	// The hook's search must be over before same counts x's cached legs
	// (it counted the hook's too, and took a leg ranked in SQL for one
	// the cache answered).
	// The next pass starts with the first search after the last one's
	// rest (nine times its time).
	deadline := time.Now().Add(10 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-hooked:
			waiting = false
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("the next pass never ran")
			}
			if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-2"}, search.NewOptions().Mode(search.FTS)); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline = time.Now().Add(10 * time.Second)
	for !searchindex.TextStatsReady(x, search.Archival) {
		if time.Now().After(deadline) {
			t.Fatal("the statistics never came back")
		}
		time.Sleep(20 * time.Millisecond)
		p.same(whole, x, "agent-0", "crane") // starts a pass once the back-off is over
	}
	if got := searchindex.TextStatsPasses(x) - passes; got != 1 {
		t.Fatalf("%d passes installed, want 1 (the first one thrown away)", got)
	}
	for _, a := range []string{"agent-0", "agent-3"} {
		if !p.same(whole, x, a, "crane harbour") {
			t.Fatalf("ranked in SQL for %s", a)
		}
	}
}

// TestTextCachePartialPostgresTooBig: a pass whose frequencies would
// outgrow their share of the bound stops at once, not after analyzing
// every row; the decision is remembered (no second pass), and the
// searches rank in SQL, as without a cache.
func TestTextCachePartialPostgresTooBig(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	for i := range 50 {
		p.insert("agent-0", fmt.Sprintf("crane word%d another%d", i, i))
	}
	sqlx := p.index(-1, false)
	x := p.index(1<<10, true) // an eighth: 128 bytes, two terms
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget", err)
	}
	counted := searchindex.TextStatsCounted(x)
	if counted > 3 {
		t.Fatalf("the passes analyzed %d rows before giving up", counted)
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
	for range 3 {
		want, err := sqlx.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !slicesEqualKeys(want, got) {
			t.Fatalf("got %v, want %v", keys(got), keys(want))
		}
	}
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if searchindex.TextStatsCounted(x) != counted {
		t.Fatal("a pass ran again")
	}
	if n := searchindex.TextCacheAnswers(x); n != 0 {
		t.Fatalf("%d legs ranked over the cache without statistics", n)
	}
}

func slicesEqualKeys(a, b []search.Result) bool {
	return strings.Join(keys(a), ",") == strings.Join(keys(b), ",")
}

// TestTextCachePartialPostgresNoWait: while a pass runs, searches rank in
// SQL at once (none waits for it), and Close stops the pass and waits for
// it: no goroutine outlives the Index.
func TestTextCachePartialPostgresNoWait(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	x := p.index(1<<20, true)
	started, stopped := make(chan struct{}), make(chan struct{})
	var once bool
	searchindex.SetTextStatsHook(x, func(ctx context.Context, k search.ContentType) {
		if k != search.Archival || once {
			return
		}
		once = true
		close(started)
		<-ctx.Done() // held until Close
		close(stopped)
	})
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
	deadline := time.Now().Add(10 * time.Second)
	for { // the first search starts the build, which goes partial
		if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, opts); err != nil {
			t.Fatal(err)
		}
		if partial, _, _ := searchindex.TextCachePartial(x); partial {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never went partial")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, opts); err != nil {
		t.Fatal(err)
	}
	<-started
	for range 5 {
		start := time.Now()
		rs, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-1"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("%d results in %v", len(rs), time.Since(start))
		}
	}
	if n := searchindex.TextCacheAnswers(x); n != 0 {
		t.Fatalf("%d legs ranked over the cache while its statistics were counted", n)
	}
	x.Close()
	select {
	case <-stopped:
	default:
		t.Fatal("Close returned before the pass stopped")
	}
}

// BenchmarkTextStatsPass is one statistics pass over PostgreSQL's
// archival entries (the agents section's Zipf text, with their
// conversation-neighbour columns): what a PostgreSQL partial cache spends
// in the background per content type, at start and after a write its
// catch-ups cannot follow.
func BenchmarkTextStatsPass(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.Start(b).NewDatabase(b)
	be, err := pgbackend.Open(ctx, dsn, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	r := rand.New(rand.NewPCG(35, 1))
	zipf := rand.NewZipf(r, 1.07, 2, 4999)
	const rows, chunk = 20_000, 1_000
	// load writes rows rows through insert (its VALUES left off), each
	// row's values tuple's, of row n with a text of Zipf words.
	load := func(insert, tuple string, values func(n int64, text string) []any) {
		for start := 0; start < rows; start += chunk {
			var q strings.Builder
			q.WriteString(insert + ` VALUES `)
			var args []any
			for i := range chunk {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString(tuple)
				w := make([]string, 12+r.IntN(30))
				for j := range w {
					w[j] = fmt.Sprintf("w%sx%d", strings.Repeat("q", int(zipf.Uint64())%3), zipf.Uint64())
				}
				args = append(args, values(int64(start+i), strings.Join(w, " "))...)
			}
			if err := be.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q.String(), args...); return err }); err != nil {
				b.Fatal(err)
			}
		}
	}
	load(`INSERT INTO archival (agent, content, created_at, valid_from)`, "(?, ?, ?, ?)", func(n int64, text string) []any {
		return []any{fmt.Sprint("agent-", n%100), text, n, n}
	})
	x, err := searchindex.NewIndex(ctx, be.DB(), be.SearchDialect(), nil, &searchindex.IndexOptions{Write: be.Write, VectorCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	// by-owner: as a pass reads (each owner's rows, neighbours found in
	// Go); store-wide: every row with the query that joins each row's
	// neighbours in the engine, as the whole cache's build reads.
	for _, bySel := range []bool{false, true} {
		b.Run(map[bool]string{false: "by-owner", true: "store-wide"}[bySel], func(b *testing.B) {
			var counted int64
			for range b.N {
				n, _, _, err := searchindex.TextStatsOf(ctx, x, search.Archival, bySel)
				if err != nil {
					b.Fatal(err)
				}
				counted += n
			}
			b.ReportMetric(float64(counted)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	// A whole copy's build, reading the same two ways.
	for _, bySel := range []bool{false, true} {
		b.Run(map[bool]string{false: "whole-build-by-owner", true: "whole-build-store-wide"}[bySel], func(b *testing.B) {
			for range b.N {
				buildWhole(b, be.DB(), be.SearchDialect(), &searchindex.IndexOptions{Write: be.Write, VectorCacheBytes: -1}, bySel)
			}
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
	// Messages: a pass reads them with the store-wide query (each
	// message's four neighbours are index probes). 20,000 messages of 100
	// agents in batches of 20.
	load(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)`, "(?, 'user', ?, ?, ?, ?)", func(n int64, text string) []any {
		return []any{fmt.Sprint("agent-", n%100), text, fmt.Sprint("batch-", n/100/20), n / 100 % 20, n}
	})
	b.Run("messages", func(b *testing.B) {
		var counted int64
		for range b.N {
			n, _, _, err := searchindex.TextStatsOf(ctx, x, search.Messages, false)
			if err != nil {
				b.Fatal(err)
			}
			counted += n
		}
		if counted != int64(rows*b.N) {
			b.Fatalf("counted %d messages, want %d", counted, rows*b.N)
		}
		b.ReportMetric(float64(counted)/b.Elapsed().Seconds(), "rows/s")
	})
}

// TestTextCachePartialPostgresConformance runs the store conformance
// suite on PostgreSQL with the text cache forced partial (its own
// statistics, computed by passes, dropped and computed again as the
// suite writes): isolation (no row of another agent) and every other
// behaviour hold over the partitions as over the whole cache and SQL.
func TestTextCachePartialPostgresConformance(t *testing.T) {
	testenv.SkipUnlessLong(t, "the whole store conformance suite again, over a partial cache")
	srv := pgtest.Start(t)
	storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) *memory.Store {
		ctx := context.Background()
		c, err := memory.Open(ctx, srv.NewDatabase(t), &memory.Options{Approver: approver, Embedder: search.NewOffline(64)})
		if err != nil {
			t.Fatal(err)
		}
		searchindex.ForceTextPartial(storeaccess.Index(c))
		if err := storeaccess.Index(c).WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget (partial)", err)
		}
		return c
	})
}

// TestTextCachePartialPostgresOutgrowsShare: statistics a catch-up grows
// past their share of the bound (new words) are let go, and the pass the
// next search starts finds them too big and stops: that type ranks in SQL
// from then on, and the bound holds.
func TestTextCachePartialPostgresOutgrowsShare(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	const limit = 16 << 10
	x := p.index(limit, true)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget", err)
	}
	if !searchindex.TextStatsReady(x, search.Archival) {
		t.Fatal("no statistics for the small store")
	}
	for i := range 4 {
		var w []string
		for j := range 10 {
			w = append(w, fmt.Sprintf("fresh%dword%d", i, j))
		}
		p.insert("agent-0", strings.Join(w, " "))
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
	if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, opts); err != nil {
		t.Fatal(err)
	}
	if searchindex.TextStatsDrops(x) == 0 {
		t.Fatal("statistics past their share were kept")
	}
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if searchindex.TextStatsReady(x, search.Archival) {
		t.Fatal("a pass computed statistics past their share")
	}
	counted := searchindex.TextStatsCounted(x)
	answers := searchindex.TextCacheAnswers(x)
	sqlx := p.index(-1, false)
	for _, q := range []string{"crane", "fresh1word3"} {
		want, err := sqlx.Search(ctx, q, search.Scope{Agent: "agent-0"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(ctx, q, search.Scope{Agent: "agent-0"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !slicesEqualKeys(want, got) {
			t.Fatalf("%q: %v, want %v", q, keys(got), keys(want))
		}
	}
	if searchindex.TextCacheAnswers(x) != answers || searchindex.TextStatsCounted(x) != counted {
		t.Fatal("archival searches went on ranking over the cache, or passes ran again")
	}
	if _, _, bytes := searchindex.TextCachePartial(x); bytes > limit {
		t.Fatalf("holds %d bytes, bound %d", bytes, limit)
	}
}

// TestTextCachePartialPostgresBulkKind: a catch-up with more changes than
// it replays (there: the lazy block index's first flush after many blocks
// were written) starts over only the kinds that changed. The other kinds
// keep their partitions and their statistics (no pass over every archival
// entry and message again) and rank bit for bit as a whole cache at once.
func TestTextCachePartialPostgresBulkKind(t *testing.T) {
	ctx := context.Background()
	p := newPGPartial(t)
	whole := p.whole()
	x := p.index(1<<20, true)
	searchindex.SetTextCatchUpMax(x, 3)
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if !p.same(whole, x, "agent-0", "crane") {
		t.Fatal("the warmed cache ranked in SQL")
	}
	passes, counted := searchindex.TextStatsPasses(x), searchindex.TextStatsCounted(x)
	for i := range 5 { // marked dirty; the next search over blocks indexes them
		if _, err := p.store.Agent("agent-1").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprint("note", i), Value: "crane log", Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.Search(ctx, "crane", search.Scope{Agent: "agent-0"}, search.NewOptions().Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []search.ContentType{search.Archival, search.Messages} {
		if !searchindex.TextStatsReady(x, k) {
			t.Errorf("%v: statistics dropped by a catch-up of block changes only", k)
		}
		if !searchindex.TextCacheHeld(x, k, "agent-0") {
			t.Errorf("%v: agent-0's partition dropped by a catch-up of block changes only", k)
		}
	}
	if !p.same(whole, x, "agent-0", "crane") || !p.same(whole, x, "agent-1", "crane log") {
		t.Fatal("archival and messages ranked in SQL after a catch-up of block changes only")
	}
	if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatal(err)
	}
	if got := searchindex.TextStatsCounted(x) - counted; got > 30 {
		t.Fatalf("%d rows counted again after a catch-up of block changes only (%d passes before, %d after)", got, passes, searchindex.TextStatsPasses(x))
	}
}

// A cache asks the log whether anything changed before every search; on
// PostgreSQL the statement is prepared, and after five runs the server may
// plan it once for any position. That plan must reach the log's first
// entry past the position through the txid index, not read the log: on a
// store of 30 agents (48,000 log entries) the EXISTS it replaced took
// 1.8 ms a search in a sequential scan, 9 ms at 100 agents.
func TestChangedSinceUsesTheIndexPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	db := b.DB()
	if _, err := db.ExecContext(ctx, `INSERT INTO search_text_log (kind, id) SELECT 1, g FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE search_text_log`); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		xip  []int64
	}{{"no transaction running", nil}, {"transactions running", []int64{1 << 40, 1<<40 + 2}}} {
		q, args := searchindex.ChangedSinceStatement(b.SearchDialect(), "search_text_log", 1<<40, 1<<40+5, tc.xip)
		n := 0
		q = regexp.MustCompile(`\?`).ReplaceAllStringFunc(q, func(string) string { n++; return fmt.Sprint("$", n) })
		types := []string{"bigint", "bigint", "text"}[:len(args)]
		name := fmt.Sprint("changed_since_", i)
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+`(`+strings.Join(types, ", ")+`) AS `+q); err != nil {
			t.Fatalf("%s: prepare %s: %v", tc.name, q, err)
		}
		var vals []string
		for _, a := range args {
			if s, ok := a.(string); ok {
				vals = append(vals, "'"+s+"'")
			} else {
				vals = append(vals, fmt.Sprint(a))
			}
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+`(`+strings.Join(vals, ", ")+`)`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan on search_text_log") || !strings.Contains(p, "search_text_log_txid") {
			t.Errorf("%s: the generic plan does not seek the log's txid index:\n%s", tc.name, p)
		}
	}
}
