package searchindex_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// prewarmIndex opens a partial text cache over db that prewarms, counting
// its partition loads in loads (hook, if not nil, runs in each).
func prewarmIndex(t *testing.T, db *sql.DB, limit int64, loads *atomic.Int64, hook func(ctx context.Context, owner string)) *searchindex.Index {
	t.Helper()
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(x)
	searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, owner string) {
		loads.Add(1)
		if hook != nil {
			hook(ctx, owner)
		}
	})
	x.StartPrewarm()
	t.Cleanup(func() { x.Close() })
	return x
}

// warmSetOf reads the recorded warm set as "kind/owner" names.
func warmSetOf(t *testing.T, db *sql.DB) (raw string, set []string) {
	t.Helper()
	err := db.QueryRow(`SELECT value FROM meta WHERE key = ?`, searchindex.MetaTextWarmSet).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var es []struct {
		Kind  int    `json:"kind"`
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal([]byte(raw), &es); err != nil {
		t.Fatalf("recorded warm set %q: %v", raw, err)
	}
	for _, e := range es {
		set = append(set, fmt.Sprintf("%d/%s", e.Kind, e.Owner))
	}
	return raw, set
}

// TestPrewarmLoadsTheLastProcessSet: a prewarming process records the
// partitions its searches made resident (most recently used first) when
// it closes; the next prewarming process loads them before any search,
// from their stored parts, so that those agents' first searches load
// nothing and rank as SQL does, while an agent the set does not name
// still loads in its first search.
func TestPrewarmLoadsTheLastProcessSet(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 10, 20) })
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	opts := search.NewOptions().Limit(15).Mode(search.FTS)
	searchAll := func(x *searchindex.Index, agent string) {
		t.Helper()
		for _, q := range queries[:3] {
			got, err := x.Search(ctx, q, search.Scope{Agent: agent}, opts)
			if err != nil {
				t.Fatal(err)
			}
			sameAsSQLWith(t, ctx, sqlx, q, agent, opts, got)
		}
	}

	var loads1 atomic.Int64
	first := prewarmIndex(t, db, 1<<30, &loads1, nil)
	if n, ok := searchindex.WaitPrewarm(first); !ok || n != 0 {
		t.Fatalf("first process prewarmed %d partitions (finished %v), want 0: nothing recorded", n, ok)
	}
	if _, set := warmSetOf(t, db); set != nil {
		t.Fatalf("a warm set recorded before any search: %v", set)
	}
	for _, a := range []string{"agent-2", "agent-5", "agent-7"} {
		searchAll(first, a)
	}
	if _, err := first.Search(ctx, queries[0], search.Scope{Agent: "agent-2"}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	_, set := warmSetOf(t, db)
	if len(set) == 0 || set[0] != fmt.Sprintf("%d/agent-2", search.Archival) {
		t.Fatalf("recorded warm set %v: want agent-2's archival partition first (used last)", set)
	}
	for _, a := range []string{"agent-2", "agent-5", "agent-7"} {
		for _, k := range []search.ContentType{search.Archival, search.Messages, search.Blocks} {
			if !slices.Contains(set, fmt.Sprintf("%d/%s", k, a)) {
				t.Errorf("recorded warm set %v lacks %d/%s", set, k, a)
			}
		}
	}
	if slices.ContainsFunc(set, func(s string) bool { return strings.HasSuffix(s, "/agent-0") }) {
		t.Errorf("recorded warm set %v names agent-0, never searched", set)
	}

	var loads2 atomic.Int64
	second := prewarmIndex(t, db, 1<<30, &loads2, nil)
	n, ok := searchindex.WaitPrewarm(second)
	if !ok || n != len(set) {
		t.Fatalf("second process prewarmed %d partitions (finished %v), want the %d recorded", n, ok, len(set))
	}
	if searchindex.TextPartsStored(second) == 0 {
		t.Error("no partition prewarmed from its stored part")
	}
	before := loads2.Load()
	for _, a := range []string{"agent-7", "agent-2", "agent-5"} {
		searchAll(second, a)
	}
	if d := loads2.Load() - before; d != 0 {
		t.Errorf("the prewarmed agents' first searches loaded %d partitions, want 0", d)
	}
	searchAll(second, "agent-9")
	if loads2.Load() == before {
		t.Error("agent-9, not in the warm set, loaded nothing in its first search")
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if _, set := warmSetOf(t, db); len(set) == 0 || !strings.HasSuffix(set[0], "/agent-9") {
		t.Fatalf("recorded warm set %v: want agent-9's partitions first", set)
	}
}

// TestPrewarmKeepsTheSetWhileLoading: a process that closes before its
// prewarming loaded the recorded set leaves the set as it was (its cache
// holds only part of it, and a search it served meanwhile is no reason to
// forget the rest); a process that never prewarms records nothing.
func TestPrewarmKeepsTheSetWhileLoading(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 6, 10) })
	var loads atomic.Int64
	first := prewarmIndex(t, db, 1<<30, &loads, nil)
	searchindex.WaitPrewarm(first)
	for _, a := range []string{"agent-1", "agent-3"} {
		if _, err := first.Search(ctx, queries[0], search.Scope{Agent: a}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	first.Close()
	recorded, set := warmSetOf(t, db)
	if len(set) == 0 {
		t.Fatal("nothing recorded")
	}

	// Every prewarming load (of the set's owners) waits until the
	// process closes: each reads its rows (the hook's place), none a part
	// the first process saved.
	if _, err := db.ExecContext(ctx, `DELETE FROM search_text_parts`); err != nil {
		t.Fatal(err)
	}
	loads.Store(0)
	stuck := prewarmIndex(t, db, 1<<30, &loads, func(ctx context.Context, owner string) {
		if owner != "agent-4" {
			<-ctx.Done()
		}
	})
	for deadline := time.Now().Add(time.Minute); loads.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("prewarming loaded nothing in a minute")
		}
	}
	// Asked with a context already done, WaitPrewarm answers at once:
	// not done while the loads wait, done once the process closed.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := stuck.WaitPrewarm(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitPrewarm while prewarming loads, context done: %v, want context.Canceled", err)
	}
	if _, err := stuck.Search(ctx, queries[1], search.Scope{Agent: "agent-4"}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	if !searchindex.TextCacheHeld(stuck, search.Archival, "agent-4") {
		t.Fatal("agent-4's search did not load its partition")
	}
	if err := stuck.Close(); err != nil {
		t.Fatal(err)
	}
	for range 64 { // (a select of two ready cases picks either)
		if err := stuck.WaitPrewarm(done); err != nil {
			t.Fatalf("WaitPrewarm after Close, context done: %v, want nil (prewarming is over)", err)
		}
	}
	if got, _ := warmSetOf(t, db); got != recorded {
		t.Fatalf("a process closed while prewarming recorded %s, want the set left as %s", got, recorded)
	}

	plain, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(plain)
	if _, err := plain.Search(ctx, queries[2], search.Scope{Agent: "agent-5"}, search.NewOptions().Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	if err := plain.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := warmSetOf(t, db); got != recorded {
		t.Fatalf("a process that does not prewarm recorded %s, want the set left as %s", got, recorded)
	}
}

// TestPrewarmStopsShortOfTheBound: a recorded set bigger than the cache
// loads only as far as the bound leaves room for, most recently used
// first, and evicts nothing to do it.
func TestPrewarmStopsShortOfTheBound(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 10, 20) })
	var loads atomic.Int64
	// Two processes search the same agents: the first loads them from
	// the rows and saves them, the second prewarms what the first held,
	// as the one after it will, so that the partitions weighed are
	// charged as a prewarm's are (decoded from their stored parts, which
	// a change has not unpacked).
	var first *searchindex.Index
	for i := range 2 {
		first = prewarmIndex(t, db, 1<<30, &loads, nil)
		searchindex.WaitPrewarm(first)
		for a := range 10 {
			if _, err := first.Search(ctx, queries[a], search.Scope{Agent: fmt.Sprintf("agent-%d", a)}, search.NewOptions().Mode(search.FTS)); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, parts, bytes := searchindex.TextCachePartial(first)
	parse := func(name string) (search.ContentType, string) {
		t.Helper()
		var k search.ContentType
		var owner string
		if _, err := fmt.Sscanf(strings.Replace(name, "/", " ", 1), "%d %s", &k, &owner); err != nil {
			t.Fatal(err)
		}
		return k, owner
	}
	cost := map[string]int64{}
	first.Close() // (its partitions stay to be weighed)
	_, set := warmSetOf(t, db)
	if len(set) != parts {
		t.Fatalf("recorded %d partitions, the cache held %d", len(set), parts)
	}
	for _, name := range set {
		k, owner := parse(name)
		cost[name] = searchindex.TextPartCost(first, k, owner)
	}

	limit := bytes / 2
	second := prewarmIndex(t, db, limit, &loads, nil)
	n, ok := searchindex.WaitPrewarm(second)
	if !ok {
		t.Fatal("prewarming did not finish")
	}
	_, held, got := searchindex.TextCachePartial(second)
	// It stops once one more partition of the mean size would pass 90%
	// of the bound: the last may pass it, not the bound.
	if n == 0 || n >= len(set) || held != n || got > limit || got < limit/10*7 {
		t.Fatalf("prewarmed %d of %d partitions, %d held in %d bytes: want some, not all, none evicted, within 70–100%% of %d", n, len(set), held, got, limit)
	}
	// Most recently used first: walking the set, each partition up to
	// the last one loaded is loaded, or was passed over because it did
	// not fit in 90% of the bound beside those loaded before it (and the
	// statistics, which the cache charged from the start).
	var warmed []string
	filled := got
	for _, name := range set {
		k, owner := parse(name)
		filled -= searchindex.TextPartCost(second, k, owner)
	}
	for _, name := range set {
		if len(warmed) == n {
			break
		}
		k, owner := parse(name)
		if c := searchindex.TextPartCost(second, k, owner); c != 0 {
			warmed = append(warmed, name)
			filled += c
			continue
		}
		if filled+cost[name] <= limit/10*9 {
			t.Errorf("%s (%d bytes) passed over, though %d of the bound's 90%% (%d) were free", name, cost[name], limit/10*9-filled, limit/10*9)
		}
	}
	if len(warmed) != n || warmed[0] != set[0] {
		t.Fatalf("prewarmed %v of the set %v, want %d from its head", warmed, set, n)
	}

	// Searches of agents the prewarming left out evict the set's least
	// recently used partitions first, as the last process would have:
	// its head stays.
	k0, owner0 := parse(set[0])
	warm := map[string]bool{}
	for _, name := range warmed {
		warm[name[strings.Index(name, "/")+1:]] = true
	}
	// (Counted on the warm set itself: a partition may load from its
	// stored copy, which no load hook sees.)
	evicted := func() (n int) {
		for _, name := range warmed {
			if k, owner := parse(name); !searchindex.TextCacheHeld(second, k, owner) {
				n++
			}
		}
		return n
	}
	for a := range 10 {
		owner := fmt.Sprintf("agent-%d", a)
		if warm[owner] {
			continue // (its search would use its prewarmed partitions)
		}
		if _, err := second.Search(ctx, queries[0], search.Scope{Agent: owner}, search.NewOptions().ContentTypes(search.Archival, search.Messages).Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		if evicted() >= 2 {
			break
		}
	}
	if evicted() < 2 {
		t.Fatalf("searches of the agents left out evicted %d of the %d prewarmed partitions, want 2 or more", evicted(), len(warmed))
	}
	if !searchindex.TextCacheHeld(second, k0, owner0) {
		t.Errorf("%s, the warm set's most recently used, evicted first", set[0])
	}
}

// TestPrewarmRecordUnusable: a recorded set that is not the JSON a
// record writes (or names kinds, owners or partitions it cannot load)
// prewarms what it can, and the next record replaces it.
func TestPrewarmRecordUnusable(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 4, 5) })
	for _, tc := range []struct {
		name, value string
		warmed      int
	}{
		{"not JSON", "agent-1", 0},
		{"an object", `{"kind": 2, "owner": "agent-1"}`, 0},
		{"unknown kinds, empty and unknown owners, repeats", `[{"kind": 99, "owner": "agent-1"}, {"kind": 2, "owner": ""},
			{"kind": 2, "owner": "nobody"}, {"kind": 2, "owner": "agent-1"}, {"kind": 2, "owner": "agent-1"}, {"owner": "agent-2"}]`, 2}, // agent-1's, and nobody's (empty)
		{"a huge owner", `[{"kind": 2, "owner": "` + strings.Repeat("x", 1<<16) + `"}]`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := db.Exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
				searchindex.MetaTextWarmSet, tc.value); err != nil {
				t.Fatal(err)
			}
			var loads atomic.Int64
			x := prewarmIndex(t, db, 1<<30, &loads, nil)
			if n, ok := searchindex.WaitPrewarm(x); !ok || n != tc.warmed {
				t.Fatalf("prewarmed %d (finished %v), want %d", n, ok, tc.warmed)
			}
			if _, err := x.Search(ctx, queries[0], search.Scope{Agent: "agent-3"}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS)); err != nil {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			if _, set := warmSetOf(t, db); len(set) == 0 || set[0] != fmt.Sprintf("%d/agent-3", search.Archival) {
				t.Fatalf("recorded %v after the search, want agent-3's archival partition first", set)
			}
		})
	}
}

