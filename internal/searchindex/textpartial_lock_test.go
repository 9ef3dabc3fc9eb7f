package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// loadBound is how long a search may take while another owner's partition
// load is held: a resident agent's search takes well under a millisecond,
// and one that waits for the held load never ends until it is let go.
const loadBound = 3 * time.Second

// loadStore writes a small agent's rows and a big one's, and returns the
// store, an Index ranking in SQL and one with a partial text cache that
// holds the small agent's archival partition.
func loadStore(t *testing.T, bigRows int) (db *sql.DB, path string, sqlx, x *searchindex.Index) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "engram.db")
	db = openDBAt(t, path)
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		insertArchival(t, tx, archivalRow{Agent: "small", Content: words[i%6] + " " + words[(i/6)%6] + " small"})
	}
	for i := range bigRows {
		insertArchival(t, tx, archivalRow{Agent: "big", Content: fmt.Sprint(words[i%6], " ", words[(i/3)%6], " big row ", i)})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	sqlx, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqlx.Close() })
	x, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 64 << 20, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	if _, err := x.Search(ctx, "wing", search.Scope{Agent: "small"}, archivalFTS()); err != nil {
		t.Fatal(err)
	}
	if !searchindex.TextCacheHeld(x, search.Archival, "small") {
		t.Fatal("the small agent's partition did not load")
	}
	return db, path, sqlx, x
}

func archivalFTS() *search.Options {
	return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(10)
}

// holdLoad makes the first load of owner's partitions in x wait, once
// its rows are read, until release is closed or the load's context ends;
// entered is closed when it starts waiting.
func holdLoad(x *searchindex.Index, owner string) (entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	searchindex.SetTextLoadHook(x, func(ctx context.Context, _ search.ContentType, o string) {
		if o != owner || !first.CompareAndSwap(false, true) {
			return
		}
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	return entered, release
}

// searchAsync runs x.Search in a goroutine; the result arrives on the
// channel.
type searchResult struct {
	rs  []search.Result
	err error
}

func searchAsync(ctx context.Context, x *searchindex.Index, q, agent string) chan searchResult {
	ch := make(chan searchResult, 1)
	go func() {
		rs, err := x.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS())
		ch <- searchResult{rs, err}
	}()
	return ch
}

func await(t *testing.T, ch chan searchResult, what string) searchResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(loadBound):
		t.Fatalf("%s: no answer within %v", what, loadBound)
		return searchResult{}
	}
}

func sameAsSQL(t *testing.T, ctx context.Context, sqlx *searchindex.Index, q, agent string, got []search.Result) {
	t.Helper()
	sameAsSQLWith(t, ctx, sqlx, q, agent, archivalFTS(), got)
}

// sameAsSQLWith requires got, agent's results for q with opts, to rank as
// sqlx (ranking in SQL) does.
func sameAsSQLWith(t *testing.T, ctx context.Context, sqlx *searchindex.Index, q, agent string, opts *search.Options, got []search.Result) {
	t.Helper()
	want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%s %q: SQL %d results, cache %d", agent, q, len(want), len(got))
	}
	if err := sameRanking(want, got); err != nil {
		t.Fatalf("%s %q: %v\nSQL   %v\ncache %v", agent, q, err, keys(want), keys(got))
	}
}

