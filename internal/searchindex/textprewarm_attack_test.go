package searchindex_test

// Prewarming attacked from outside: what a recorded set (written by a
// process, or by hand) and the order of loads, searches and Close can
// make it do.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

type warmEntryJSON struct {
	Kind  int    `json:"kind"`
	Owner string `json:"owner"`
}

func setWarmRecord(t *testing.T, db *sql.DB, value string) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		searchindex.MetaTextWarmSet, value); err != nil {
		t.Fatal(err)
	}
}

func setWarmEntries(t *testing.T, db *sql.DB, es []warmEntryJSON) {
	t.Helper()
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	setWarmRecord(t, db, string(b))
}

// fourAgentsRecorded is a store of six agents whose recorded warm set
// names agent-0 … agent-3's archival partitions, in that order.
func fourAgentsRecorded(t *testing.T) *sql.DB {
	t.Helper()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 6, 10) })
	var set []warmEntryJSON
	for a := range 4 {
		set = append(set, warmEntryJSON{int(search.Archival), fmt.Sprintf("agent-%d", a)})
	}
	setWarmEntries(t, db, set)
	return db
}

// recordLedBy waits for x's prewarming, closes x and checks that the
// record it leaves starts with owner's archival partition: the one a
// search of x's process used, more recent than the whole recorded set.
func recordLedBy(t *testing.T, x *searchindex.Index, db *sql.DB, owner string) {
	t.Helper()
	if _, ok := searchindex.WaitPrewarm(x); !ok {
		t.Fatal("prewarming did not finish")
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := warmSetOf(t, db)
	if want := fmt.Sprintf("%d/%s", search.Archival, owner); len(got) == 0 || got[0] != want {
		t.Errorf("recorded %v: %s, the one partition a search of this process used, should lead", got, owner)
	}
}

func openPartialIndex(t *testing.T, db *sql.DB, limit int64) *searchindex.Index {
	t.Helper()
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(x)
	return x
}

func searchArchival(x *searchindex.Index, owner string) error {
	_, err := x.Search(context.Background(), "wx0 wqx1", search.Scope{Agent: owner}, search.NewOptions().ContentTypes(search.Archival).Mode(search.FTS))
	return err
}

// holdArchival searches owner's archival entries in x until x's cache holds
// them (a search right after another process's write may rank in SQL
// while the cache catches up).
func holdArchival(t *testing.T, x *searchindex.Index, owner string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err := searchArchival(x, owner); err != nil {
			t.Fatal(err)
		}
		if searchindex.TextCacheHeld(x, search.Archival, owner) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never loaded", owner)
		}
	}
}

// TestPrewarmBigPartitionLeftOut: a recorded set whose tail names a
// partition too big for the room left does not load it: prewarming's
// loads evict nothing, the set's head least of all.
func TestPrewarmBigPartitionLeftOut(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	words := "harbour crane lifts cargo onto the quay at dawn while gulls circle over tugs and barges waiting"
	inTx(t, db, func(tx execer) {
		for a := range 4 {
			for i := range 5 {
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprintf("small-%d", a), Content: fmt.Sprintf("%s %d", words, i)})
			}
		}
		for i := range 400 {
			insertArchival(t, tx, archivalRow{Agent: "big", Content: fmt.Sprintf("%s %d w%d", words, i, i)})
		}
	})
	// Each partition's cost, measured as prewarming will load it (from
	// the parts a first load saves).
	saver := openPartialIndex(t, db, 1<<30)
	saver.WarmTextCache(context.Background())
	for _, o := range []string{"small-0", "small-1", "small-2", "small-3", "big"} {
		if err := searchArchival(saver, o); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(saver)
	saver.Close()
	probe := openPartialIndex(t, db, 1<<30)
	defer probe.Close()
	probe.WarmTextCache(context.Background())
	cost := map[string]int64{}
	var stats int64
	for _, o := range []string{"small-0", "small-1", "small-2", "small-3", "big"} {
		before := searchindex.TextCacheHeldBytes(probe)
		if err := searchArchival(probe, o); err != nil {
			t.Fatal(err)
		}
		cost[o] = searchindex.TextCacheHeldBytes(probe) - before
	}
	// What a prewarming cache holds before its loads: its statistics.
	fresh := openPartialIndex(t, db, 1<<30)
	fresh.WarmTextCache(context.Background())
	_, _, stats = searchindex.TextCachePartial(fresh)
	fresh.Close()
	small := cost["small-0"] + cost["small-1"] + cost["small-2"] + cost["small-3"]
	// A bound the big one fits alone, the small ones fill 1/4 of, and
	// both together pass.
	limit := cost["big"] + small/2 // (the statistics were dropped by the time big loads)
	t.Logf("costs %v stats %d limit %d", cost, stats, limit)
	if stats+small+small/4 > limit/10*9 || cost["big"]+small <= limit {
		t.Skipf("sizes do not make the case: %v", cost)
	}
	var set []warmEntryJSON
	for _, o := range []string{"small-0", "small-1", "small-2", "small-3", "big"} {
		set = append(set, warmEntryJSON{int(search.Archival), o})
	}
	setWarmEntries(t, db, set)

	x := openPartialIndex(t, db, limit)
	x.StartPrewarm()
	defer x.Close()
	n, ok := searchindex.WaitPrewarm(x)
	if !ok {
		t.Fatal("prewarming did not finish")
	}
	_, held, bytes := searchindex.TextCachePartial(x)
	t.Logf("prewarmed %d, %d held in %d bytes (bound %d), partitions %d, stats drops %d reads %d", n, held, bytes, limit, searchindex.TextCacheHeldBytes(x), searchindex.TextStatsDrops(x), searchindex.TextStatsReads(x))
	for _, o := range []string{"small-0", "small-1", "small-2", "small-3"} {
		if !searchindex.TextCacheHeld(x, search.Archival, o) {
			t.Errorf("%s, ahead of big in the recorded set, evicted by prewarming's own load of big (held %d of %d loaded)", o, held, n)
		}
	}
}