// TestPrewarmStore: memory.Options.Prewarm on both engines, through the
// store: a store that prewarms records what its agents' searches made
// resident, and the next one holds it before any search.
func TestPrewarmStore(t *testing.T) {
	ctx := context.Background()
	targets := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "engram.db") },
		"postgres": func(t *testing.T) string {
			return pgtest.Start(t).NewDatabase(t)
		},
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			target := targets[engine](t)
			w, err := memory.Open(ctx, target, &memory.Options{TextCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			for a := range 10 {
				ar := w.Agent(fmt.Sprintf("agent-%d", a)).Archival()
				for i := range 30 {
					words := strings.Fields("harbour crane lifts cargo onto the quay at dawn while gulls circle over tugs and barges waiting")
					var b strings.Builder
					for j := range 12 {
						b.WriteString(words[(i*7+j*j+a)%len(words)] + " ")
					}
					if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: b.String()}); err != nil {
						t.Fatal(err)
					}
				}
			}
			open := func() *memory.Store {
				st, err := memory.Open(ctx, target, &memory.Options{TextCacheBytes: 32 << 10, Prewarm: true})
				if err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				if err := st.WaitPrewarm(wctx); err != nil {
					t.Fatalf("prewarming did not finish: %v", err)
				}
				done, cancel := context.WithCancel(ctx)
				cancel()
				for range 64 { // (a select of two ready cases picks either)
					if err := st.WaitPrewarm(done); err != nil {
						t.Fatalf("WaitPrewarm with a context done, once prewarmed: %v, want nil", err)
					}
				}
				if partial, _, _ := searchindex.TextCachePartial(storeaccess.Index(st)); !partial {
					t.Fatal("the text cache is not partial: the test needs a store over the bound")
				}
				return st
			}
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := w.WaitPrewarm(done); err != nil {
				t.Fatalf("WaitPrewarm of a store that does not prewarm: %v, want nil at once", err)
			}
			first := open()
			for _, a := range []string{"agent-1", "agent-6"} {
				if _, err := first.Agent(a).Archival().Search(ctx, "crane cargo", nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			second := open()
			defer second.Close()
			for _, a := range []string{"agent-1", "agent-6"} {
				if !searchindex.TextCacheHeld(storeaccess.Index(second), search.Archival, a) {
					t.Errorf("%s's archival partition not prewarmed", a)
				}
			}
			if searchindex.TextCacheHeld(storeaccess.Index(second), search.Archival, "agent-3") {
				t.Error("agent-3's archival partition prewarmed, never searched")
			}
		})
	}
}