// TestTextCachePartialLoadDoesNotBlock: while one owner's partition loads
// (held in the middle by a hook), a resident agent's search answers from
// its partition at once; a search waiting for that load returns as soon
// as its context ends; and the load's starter giving up (cancelled) does
// not fail another search waiting for the same partition, which loads it
// itself.
func TestTextCachePartialLoadDoesNotBlock(t *testing.T) {
	ctx := context.Background()
	// 2000 rows for the big owner with the long tests, 500 otherwise: its
	// load is held by the hook either way.
	_, _, sqlx, x := loadStore(t, testenv.Scale(500, 2000))
	entered, release := holdLoad(x, "big")
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo()

	startCtx, cancelStarter := context.WithCancel(ctx)
	defer cancelStarter()
	starter := searchAsync(startCtx, x, "wing", "big")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the big agent's load did not start")
	}

	start := time.Now()
	small := await(t, searchAsync(ctx, x, "flutter", "small"), "the small agent's search during the big load")
	if small.err != nil {
		t.Fatal(small.err)
	}
	t.Logf("small agent's search during the big load: %v", time.Since(start))
	if len(small.rs) == 0 {
		t.Fatal("the small agent's search found nothing")
	}
	sameAsSQL(t, ctx, sqlx, "flutter", "small", small.rs)

	// A second search of the big agent waits for the load; cancelled, it
	// returns at once.
	waitCtx, cancelWaiter := context.WithCancel(ctx)
	waiter := searchAsync(waitCtx, x, "wing", "big")
	time.Sleep(20 * time.Millisecond)
	cancelWaiter()
	if r := await(t, waiter, "a cancelled search waiting for the load"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("a cancelled search waiting for the load: %d results, err %v; want context.Canceled", len(r.rs), r.err)
	}

	// The starter gives up; a third search, waiting too, must not fail
	// for it.
	third := searchAsync(ctx, x, "mach", "big")
	time.Sleep(20 * time.Millisecond)
	cancelStarter()
	if r := await(t, starter, "the cancelled starter of the load"); r.err == nil {
		t.Logf("the cancelled starter answered anyway (%d results)", len(r.rs))
	}
	r := await(t, third, "a search waiting for a load whose starter gave up")
	if r.err != nil {
		t.Fatalf("a search waiting for a load whose starter gave up: %v", r.err)
	}
	if len(r.rs) == 0 {
		t.Fatal("the big agent's search found nothing")
	}
	sameAsSQL(t, ctx, sqlx, "mach", "big", r.rs)
	if !searchindex.TextCacheHeld(x, search.Archival, "big") {
		t.Fatal("the big agent's partition is not held after its load")
	}
}

// TestTextCachePartialLoadCatchesUp: writes committed while a partition
// loads (after its rows were read), and applied to the cache by another
// agent's search before the load is, reach the loaded partition: rows
// added, changed, deleted, moved to and from the owner.
func TestTextCachePartialLoadCatchesUp(t *testing.T) {
	ctx := context.Background()
	_, path, sqlx, x := loadStore(t, 300)
	other := openDBAt(t, path)
	entered, release := holdLoad(x, "big")
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo()

	big := searchAsync(ctx, x, "wing", "big")
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the big agent's load did not start")
	}
	for _, q := range []string{
		`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from) VALUES ('big', 'wing wing fresh', '{}', '[]', '', 0, 0)`,
		`UPDATE archival SET content = 'shock wing edited' WHERE agent = 'big' AND id % 7 = 0`,
		`DELETE FROM archival WHERE agent = 'big' AND id % 7 = 1`,
		`UPDATE archival SET valid_to = created_at WHERE agent = 'big' AND id % 7 = 2`,
		`UPDATE archival SET agent = 'small' WHERE agent = 'big' AND id % 7 = 3`,
		`UPDATE archival SET agent = 'big' WHERE id = (SELECT min(id) FROM archival WHERE agent = 'small')`,
	} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The small agent's search catches the cache up past the load's read.
	small := await(t, searchAsync(ctx, x, "wing", "small"), "the small agent's search during the big load")
	if small.err != nil {
		t.Fatal(small.err)
	}
	sameAsSQL(t, ctx, sqlx, "wing", "small", small.rs)
	letGo()
	if r := await(t, big, "the big agent's search"); r.err != nil {
		t.Fatal(r.err)
	}
	if !searchindex.TextCacheHeld(x, search.Archival, "big") {
		t.Fatal("the big agent's partition is not held after its load")
	}
	if searchindex.TextLoadReplays(x) == 0 {
		t.Fatal("the load was not caught up past its snapshot: the test did not exercise it")
	}
	answers := searchindex.TextCacheAnswers(x)
	for _, agent := range []string{"big", "small"} {
		for _, q := range []string{"wing", "shock", "fresh", "flutter layer", "mach"} {
			got, err := x.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS())
			if err != nil {
				t.Fatal(err)
			}
			sameAsSQL(t, ctx, sqlx, q, agent, got)
			got, err = x.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS().IncludeSuperseded(true))
			if err != nil {
				t.Fatal(err)
			}
			want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, archivalFTS().IncludeSuperseded(true))
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRanking(want, got); err != nil || len(want) != len(got) {
				t.Fatalf("%s %q with superseded: %v\nSQL   %v\ncache %v", agent, q, err, keys(want), keys(got))
			}
		}
	}
	if n := searchindex.TextCacheAnswers(x) - answers; n < 20 {
		t.Fatalf("the cache answered %d of 20 legs", n)
	}
}