// TestPrewarmLiveSearchStaysAhead: a search served while prewarming
// loads is a use in this process, more recent than anything the last
// process recorded: its partition stays ahead of every prewarmed one
// (evicted after them, recorded before them).
func TestPrewarmLiveSearchStaysAhead(t *testing.T) {
	db := fourAgentsRecorded(t)

	x := openPartialIndex(t, db, 1<<30)
	inLoad, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, owner string) {
		if owner == "agent-2" { // prewarming, part way through the set
			once.Do(func() { close(inLoad) })
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	})
	x.StartPrewarm()
	<-inLoad
	if err := searchArchival(x, "agent-5"); err != nil { // a live search, now
		t.Fatal(err)
	}
	close(release)
	recordLedBy(t, x, db, "agent-5")
}

// TestPrewarmFailedStillRecords: prewarming that fails (a transient
// error in the cache's build) leaves the process recording its own set
// once its cache recovers and serves agents.
func TestPrewarmFailedStillRecords(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 6, 10) })
	old := fmt.Sprintf(`[{"kind":%d,"owner":"agent-0"}]`, int(search.Archival))
	setWarmRecord(t, db, old)
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.SetTextBackoff(x, time.Millisecond)
	searchindex.SetTextScanFault(x, func(int64) error { return fmt.Errorf("transient read error") })
	searchindex.SetWarmRecordEvery(x, 10*time.Millisecond)
	x.StartPrewarm()
	_, ok := searchindex.WaitPrewarm(x)
	t.Logf("prewarming finished loading: %v", ok)
	searchindex.SetTextScanFault(x, nil)
	searchindex.ForceTextPartial(x) // the store grew past the bound
	time.Sleep(20 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if err := searchArchival(x, "agent-4"); err != nil {
			t.Fatal(err)
		}
		if searchindex.TextCacheHeld(x, search.Archival, "agent-4") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never recovered")
		}
	}
	time.Sleep(100 * time.Millisecond) // ten record periods
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := warmSetOf(t, db)
	if raw == old {
		t.Errorf("the warm set is still the old %s: a process whose prewarming failed once never records, though its cache recovered and held agent-4", raw)
	}
}

