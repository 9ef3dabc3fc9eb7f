package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// lockBlockRow locks owner's block's row in a transaction of another
// client of dsn (a report, a maintenance script), which the caller ends.
func lockBlockRow(t *testing.T, dsn, owner, label string) *sql.Tx {
	t.Helper()
	tx, err := holderDB(t, dsn).BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT 1 FROM blocks WHERE owner = $1 AND label = $2 FOR UPDATE`, owner, label); err != nil {
		t.Fatal(err)
	}
	return tx
}

// holderDB is a pool of another client of dsn, closed with t.
func holderDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openStores opens n stores (as n processes would) on one fresh database.
func openStores(t *testing.T, n int, o *memory.Options) ([]*memory.Store, string) {
	t.Helper()
	dsn := pgtest.Start(t).NewDatabase(t)
	var out []*memory.Store
	for range n {
		s, err := memory.Open(context.Background(), dsn, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out, dsn
}

// Appends from two stores racing to fill one block end exactly at its
// character limit: every acknowledged append is in the block, none is
// lost, and the limit is neither passed nor left short.
func TestOneTripAppendsFromTwoStoresStopAtLimit(t *testing.T) {
	ctx := context.Background()
	ss, dsn := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
	const line, limit = 10, 600
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: limit}); err != nil {
		t.Fatal(err)
	}
	var (
		mu  sync.Mutex
		ok  []string
		wg  sync.WaitGroup
		bad atomic.Value
	)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := ss[w%2].Agent("ann").Block("notes")
			for i := 0; ; i++ {
				s := fmt.Sprintf("w%d-%06d\n", w, i)
				err := b.Append(ctx, s)
				if err != nil {
					if !errors.Is(err, blocks.ErrLimit) {
						bad.Store(err)
					}
					return
				}
				mu.Lock()
				ok = append(ok, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, _ := bad.Load().(error); err != nil {
		t.Fatalf("append failed other than at the limit: %v", err)
	}
	fresh, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, err := fresh.Agent("ann").Block("notes").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != limit || len(ok)*line != limit {
		t.Errorf("block holds %d characters from %d acknowledged appends of %d, want exactly the limit %d", len(got), len(ok), line, limit)
	}
	for _, s := range ok {
		if !strings.Contains(got, s) {
			t.Errorf("acknowledged append %q is not in the block", s)
		}
	}
}

// A sharee appending (Append permission) from another store while the
// owner revokes the share: once Unshare returned, no append of the
// sharee's succeeds, and every append acknowledged is in the block.
func TestOneTripAppendRefusedOnceShareRevoked(t *testing.T) {
	ctx := context.Background()
	ss, _ := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
	owner := ss[0].Agent("ann").Block("notes")
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := owner.Share(ctx, "bob", blocks.Append); err != nil {
		t.Fatal(err)
	}
	sharee := ss[1].Agent("bob").Shared("ann", "notes")
	var (
		revoked atomic.Bool
		acked   []string
		late    []string
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			after := revoked.Load()
			s := fmt.Sprintf("bob %05d\n", i)
			if err := sharee.Append(ctx, s); err == nil {
				acked = append(acked, s)
				if after {
					late = append(late, s)
				}
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if err := owner.Unshare(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	revoked.Store(true)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	<-done
	t.Logf("%d appends acknowledged", len(acked))
	if len(late) > 0 {
		t.Errorf("%d appends acknowledged after the share was revoked, first %q", len(late), late[0])
	}
	got, err := owner.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "bob "); n != len(acked) {
		t.Errorf("block holds %d of the sharee's appends, %d were acknowledged", n, len(acked))
	}
}

// An append from one store reaches another store that has the block
// cached (the notification after the one-round-trip commit).
func TestOneTripAppendReachesOtherStore(t *testing.T) {
	ctx := context.Background()
	ss, _ := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	w, r := ss[0].Agent("ann").Block("notes"), ss[1].Agent("ann").Block("notes")
	for i := range 5 {
		if err := w.Append(ctx, fmt.Sprintf("warm %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Render(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := w.Append(ctx, "the last one\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		got, err := r.Render(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(got, "the last one") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other store still renders %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A cancelled context: the append reports the cancellation and writes
// nothing.
func TestOneTripAppendCancelled(t *testing.T) {
	ss, _ := openStores(t, 1, &memory.Options{TextCacheBytes: -1})
	b := ss[0].Agent("ann").Block("notes")
	if _, err := ss[0].Agent("ann").CreateBlock(context.Background(), memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if err := b.Append(context.Background(), "kept\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Append(ctx, "dropped\n"); !errors.Is(err, context.Canceled) {
		t.Errorf("append with a cancelled context: %v, want context.Canceled", err)
	}
	got, err := b.Render(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != "kept\n" {
		t.Errorf("block holds %q, want %q", got, "kept\n")
	}
}

// Appends from one store racing a change of the block in another: once
// the change returned, no append that started after it is acknowledged
// where the change forbids it, and every acknowledged append that the
// change keeps is in the block.
func TestOneTripAppendRacingBlockChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(ctx context.Context, b *memory.Block) error
		gone   bool // the block (and its text) is gone afterwards
	}{
		{"read-only", func(ctx context.Context, b *memory.Block) error { return b.SetPermission(ctx, blocks.ReadOnly) }, false},
		{"delete", func(ctx context.Context, b *memory.Block) error { return b.Delete(ctx) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ss, _ := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
			if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20, Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			w := ss[0].Agent("ann").Block("notes")
			var (
				changed     atomic.Bool
				acked, late []string
				stop        = make(chan struct{})
				done        = make(chan struct{})
			)
			go func() {
				defer close(done)
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if i%4 == 3 {
						// A breath between bursts: an unbroken stream
						// starves the change (see
						// TestReconfigureUnderUnbrokenAppends).
						time.Sleep(time.Millisecond)
					}
					after := changed.Load()
					s := fmt.Sprintf("ann %05d\n", i)
					if err := w.Append(ctx, s); err == nil {
						acked = append(acked, s)
						if after {
							late = append(late, s)
						}
					}
				}
			}()
			time.Sleep(300 * time.Millisecond)
			if err := tc.change(ctx, ss[1].Agent("ann").Block("notes")); err != nil {
				t.Fatal(err)
			}
			changed.Store(true)
			time.Sleep(300 * time.Millisecond)
			close(stop)
			<-done
			t.Logf("%d appends acknowledged", len(acked))
			if len(late) > 0 {
				t.Errorf("%d appends acknowledged after the change returned, first %q", len(late), late[0])
			}
			if tc.gone {
				return
			}
			got, err := ss[1].Agent("ann").Block("notes").Render(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(got, "ann "); n != len(acked) {
				t.Errorf("block holds %d appends, %d were acknowledged", n, len(acked))
			}
		})
	}
}

// Log appends from two stores past the block's limit: entries rotate
// into archival, and every acknowledged entry is once in the block or in
// archival, nothing twice.
func TestOneTripLogAppendsRotateFromTwoStores(t *testing.T) {
	ctx := context.Background()
	ss, dsn := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
	if _, err := ss[0].Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 300, Permission: blocks.Append,
		Schema: schema.Log{Retention: 3}}); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := ss[w%2].Agent("a").Block("events")
			for i := range 40 {
				m := fmt.Sprintf("entry w%d-%03d", w, i)
				if err := b.Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: m}); err != nil {
					t.Errorf("append %q: %v", m, err)
					continue
				}
				mu.Lock()
				acked = append(acked, m)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fresh, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	d, err := fresh.Agent("a").Block("events").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := d.LogEntries(0)
	if err != nil {
		t.Fatal(err)
	}
	arch, err := fresh.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:events"}, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Message]++
	}
	for _, e := range arch {
		seen[e.Content]++
	}
	for m, n := range seen {
		if n != 1 {
			t.Errorf("entry %q is %d times in the block and archival, want once", m, n)
		}
	}
	for _, m := range acked {
		if seen[m] != 1 {
			t.Errorf("acknowledged entry %q is %d times in the block and archival, want once", m, seen[m])
		}
	}
	t.Logf("%d acknowledged, %d in the block, %d rotated", len(acked), len(entries), len(arch))
}

// Appends from two stores across many compactions (a small
// CompactAfter): a fresh store loads every acknowledged append, once.
func TestOneTripAppendsAcrossCompactions(t *testing.T) {
	ctx := context.Background()
	o := &memory.Options{TextCacheBytes: -1, CompactAfter: 5}
	ss, dsn := openStores(t, 2, o)
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := ss[w%2].Agent("ann").Block("notes")
			for i := range 40 {
				s := fmt.Sprintf("w%d-%03d\n", w, i)
				if err := b.Append(ctx, s); err != nil {
					t.Errorf("append %q: %v", s, err)
					continue
				}
				mu.Lock()
				acked = append(acked, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fresh, err := memory.Open(ctx, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, err := fresh.Agent("ann").Block("notes").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range acked {
		if n := strings.Count(got, s); n != 1 {
			t.Errorf("acknowledged append %q is %d times in the block, want once", s, n)
		}
	}
	if len(got) != len(acked)*len("w0-000\n") {
		t.Errorf("block holds %d characters, want %d", len(got), len(acked)*len("w0-000\n"))
	}
}

// A reconfiguration (here SetPinned, then SetPermission) from one store while another
// appends to the block without a pause: the reconfiguration checks the
// cached document outside the block's lock, which an unbroken stream of
// appends from another process keeps a write behind; after a few such
// attempts it takes the block's lock and reads the row inside it, so it
// waits its turn instead of failing with ErrPersist ("the block kept
// changing under it").
func TestReconfigureUnderUnbrokenAppends(t *testing.T) {
	ctx := context.Background()
	ss, _ := openStores(t, 2, &memory.Options{TextCacheBytes: -1})
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20, Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		w := ss[0].Agent("ann").Block("notes")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = w.Append(ctx, fmt.Sprintf("ann %05d\n", i))
		}
	}()
	defer func() { close(stop); <-done }()
	time.Sleep(200 * time.Millisecond)
	for i := range 10 {
		if err := ss[1].Agent("ann").Block("notes").SetPinned(ctx, i%2 == 0); err != nil {
			t.Fatalf("reconfiguration %d under appends from another store: %v", i, err)
		}
	}
	// The last reconfiguration holds, seen from the appending store.
	if err := ss[1].Agent("ann").Block("notes").SetPermission(ctx, blocks.ReadWrite); err != nil {
		t.Fatalf("permission under appends from another store: %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if err := ss[0].Agent("ann").Block("notes").SetPermission(ctx, blocks.Admin); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("the appending store reconfigured a ReadWrite block: %v", err)
	}
}

// The block's row locked by another transaction that does not hold the
// block's write lock (so the one-round-trip path starts and its UPDATE
// waits, bounded by the lock timeout): the append fails having written
// nothing, its connection is rolled back and reused, and the block takes
// appends again once the row is free.
func TestOneTripAppendRowLockTimeout(t *testing.T) {
	ctx := context.Background()
	ss, dsn := openStores(t, 1, &memory.Options{TextCacheBytes: -1, BusyTimeout: 200 * time.Millisecond})
	b := ss[0].Agent("ann").Block("notes")
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Append(ctx, fmt.Sprintf("before %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	holder := lockBlockRow(t, dsn, "ann", "notes")
	start := time.Now()
	appendErr := b.Append(ctx, "while the row is locked\n")
	took := time.Since(start)
	if appendErr == nil {
		t.Errorf("append succeeded while another transaction held the block's row")
	}
	if took > 5*time.Second {
		t.Errorf("append took %v with a 200ms lock timeout", took)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := b.Append(ctx, fmt.Sprintf("after %d\n", i)); err != nil {
			t.Fatalf("append %d after the row was freed: %v", i, err)
		}
	}
	got, err := b.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "while the row is locked") || strings.Count(got, "\n") != 8 {
		t.Errorf("block holds %q, want the 3 appends before and 5 after, not the refused one", got)
	}
	t.Logf("refused after %v: %v", took, appendErr)
}

// The store's connections killed by the server between two appends
// (pg_terminate_backend, a restart, a proxy's idle cut) less than a
// second after their last use: the next append gets a dead pooled
// connection (the pool pings only a connection idle for a second or
// more), whose BEGIN fails before anything ran, on the one-round-trip
// and the ordinary path alike; the write runs again on a fresh
// connection and succeeds. Nothing acknowledged is lost or doubled.
func TestAppendRightAfterConnectionsKilled(t *testing.T) {
	ctx := context.Background()
	ss, dsn := openStores(t, 1, &memory.Options{TextCacheBytes: -1})
	b := ss[0].Agent("ann").Block("notes")
	if _, err := ss[0].Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	acked := 0
	for round := range 5 {
		for i := range 3 {
			if err := b.Append(ctx, fmt.Sprintf("r%d-%d\n", round, i)); err != nil {
				t.Fatal(err)
			}
			acked++
		}
		if _, err := raw.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`); err != nil {
			t.Fatal(err)
		}
		err := b.Append(ctx, fmt.Sprintf("after kill %d\n", round))
		if err == nil {
			acked++
		} else {
			t.Errorf("append right after the connections were killed (round %d): %v", round, err)
		}
	}
	got, err := b.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, "\n"); n != acked {
		t.Errorf("block holds %d lines, %d appends acknowledged:\n%s", n, acked, got)
	}
}