// BenchmarkTextCachePartialLoadWait: a resident small agent's searches
// while a 30k-row owner's partition loads (each op a fresh Index and one
// such load): small-max-µs and small-p50-µs are what those searches took,
// load-ms the big owner's first search.
func BenchmarkTextCachePartialLoadWait(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "engram.db")
	db := openDBAt(b, path)
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		insertArchival(b, tx, archivalRow{Agent: "small", Content: words[i%6] + " " + words[(i/6)%6] + " small"})
	}
	for i := range 30_000 {
		insertArchival(b, tx, archivalRow{Agent: "big", Content: fmt.Sprint(words[i%6], " ", words[(i/3)%6], " big row number ", i, " of the owner with many rows")})
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	var waits []time.Duration
	var loads time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 256 << 20, VectorCacheBytes: -1})
		if err != nil {
			b.Fatal(err)
		}
		searchindex.ForceTextPartial(x)
		_ = x.WarmTextCache(ctx)
		for range 3 {
			if _, err := x.Search(ctx, "wing", search.Scope{Agent: "small"}, archivalFTS()); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := x.Search(ctx, "wing", search.Scope{Agent: "big"}, archivalFTS()); err != nil {
				b.Error(err)
			}
		}()
		time.Sleep(5 * time.Millisecond) // the load under way
	loop:
		for {
			select {
			case <-done:
				break loop
			default:
			}
			t0 := time.Now()
			if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "small"}, archivalFTS()); err != nil {
				b.Fatal(err)
			}
			waits = append(waits, time.Since(t0))
			time.Sleep(time.Millisecond)
		}
		loads += time.Since(start)
		b.StopTimer()
		x.Close()
		b.StartTimer()
	}
	slices.Sort(waits)
	if len(waits) > 0 {
		b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "small-max-µs")
		b.ReportMetric(float64(waits[len(waits)/2].Microseconds()), "small-p50-µs")
	}
	b.ReportMetric(float64(loads.Milliseconds())/float64(b.N), "load-ms")
}