// TestPrewarmPhantomOwnersNotRecordedAgain: a recorded set of 8,192
// owners that have no rows (written by hand, or agents deleted since)
// loads empty partitions once; the next record leaves them out, so the
// next process does not load them again.
func TestPrewarmPhantomOwnersNotRecordedAgain(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 4, 5) })
	var set []warmEntryJSON
	for i := range 8192 {
		set = append(set, warmEntryJSON{int(search.Messages), fmt.Sprintf("ghost-%05d-%s", i, strings.Repeat("g", 200))})
	}
	setWarmEntries(t, db, set)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	x := openPartialIndex(t, db, 64<<20)
	var loads atomic.Int64
	searchindex.SetTextLoadHook(x, func(context.Context, search.ContentType, string) { loads.Add(1) })
	x.StartPrewarm()
	n, ok := searchindex.WaitPrewarm(x)
	took := time.Since(start)
	runtime.ReadMemStats(&ms1)
	_, held, bytes := searchindex.TextCachePartial(x)
	t.Logf("phantom set: prewarmed %d (ok %v) in %v, %d loads, %d partitions held in %d bytes, %d MiB allocated, %d goroutines",
		n, ok, took, loads.Load(), held, bytes, (ms1.TotalAlloc-ms0.TotalAlloc)>>20, runtime.NumGoroutine())
	if err := searchArchival(x, "agent-1"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("close (with the record) took %v", time.Since(start))
	_, got := warmSetOf(t, db)
	ghosts := 0
	for _, s := range got {
		if strings.Contains(s, "ghost-") {
			ghosts++
		}
	}
	t.Logf("recorded %d entries, %d of them owners with no rows", len(got), ghosts)
	if ghosts > 0 {
		t.Errorf("the next record keeps %d owners that have no rows (empty partitions are resident): the next process loads them again", ghosts)
	}
}

// TestPrewarmCloseLifecycle: Close right after StartPrewarm, Close
// twice, Close from several goroutines at once, Close while searches and
// writes run; no goroutine outlives Close.
func TestPrewarmCloseLifecycle(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	var queries []string
	inTx(t, db, func(tx execer) { queries = agentsCorpus(t, tx, 6, 10) })
	var set []warmEntryJSON
	for a := range 6 {
		for _, k := range []search.ContentType{search.Archival, search.Messages, search.Blocks} {
			set = append(set, warmEntryJSON{int(k), fmt.Sprintf("agent-%d", a)})
		}
	}
	setWarmEntries(t, db, set)
	base := runtime.NumGoroutine()
	for round := range 20 {
		x := openPartialIndex(t, db, 1<<30)
		searchindex.SetWarmRecordEvery(x, time.Millisecond)
		x.StartPrewarm()
		switch round % 4 {
		case 0: // at once
		case 1:
			time.Sleep(time.Duration(round) * time.Millisecond)
		case 2: // with searches and writes running
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						x.Search(ctx, queries[i%len(queries)], search.Scope{Agent: fmt.Sprintf("agent-%d", (i+g)%6)}, search.NewOptions().Mode(search.FTS))
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					insertArchival(t, db, archivalRow{Agent: fmt.Sprintf("agent-%d", i%6), Content: queries[i%len(queries)]})
				}
			}()
			time.Sleep(time.Duration(5+round) * time.Millisecond)
			closed := make(chan struct{})
			go func() { x.Close(); close(closed) }()
			time.Sleep(2 * time.Millisecond)
			close(stop)
			wg.Wait()
			<-closed
		case 3: // concurrently, three times
			var wg sync.WaitGroup
			for range 3 {
				wg.Add(1)
				go func() { defer wg.Done(); x.Close() }()
			}
			wg.Wait()
		}
		start := time.Now()
		if err := x.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("round %d: Close took %v", round, d)
		}
		x.Close()
		if _, set := warmSetOf(t, db); len(set) == 0 {
			t.Fatalf("round %d: the warm set is gone", round)
		}
	}
	if n := testenv.SettleGoroutines(base+2, 3*time.Second); n > base+2 {
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, base, testenv.GoroutineDump())
	}
}

// TestPrewarmStartAfterClose: StartPrewarm on a closed Index starts
// nothing.
func TestPrewarmStartAfterClose(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 2, 2) })
	x := openPartialIndex(t, db, 1<<30)
	x.Close()
	base := runtime.NumGoroutine()
	x.StartPrewarm()
	time.Sleep(100 * time.Millisecond)
	if n := runtime.NumGoroutine(); n > base {
		t.Errorf("StartPrewarm after Close: %d goroutines running, %d before (the prewarmer's ticker loop, which nothing stops)", n, base)
	}
	x.Close()
}

