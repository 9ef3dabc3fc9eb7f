package searchindex_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialHeldFollowsStoredParts: a partial cache whose
// partitions load from the parts another process stored (packed until
// their first change, which charges them more) and from the rows, are
// evicted under a bound that holds about a third of them and caught up
// with writes of two pools (inserts, edits, archival rows moved between
// agents, deletes), must count what its partitions hold (held) as their
// sum after every search: the bound is kept by that count.
func TestTextCachePartialHeldFollowsStoredParts(t *testing.T) {
	if testing.Short() {
		t.Skip("400 random writes and searches over a partial cache of stored parts: a long test")
	}
	testenv.SkipRaceUnlessLong(t, "400 random writes and searches, one goroutine")
	ctx := context.Background()
	start := time.Now()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	const agents = 10
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, agents, 40) })
	kinds := []search.ContentType{search.Archival, search.Messages}
	agentName := func(a int) string { return fmt.Sprintf("agent-%d", a) }
	opts := func() *search.Options {
		return search.NewOptions().ContentTypes(search.Archival, search.Messages).Mode(search.FTS).Limit(10)
	}

	// A first process searches every agent and stores each partition.
	first := partialIndex(t, db)
	for a := range agents {
		if _, err := first.Search(ctx, queries[a%len(queries)], search.Scope{Agent: agentName(a)}, opts()); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(first)
	var sum int64
	for a := range agents {
		for _, k := range kinds {
			c := searchindex.TextPartCost(first, k, agentName(a))
			if c == 0 {
				t.Fatalf("the first index does not hold %s's %v partition", agentName(a), k)
			}
			sum += c
		}
	}
	if n := searchindex.TextPartsSaved(first); n != 2*agents {
		t.Fatalf("the first index saved %d partitions, want %d", n, 2*agents)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countStoredParts(t, db); n != 2*agents {
		t.Fatalf("%d stored parts, want %d", n, 2*agents)
	}

	// A second, bounded at a third of them.
	limit := sum / 3
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	if partial, _, _ := searchindex.TextCachePartial(x); !partial {
		t.Fatal("the second index is not partial")
	}
	type partKey struct {
		k     search.ContentType
		owner string
	}
	// The loads of the current search that read the rows; a search's
	// legs load their partitions concurrently, so the hook locks.
	var (
		fromRowsMu sync.Mutex
		fromRows   map[partKey]bool
	)
	searchindex.SetTextLoadHook(x, func(_ context.Context, k search.ContentType, owner string) {
		fromRowsMu.Lock()
		fromRows[partKey{k, owner}] = true
		fromRowsMu.Unlock()
	})

	r := rand.New(rand.NewPCG(11, 35))
	vocab := make([]string, 400) // agentsCorpus's words
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	fresh := 0
	text := func() string {
		w := make([]string, 3+r.IntN(15))
		for i := range w {
			if r.IntN(4) == 0 { // new words: a part's vocabulary grows
				fresh++
				w[i] = fmt.Sprintf("fresh%d", fresh)
			} else {
				w[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)))]
			}
		}
		return strings.Join(w, " ")
	}
	pickID := func(w execer, table string) (int64, bool) {
		var n int64
		if err := w.(queryRower).QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return 0, false
		}
		var id int64
		if err := w.(queryRower).QueryRowContext(ctx, `SELECT id FROM `+table+` ORDER BY id LIMIT 1 OFFSET ?`, r.Int64N(n)).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id, true
	}
	exec := func(w execer, q string, args ...any) {
		if _, err := w.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ops := []func(w execer) string{
		func(w execer) string {
			insertArchival(t, w, archivalRow{Agent: agentName(r.IntN(agents)), Content: text()})
			return "insert an entry"
		},
		func(w execer) string {
			insertMessage(t, w, agentName(r.IntN(agents)), "user", text(), baseTime)
			return "insert a message"
		},
		func(w execer) string {
			if id, ok := pickID(w, "archival"); ok {
				exec(w, `UPDATE archival SET content = ? WHERE id = ?`, text(), id)
			}
			return "edit an entry"
		},
		func(w execer) string {
			if id, ok := pickID(w, "messages"); ok {
				exec(w, `UPDATE messages SET content = ? WHERE id = ?`, text(), id)
			}
			return "edit a message"
		},
		func(w execer) string {
			if id, ok := pickID(w, "archival"); ok {
				exec(w, `UPDATE archival SET agent = ? WHERE id = ?`, agentName(r.IntN(agents)), id)
			}
			return "move an entry"
		},
		func(w execer) string {
			if id, ok := pickID(w, "messages"); ok {
				exec(w, `DELETE FROM messages WHERE id = ?`, id)
			}
			return "delete a message"
		},
	}
	writers := []execer{db, other}

	var (
		minHeld    = 2 * agents
		grown      int // partitions a catch-up grew
		grownSteps int // searches whose catch-up grew a partition
		grownDecod int // of them, partitions loaded from a stored part, changed for the first time
	)
	decoded := map[partKey]bool{} // held partitions loaded from a stored part, unchanged since
	cost := func() map[partKey]int64 {
		m := map[partKey]int64{}
		for a := range agents {
			for _, k := range kinds {
				if c := searchindex.TextPartCost(x, k, agentName(a)); c != 0 {
					m[partKey{k, agentName(a)}] = c
				}
			}
		}
		return m
	}
	const steps = 400
	for step := range steps {
		w := writers[r.IntN(len(writers))]
		op := ops[r.IntN(len(ops))](w)
		agent := agentName(r.IntN(agents))
		q := queries[r.IntN(len(queries))]
		if r.IntN(2) == 0 {
			q = vocab[r.IntN(len(vocab))] + " " + vocab[r.IntN(len(vocab))]
		}
		before := cost()
		storedBefore := x.CacheStats().TextLoadsStored
		fromRows = map[partKey]bool{}
		if _, err := x.Search(ctx, q, search.Scope{Agent: agent}, opts()); err != nil {
			t.Fatalf("step %d (%s), agent %s %q: %v", step, op, agent, q, err)
		}
		if d := searchindex.TextHeldDrift(x); d != 0 {
			_, parts, bytes := searchindex.TextCachePartial(x)
			t.Fatalf("step %d (%s, then %s's search): the partitions' bytes counted %d off their sum (%d partitions, %d bytes charged, bound %d)", step, op, agent, d, parts, bytes, limit)
		}
		after := cost()
		loaded := x.CacheStats().TextLoadsStored != storedBefore || len(fromRows) > 0
		stepGrew := false
		for pk, c := range after {
			c0, was := before[pk]
			switch {
			case !was:
				// Loaded by this search: from the rows if the load hook
				// saw it (a stored load runs none), else a stored part.
				decoded[pk] = !fromRows[pk]
			case pk.owner == agent && loaded:
				// (It may have been evicted and loaded again.)
				decoded[pk] = decoded[pk] && !fromRows[pk]
			case c > c0:
				grown++
				stepGrew = true
				if decoded[pk] {
					grownDecod++
				}
				decoded[pk] = false
			case c != c0:
				decoded[pk] = false
			}
		}
		for pk := range decoded {
			if _, ok := after[pk]; !ok {
				delete(decoded, pk)
			}
		}
		if stepGrew {
			grownSteps++
		}
		minHeld = min(minHeld, len(after))
	}

	s := x.CacheStats()
	_, held, bytes := searchindex.TextCachePartial(x)
	t.Logf("%d steps in %v: %d loads from stored parts (TextPartsStored %d), %d from rows, %d evictions; %d partitions grown by catch-ups in %d searches, %d of them stored parts changed for the first time; %d partitions held at the end in %d bytes (bound %d, the first index's %d), %d at the fewest, %d stored parts",
		steps, time.Since(start).Round(time.Millisecond), s.TextLoadsStored, searchindex.TextPartsStored(x), s.TextLoadsRows, s.TextEvictions,
		grown, grownSteps, grownDecod, held, bytes, limit, sum, minHeld, countStoredParts(t, db))
	if s.TextLoadsStored == 0 {
		t.Errorf("no partition loaded from a stored part: the history does not exercise them")
	}
	if s.TextEvictions == 0 {
		t.Errorf("no partition evicted: the bound (%d of the first index's %d bytes) held them all", limit, sum)
	}
	if grown == 0 || grownDecod == 0 {
		t.Errorf("catch-ups grew %d partitions, %d of them stored parts: want some of each", grown, grownDecod)
	}
}

// countStoredParts counts the rows of search_text_parts.
func countStoredParts(t *testing.T, db queryRower) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM search_text_parts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