// BenchmarkTextCachePartialForeignWrite: a resident agent's FTS search
// in a partial cache over 500 agents × 100 archival rows, after another
// (not resident) agent's write before each search (the write untimed):
// none, an insert, a supersession (valid_to set, the new row inserted
// and linked, as memory writes it) or a delete. A change the statistics cannot
// follow makes the search count its terms in FTS5 again, unless they may
// drift (delete-drift: IndexOptions.TextStatsDrift).
func BenchmarkTextCachePartialForeignWrite(b *testing.B) {
	ctx := context.Background()
	db := openDBAt(b, filepath.Join(b.TempDir(), "engram.db"))
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "boundary", "vortex"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for a := range 500 {
		for i := range 100 {
			insertArchival(b, tx, archivalRow{Agent: fmt.Sprint("agent-", a), Content: fmt.Sprint(words[(a+i)%8], " ", words[i%5], " ", words[(a*i)%7], " note ", i)})
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	open := func(drift float64) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 4 << 20, VectorCacheBytes: -1, TextStatsDrift: drift})
		if err != nil {
			b.Fatal(err)
		}
		searchindex.ForceTextPartial(x)
		_ = x.WarmTextCache(ctx)
		return x
	}
	x, xd := open(0), open(0.005)
	defer x.Close()
	defer xd.Close()
	writes := map[string]func(i int){
		"none": func(int) {},
		"insert": func(i int) {
			insertArchival(b, db, archivalRow{Agent: fmt.Sprint("agent-", 1+i%499), Content: "wing flow inserted"})
		},
		"supersede": func(i int) {
			agent := fmt.Sprint("agent-", 1+i%499)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			var old int64
			if err := tx.QueryRowContext(ctx, `SELECT id FROM archival WHERE agent = ? AND valid_to IS NULL ORDER BY id LIMIT 1`, agent).Scan(&old); err != nil {
				b.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE archival SET valid_to = created_at WHERE id = ?`, old); err != nil {
				b.Fatal(err)
			}
			id := insertArchival(b, tx, archivalRow{Agent: agent, Content: "wing flow superseding"})
			if _, err := tx.ExecContext(ctx, `UPDATE archival SET superseded_by = ? WHERE id = ?`, id, old); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		},
	}
	deleted := 0
	writes["delete"] = func(i int) {
		// Each round deletes another agent's row, never agent-0's.
		deleted++
		if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = (SELECT id FROM archival WHERE agent = ? ORDER BY id LIMIT 1)`, fmt.Sprint("agent-", 1+deleted%499)); err != nil {
			b.Fatal(err)
		}
	}
	// delete-drift: the deletes with IndexOptions.TextStatsDrift 0.005,
	// which keeps the statistics through them (a pass per 0.5% of the
	// rows drifting).
	writes["delete-drift"] = writes["delete"]
	for _, name := range []string{"none", "insert", "supersede", "delete", "delete-drift"} {
		y := x
		if name == "delete-drift" {
			y = xd
		}
		b.Run(name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				writes[name](i)
				b.StartTimer()
				if _, err := y.Search(ctx, "wing flutter", search.Scope{Agent: "agent-0"}, archivalFTS()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, y := range []*searchindex.Index{x, xd} {
		if !searchindex.TextCacheHeld(y, search.Archival, "agent-0") {
			b.Fatal("agent-0's partition is not resident: the benchmark measures SQL")
		}
	}
}

// BenchmarkTextCachePartialForeignAppend: a resident agent's FTS search
// over messages in a partial cache of 500 agents × 50 messages, after
// another (not resident) agent appends a message to its conversation
// before each search (the write untimed), or after no write.
func BenchmarkTextCachePartialForeignAppend(b *testing.B) {
	ctx := context.Background()
	db := openDBAt(b, filepath.Join(b.TempDir(), "engram.db"))
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "boundary", "vortex"}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for a := range 500 {
		for i := range 50 {
			insertMessage(b, tx, fmt.Sprint("agent-", a), "user", fmt.Sprint(words[(a+i)%8], " ", words[i%5], " ", words[(a*i)%7], " said ", i), baseTime)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 4 << 20, VectorCacheBytes: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages) }
	for _, name := range []string{"none", "append"} {
		b.Run(name, func(b *testing.B) {
			reads := searchindex.TextStatsReads(x)
			for i := range b.N {
				if name == "append" {
					b.StopTimer()
					insertMessage(b, db, fmt.Sprint("agent-", 1+i%499), "assistant", "wing flow appended", baseTime)
					b.StartTimer()
				}
				if _, err := x.Search(ctx, "wing flutter", search.Scope{Agent: "agent-0"}, opts()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(searchindex.TextStatsReads(x)-reads)/float64(b.N), "stats-reads/op")
		})
	}
	if !searchindex.TextCacheHeld(x, search.Messages, "agent-0") {
		b.Fatal("agent-0's partition is not resident: the benchmark measures SQL")
	}
}