// TestPrewarmCloseWriteLocked: another process holds SQLite's write
// lock as a prewarming Index closes: Close gives its record up after
// about a second (under the cgo driver, after the busy timeout).
func TestPrewarmCloseWriteLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 4, 5) })
	x := openPartialIndex(t, db, 1<<30)
	x.StartPrewarm()
	searchindex.WaitPrewarm(x)
	for a := range 4 {
		if err := searchArchival(x, fmt.Sprintf("agent-%d", a)); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(x)
	other := openDBAt(t, path)
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	start := time.Now()
	err = x.Close()
	t.Logf("Close with the write lock held elsewhere: %v (err %v)", time.Since(start), err)
	// The cgo driver's busy handler does not see the context end: there
	// the wait is the connection's busy timeout (10 s).
	bound := 3 * time.Second
	if sqlitedriver.Name == "sqlite3" {
		bound = 15 * time.Second
	}
	if d := time.Since(start); d > bound {
		t.Errorf("Close took %v, want under %v", d, bound)
	}
}

// TestPrewarmTwoProcesses: two Index over one file (a server and another
// process): the one that closes last has its set recorded, even one it
// recorded before the other's record.
func TestPrewarmTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engram.db")
	dbA, dbB := openDBAt(t, path), openDBAt(t, path)
	inTx(t, dbA, func(tx execer) { agentsCorpus(t, tx, 8, 5) })
	a, b := openPartialIndex(t, dbA, 1<<30), openPartialIndex(t, dbB, 1<<30)
	t.Cleanup(func() { a.Close(); b.Close() })
	searchindex.SetWarmRecordEvery(a, time.Hour)
	searchindex.SetWarmRecordEvery(b, 5*time.Millisecond)
	a.StartPrewarm()
	b.StartPrewarm()
	searchindex.WaitPrewarm(a)
	searchindex.WaitPrewarm(b)
	holdArchival(t, b, "agent-5")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, set := warmSetOf(t, dbA); len(set) > 0 && strings.HasSuffix(set[0], "/agent-5") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B never recorded")
		}
	}
	holdArchival(t, a, "agent-1")
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, set := warmSetOf(t, dbA); len(set) == 0 || !strings.HasSuffix(set[0], "/agent-1") {
		t.Fatalf("A did not record: %v", set)
	} else {
		t.Logf("after A's Close: %v", set)
	}
	time.Sleep(100 * time.Millisecond)
	_, mid := warmSetOf(t, dbA)
	_, np, _ := searchindex.TextCachePartial(b)
	t.Logf("100ms later, B open: %v; B holds %d partitions, agent-1: %v", mid, np, searchindex.TextCacheHeld(b, search.Archival, "agent-1"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	_, set := warmSetOf(t, dbA)
	if len(set) == 0 || !strings.HasSuffix(set[0], "/agent-5") {
		t.Errorf("recorded %v after B (which held agent-5) closed last: B's Close skipped its record as unchanged from what B last wrote", set)
	}
}

// TestPrewarmOneBadEntry: an entry of the wrong JSON type is passed
// over; the rest of the set loads.
func TestPrewarmOneBadEntry(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 4, 5) })
	for _, v := range []string{
		fmt.Sprintf(`[{"kind":%d,"owner":"agent-1"},{"kind":%d,"owner":7}]`, search.Archival, search.Archival),
		fmt.Sprintf(`[{"kind":%d,"owner":"agent-1"},{"kind":2.0,"owner":"agent-2"}]`, search.Archival),
		fmt.Sprintf(`[{"kind":%d,"owner":"agent-1"},"agent-2"]`, search.Archival),
	} {
		setWarmRecord(t, db, v)
		x := openPartialIndex(t, db, 1<<30)
		x.StartPrewarm()
		n, _ := searchindex.WaitPrewarm(x)
		x.Close()
		if n == 0 {
			t.Errorf("%s: prewarmed nothing; agent-1's entry is fine", v)
		}
	}
}