// TestPrewarmRecordsWhileRunning: a prewarming process records its warm
// set from time to time, not only as it closes, so that one killed
// leaves the next a recent set.
func TestPrewarmRecordsWhileRunning(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 4, 5) })
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	searchindex.SetWarmRecordEvery(x, 10*time.Millisecond)
	x.StartPrewarm()
	searchindex.WaitPrewarm(x)
	for _, a := range []string{"agent-2", "agent-0"} {
		if _, err := x.Search(ctx, queries[0], search.Scope{Agent: a}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%d/%s", search.Archival, a)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if _, set := warmSetOf(t, db); len(set) > 0 && set[0] == want {
				break
			}
			if time.Now().After(deadline) {
				_, set := warmSetOf(t, db)
				t.Fatalf("recorded %v a minute after %s's search, want it first", set, a)
			}
		}
	}
}

// TestPrewarmVectors: a partial vector cache prewarms too, from the text
// cache's warm set: the vectors of the agents the last process held
// (archival kinds), within 90% of its own bound, and those agents' first
// vector searches then run over the cache as vec0 answers.
func TestPrewarmVectors(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	emb := search.NewOffline(48)
	plain, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: -1, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	for a := range 10 {
		owner := fmt.Sprintf("agent-%d", a)
		var items []searchindex.VectorItem
		for i := range 30 {
			text := words[(i+a)%8] + " " + words[(i*5+a)%8] + " entry " + fmt.Sprint(i)
			id := insertArchival(t, db, archivalRow{Agent: owner, Content: text})
			items = append(items, searchindex.VectorItem{ID: id, Owner: owner, Text: text})
		}
		if err := plain.PutVectors(ctx, db, search.Archival, items); err != nil {
			t.Fatal(err)
		}
	}
	const row = 4*48 + 96
	open := func() *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, emb, &searchindex.IndexOptions{VectorCacheBytes: 100 * row, TextCacheBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		searchindex.ForceTextPartial(x)
		x.StartPrewarm()
		t.Cleanup(func() { x.Close() })
		if _, ok := searchindex.WaitPrewarm(x); !ok {
			t.Fatal("prewarming did not finish")
		}
		return x
	}
	vec := search.NewOptions().Mode(search.Vector).ContentTypes(search.Archival).Limit(10)
	first := open()
	for _, a := range []string{"agent-4", "agent-8"} {
		if _, err := first.Search(ctx, "alpha bravo", search.Scope{Agent: a}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	first.Close()

	second := open()
	if n := searchindex.PrewarmedVectors(second); n != 2 {
		t.Fatalf("prewarmed %d vector partitions, want 2 (agent-4's and agent-8's archival)", n)
	}
	for _, a := range []string{"agent-4", "agent-8"} {
		if !searchindex.VectorCacheHeld(second, search.Archival, a) {
			t.Fatalf("%s's vectors not prewarmed", a)
		}
		before := searchindex.VectorCacheAnswers(second)
		got, err := second.Search(ctx, "alpha bravo", search.Scope{Agent: a}, vec)
		if err != nil {
			t.Fatal(err)
		}
		want, err := plain.Search(ctx, "alpha bravo", search.Scope{Agent: a}, vec)
		if err != nil {
			t.Fatal(err)
		}
		if searchindex.VectorCacheAnswers(second) != before+1 || len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %d results (cache answered %v), vec0 %d", a, len(got), searchindex.VectorCacheAnswers(second) != before, len(want))
		}
		for i := range got {
			if d := got[i].Source.Distance - want[i].Source.Distance; d > 1e-5 || d < -1e-5 {
				t.Fatalf("%s rank %d: %.6f, vec0 %.6f", a, i+1, got[i].Source.Distance, want[i].Source.Distance)
			}
		}
	}
	if searchindex.VectorCacheHeld(second, search.Archival, "agent-0") {
		t.Error("agent-0's vectors prewarmed, never searched")
	}
}