// Through a pooler whose query_timeout (1 s) is shorter than the wait for
// the block's row, which another client holds for 3 s: the append's one
// round trip (BEGIN, locks, claim and COMMIT sent together) gets the
// pooler's FATAL before any result, while its server backend, which
// never noticed, commits once the row is free. The store takes the FATAL
// for a write that did not run and writes again, and the second try
// finds the first one's change in the block: the append is acknowledged
// and in the block once. It was in the block twice. With a rebase by
// another store between the two tries (it waits for the block's lock
// behind the first), the change is in the archived epoch.
func TestAppendCutByAPoolersQueryTimeoutIsWrittenOnce(t *testing.T) {
	srv := pgtest.Start(t).PoolerWith(t, "", "query_timeout = 1")
	for _, rebase := range []bool{false, true} {
		t.Run(fmt.Sprint("rebase=", rebase), func(t *testing.T) {
			ctx := context.Background()
			dsn := srv.NewDatabase(t)
			s, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := s.Agent("ann").Block("notes")
			if _, err := s.Agent("ann").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 { // the next append is applied ahead and tried in one round trip
				if err := b.Append(ctx, fmt.Sprintf("<warm%d>", i)); err != nil {
					t.Fatal(err)
				}
			}
			// The row's holder (a report, a maintenance script) and the
			// rebasing store connect past the pooler, whose timeout would
			// cut them too.
			direct := srv.DirectURL(t, dsn)
			other, err := memory.Open(ctx, direct, &memory.Options{TextCacheBytes: -1, BusyTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			holder := lockBlockRow(t, direct, "ann", "notes")
			done := make(chan error, 1)
			go func() { done <- b.Append(ctx, "<X>") }()
			rebased := make(chan error, 1)
			if rebase {
				time.Sleep(300 * time.Millisecond) // the first try holds the block's lock
				go func() { rebased <- other.Agent("ann").Block("notes").Rebase(ctx) }()
			}
			time.Sleep(3 * time.Second)
			if err := holder.Rollback(); err != nil {
				t.Fatal(err)
			}
			var appendErr error
			select {
			case appendErr = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the append never returned")
			}
			if rebase {
				if err := <-rebased; err != nil {
					t.Fatalf("rebase: %v", err)
				}
			}
			var rendered string
			var epoch int64
			if err := holderDB(t, direct).QueryRowContext(ctx, `SELECT rendered, epoch FROM blocks WHERE owner = 'ann' AND label = 'notes'`).Scan(&rendered, &epoch); err != nil {
				t.Fatal(err)
			}
			if appendErr != nil {
				t.Fatalf("append: %v (the block holds %q)", appendErr, rendered)
			}
			if rebase && epoch != 1 {
				t.Fatalf("the block is at epoch %d after one rebase", epoch)
			}
			if n := strings.Count(rendered, "<X>"); n != 1 {
				t.Errorf("the acknowledged append is in the block's row %d times: %q", n, rendered)
			}
			for name, st := range map[string]*memory.Store{"the store": s, "another store": other} {
				got, err := st.Agent("ann").Block("notes").Render(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got != "<warm0><warm1><warm2><X>" {
					t.Errorf("%s renders %q, want the three appends and <X> once", name, got)
				}
			}
		})
	}
}