// TestPrewarmHugeRecord: a recorded value over the size bound is not
// read (nothing decoded, nothing prewarmed); deep nesting is refused.
func TestPrewarmHugeRecord(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 2, 2) })
	var b strings.Builder
	b.WriteString("[")
	for i := range 250_000 { // about 7 MiB: over the 4 MiB bound
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"kind":%d,"owner":"agent-%d"}`, search.Archival, i)
	}
	b.WriteString("]")
	setWarmRecord(t, db, b.String())
	t.Logf("meta value %d MiB", b.Len()>>20)
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	x := openPartialIndex(t, db, 1<<30)
	x.StartPrewarm()
	n, ok := searchindex.WaitPrewarm(x)
	runtime.ReadMemStats(&ms1)
	alloc := ms1.TotalAlloc - ms0.TotalAlloc
	t.Logf("prewarming a 250k-entry record: %v, %d MiB allocated", time.Since(start), alloc>>20)
	x.Close()
	if !ok || n != 0 || alloc > uint64(b.Len()) {
		t.Errorf("a record of %d bytes prewarmed %d partitions (finished %v) and allocated %d bytes: want it left unread", b.Len(), n, ok, alloc)
	}
	deep := strings.Repeat("[", 1<<20) + strings.Repeat("]", 1<<20)
	setWarmRecord(t, db, deep)
	start = time.Now()
	y := openPartialIndex(t, db, 1<<30)
	y.StartPrewarm()
	n, ok = searchindex.WaitPrewarm(y)
	t.Logf("1M-deep nesting: %v", time.Since(start))
	y.Close()
	if !ok || n != 0 {
		t.Errorf("deep nesting prewarmed %d (finished %v)", n, ok)
	}
}

func fillAgents(t *testing.T, st *memory.Store, agents, rows int) {
	t.Helper()
	ctx := context.Background()
	words := strings.Fields("harbour crane lifts cargo onto the quay at dawn while gulls circle over tugs and barges waiting")
	for a := range agents {
		ar := st.Agent(fmt.Sprintf("agent-%d", a)).Archival()
		for i := range rows {
			var b strings.Builder
			for j := range 12 {
				b.WriteString(words[(i*7+j*j+a)%len(words)] + " ")
			}
			if _, err := ar.Insert(ctx, memory.ArchivalEntry{Content: b.String()}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func warmSetAt(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open(sqlitedriver.Name, "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = ?`, searchindex.MetaTextWarmSet).Scan(&v); err != nil && err != sql.ErrNoRows {
		t.Fatal(err)
	}
	return v
}

// TestPrewarmStoreOpenForReembed: a store opened with OpenForReembed and
// another embedder's dimensions, whose vector cache cannot load, still
// records its text cache's set.
func TestPrewarmStoreOpenForReembed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "emb.db")
	w, err := memory.Open(ctx, path, &memory.Options{Embedder: search.NewOffline(32), TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	fillAgents(t, w, 10, 30)
	w.Close()
	var logs bytes.Buffer
	st, err := memory.Open(ctx, path, &memory.Options{Embedder: search.NewOffline(64), OpenForReembed: true, Prewarm: true,
		TextCacheBytes: 32 << 10, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := searchindex.WaitPrewarm(storeaccess.Index(st)); !ok {
		t.Logf("prewarming did not finish loading")
	}
	if partial, _, _ := searchindex.TextCachePartial(storeaccess.Index(st)); !partial {
		t.Fatal("want a partial text cache")
	}
	for _, a := range []string{"agent-2", "agent-7"} {
		if _, err := st.Agent(a).Search(ctx, "crane cargo", search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "prewarm") {
			t.Log(l)
		}
	}
	if v := warmSetAt(t, path); !strings.Contains(v, "agent-2") {
		t.Errorf("recorded %q: the text cache held agent-2 and agent-7, but a store whose vector cache failed to warm never records", v)
	}
}

// TestPrewarmStoreNoTextCache: Prewarm without a text cache
// (TextCacheBytes -1) does nothing and records nothing.
func TestPrewarmStoreNoTextCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "none.db")
	base := runtime.NumGoroutine()
	for _, limit := range []int64{-1, 1 << 30} {
		st, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: limit, Prewarm: true})
		if err != nil {
			t.Fatal(err)
		}
		fillAgents(t, st, 3, 5)
		if err := storeaccess.Index(st).WaitPrewarm(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Agent("agent-1").Search(ctx, "crane", search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if v := warmSetAt(t, path); v != "" {
			t.Errorf("limit %d: recorded %q", limit, v)
		}
	}
	if n := testenv.SettleGoroutines(base, 3*time.Second); n > base {
		t.Errorf("%d goroutines after Close, %d before", n, base)
	}
}

// TestPrewarmCloseFromASubscriber: memory.Store.Close called from a
// block subscriber inside a write returns promptly and records.
func TestPrewarmCloseFromASubscriber(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	a, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: 32 << 10, Prewarm: true})
	if err != nil {
		t.Fatal(err)
	}
	fillAgents(t, a, 10, 30)
	b, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	searchindex.WaitPrewarm(storeaccess.Index(a))
	for _, ag := range []string{"agent-2", "agent-7"} {
		if _, err := a.Agent(ag).Search(ctx, "crane cargo", search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(storeaccess.Index(a))
	view, err := a.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan time.Duration, 1)
	view.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			start := time.Now()
			a.Close()
			closed <- time.Since(start)
		}
	})
	if err := b.Agent("ada").Block("notes").Append(ctx, " b"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- view.AppendText(" a", blocks.Agent) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Close from a Remote event's callback inside a write never returned")
	}
	d := <-closed
	t.Logf("Close inside the write took %v, the write %v; recorded %q", d, time.Since(start), warmSetAt(t, path))
	if d > time.Second {
		t.Errorf("Close from a subscriber inside a write took %v: its warm-set record waits for the write it runs in", d)
	}
}

