// Package committest is the group-commit conformance test: a backend
// whose Write groups concurrent writes (groupcommit.Committer) passes Run.
package committest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Writer is a backend under test.
type Writer interface {
	Write(ctx context.Context, fn func(*sql.Tx) error) error
	Queued() int
	DB() *sql.DB
}

// Run creates table w in the backend's database and runs the group-commit
// scenarios on it: writes queued behind a running one commit in one
// transaction, a failing member is rolled back alone, a panicking member
// panics in its own goroutine, a member cancelled while queued never
// runs; and under load every write lands exactly once, grouped.
func Run(t *testing.T, b Writer) {
	if err := b.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE w (k TEXT PRIMARY KEY, v INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Run("group", func(t *testing.T) { testGroup(t, b) })
	if _, err := b.DB().Exec(`DELETE FROM w`); err != nil {
		t.Fatal(err)
	}
	t.Run("under-load", func(t *testing.T) { testUnderLoad(t, b) })
	if _, err := b.DB().Exec(`DELETE FROM w`); err != nil {
		t.Fatal(err)
	}
	t.Run("cancelled-in-group", func(t *testing.T) { testCancelledInGroup(t, b) })
}

// testCancelledInGroup: a write whose caller gives up after its group took
// the lock, but before its turn, never runs and gets the context's error;
// the rest of the group commits.
func testCancelledInGroup(t *testing.T, b Writer) {
	release, waitHolder := holdWriter(t, b)
	victim, cancelVictim := context.WithCancel(context.Background())
	defer cancelVictim()
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	victimRan := false
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Write(context.Background(), func(tx *sql.Tx) error {
				cancelVictim() // the victim, queued last, has not started
				_, err := tx.Exec(`INSERT INTO w VALUES (?, ?)`, fmt.Sprint("m", i), i)
				return err
			})
		}()
	}
	waitQueued(t, b, n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs[n] = b.Write(victim, func(tx *sql.Tx) error {
			victimRan = true
			_, err := tx.Exec(`INSERT INTO w VALUES ('victim', 0)`)
			return err
		})
	}()
	waitQueued(t, b, n+1)
	release()
	wg.Wait()
	waitHolder()
	if victimRan || !errors.Is(errs[n], context.Canceled) {
		t.Errorf("the write cancelled before its turn: ran %v, error %v (want not run, context.Canceled)", victimRan, errs[n])
	}
	got := rows(t, b)
	for i := range n {
		if errs[i] != nil || got[fmt.Sprint("m", i)] != i {
			t.Errorf("member %d: %v, stored %v", i, errs[i], got[fmt.Sprint("m", i)])
		}
	}
	if _, ok := got["victim"]; ok {
		t.Error("the cancelled write is stored")
	}
}

// waitQueued waits until n writes queue behind the running one.
func waitQueued(t *testing.T, b Writer, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for b.Queued() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if q := b.Queued(); q != n {
		t.Fatalf("%d writes queued, want %d", q, n)
	}
}

func rows(t *testing.T, b Writer) map[string]int {
	t.Helper()
	rs, err := b.DB().Query(`SELECT k, v FROM w`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	out := map[string]int{}
	for rs.Next() {
		var k string
		var v int
		if err := rs.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// holdWriter starts a write that blocks until release is closed, so the
// writes started meanwhile queue behind it and form one group.
func holdWriter(t *testing.T, b Writer) (release func(), wait func()) {
	t.Helper()
	started := make(chan struct{})
	rel := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.Write(context.Background(), func(tx *sql.Tx) error {
			close(started)
			<-rel
			_, err := tx.Exec(`INSERT INTO w VALUES ('holder', 0)`)
			return err
		})
	}()
	<-started
	return func() { close(rel) }, func() {
		if err := <-done; err != nil {
			t.Errorf("holder: %v", err)
		}
	}
}

// testGroup: writes queued behind a running one commit together in
// one transaction; a failing member is rolled back to its savepoint alone;
// a panicking member panics in its own goroutine and loses nothing else;
// a member whose context ends while queued never runs.
func testGroup(t *testing.T, b Writer) {
	release, waitHolder := holdWriter(t, b)

	const n = 12
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		txs      = map[*sql.Tx]int{}
		errs     = make([]error, n)
		boom     = errors.New("refused")
		ran      = make([]bool, n)
		panicked any
	)
	ctxCancelled, cancel := context.WithCancel(context.Background())
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			if i == 7 {
				ctx = ctxCancelled
			}
			if i == 5 {
				defer func() {
					mu.Lock()
					panicked = recover()
					mu.Unlock()
				}()
			}
			errs[i] = b.Write(ctx, func(tx *sql.Tx) error {
				mu.Lock()
				txs[tx]++
				ran[i] = true
				mu.Unlock()
				if _, err := tx.Exec(`INSERT INTO w VALUES (?, ?)`, fmt.Sprint("k", i), i); err != nil {
					return err
				}
				switch i {
				case 3:
					return boom // its insert must not survive
				case 5:
					panic("a bug in the caller's fn")
				}
				return nil
			})
		}()
	}
	// Let every write queue behind the holder, cancel one, then release.
	waitQueued(t, b, n)
	cancel()
	time.Sleep(10 * time.Millisecond)
	release()
	wg.Wait()
	waitHolder()

	if len(txs) != 1 {
		t.Errorf("queued writes ran in %d transactions, want 1 group", len(txs))
	}
	if ran[7] {
		t.Error("the write whose context ended while queued ran")
	}
	if !errors.Is(errs[7], context.Canceled) {
		t.Errorf("cancelled write: %v, want context.Canceled", errs[7])
	}
	if !errors.Is(errs[3], boom) {
		t.Errorf("failing write: %v, want its own error", errs[3])
	}
	if panicked == nil {
		t.Error("the panicking write did not panic in its caller")
	}
	got := rows(t, b)
	for i := range n {
		k := fmt.Sprint("k", i)
		_, have := got[k]
		switch i {
		case 3, 5, 7:
			if have {
				t.Errorf("%s is stored; its write failed", k)
			}
		default:
			if errs[i] != nil {
				t.Errorf("write %d: %v", i, errs[i])
			}
			if !have {
				t.Errorf("%s missing after its write was acknowledged", k)
			}
		}
	}
	if _, ok := got["holder"]; !ok {
		t.Error("the holder's write is missing")
	}
}

// testUnderLoad: many goroutines writing at once all land, each
// exactly once, and the writes are grouped (fewer commits than writes).
func testUnderLoad(t *testing.T, b Writer) {
	const writers, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	txs := map[*sql.Tx]bool{}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				err := b.Write(context.Background(), func(tx *sql.Tx) error {
					mu.Lock()
					txs[tx] = true
					mu.Unlock()
					_, err := tx.Exec(`INSERT INTO w VALUES (?, ?)`, fmt.Sprint(w, "-", i), i)
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := len(rows(t, b)); got != writers*each {
		t.Fatalf("%d rows, want %d", got, writers*each)
	}
	if len(txs) >= writers*each {
		t.Errorf("%d writes in %d transactions: none were grouped", writers*each, len(txs))
	}
	t.Logf("%d writes in %d transactions", writers*each, len(txs))
}