// TestPrewarmInvalidUTF8Owner: an agent id that is not UTF-8 (SQLite
// stores it as is) is recorded as its bytes, not as JSON's U+FFFD
// stand-in, and the next process prewarms that agent.
func TestPrewarmInvalidUTF8Owner(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	owner := "agent-\xff\xfe"
	inTx(t, db, func(tx execer) {
		agentsCorpus(t, tx, 2, 2)
		for i := range 5 {
			insertArchival(t, tx, archivalRow{Agent: owner, Content: fmt.Sprintf("wx0 wqx1 %d", i)})
		}
	})
	x := openPartialIndex(t, db, 1<<30)
	x.StartPrewarm()
	searchindex.WaitPrewarm(x)
	if err := searchArchival(x, owner); err != nil {
		t.Fatal(err)
	}
	x.Close()
	raw, _ := warmSetOf(t, db)
	y := openPartialIndex(t, db, 1<<30)
	y.StartPrewarm()
	defer y.Close()
	n, _ := searchindex.WaitPrewarm(y)
	if !searchindex.TextCacheHeld(y, search.Archival, owner) {
		t.Errorf("recorded %s, prewarmed %d: the agent %q is not held", raw, n, owner)
	}
}

// TestPrewarmKeepsALiveLoadsUse: a search that starts loading an agent
// just before prewarming reaches it keeps its use: prewarming waits for
// that load and leaves its stamp alone, so the agent leads the record.
func TestPrewarmKeepsALiveLoadsUse(t *testing.T) {
	db := fourAgentsRecorded(t)
	x := openPartialIndex(t, db, 1<<30)
	at1, go1 := make(chan struct{}), make(chan struct{})
	at2, go2 := make(chan struct{}), make(chan struct{})
	var once1, once2 sync.Once
	searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, owner string) {
		switch owner {
		case "agent-1": // prewarming's second load
			once1.Do(func() { close(at1); <-go1 })
		case "agent-2": // the search's load
			once2.Do(func() { close(at2); <-go2 })
		}
	})
	x.StartPrewarm()
	<-at1
	searched := make(chan error, 1)
	go func() { searched <- searchArchival(x, "agent-2") }()
	<-at2
	close(go1) // prewarming goes on to agent-2 and waits for the search's load
	time.Sleep(50 * time.Millisecond)
	close(go2)
	if err := <-searched; err != nil {
		t.Fatal(err)
	}
	recordLedBy(t, x, db, "agent-2")
}

// TestPrewarmStartRacesClose: StartPrewarm and Close at once leave no
// goroutine behind (and, under -race, no data race).
func TestPrewarmStartRacesClose(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	inTx(t, db, func(tx execer) { agentsCorpus(t, tx, 2, 2) })
	base := runtime.NumGoroutine()
	var xs []*searchindex.Index
	for range 50 {
		x := openPartialIndex(t, db, 1<<30)
		xs = append(xs, x)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); x.StartPrewarm() }()
		go func() { defer wg.Done(); x.Close() }()
		wg.Wait()
	}
	if n := testenv.SettleGoroutines(base+2, 3*time.Second); n > base+2 {
		t.Errorf("%d goroutines, %d before: prewarmers started as their Index closed, never stopped", n, base)
	}
	for _, x := range xs {
		x.Close()
	}
}
