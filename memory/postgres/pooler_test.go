package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/driver/drivertest"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/memory/storetest"
)

// Through PgBouncer in transaction mode (each transaction on whichever
// server connection is free), with default_query_exec_mode=exec: the
// backend's guarantees hold but for notifications, which such a pooler
// cannot carry; the backend says so (never live) instead of trusting a
// LISTEN that nothing reaches.
func TestPoolerBackendConformance(t *testing.T) {
	srv := pgtest.Start(t).Pooler(t, "")
	drivertest.Run(t, drivertest.Engine{
		NewDatabase: func(t *testing.T) string { return srv.NewDatabase(t) },
		Open: func(t *testing.T, dsn string) (driver.Backend, error) {
			return postgres.Open(context.Background(), dsn, &postgres.Options{LockTimeout: 10 * time.Second})
		},
		NotificationsUnreachable: true,
	})
}

// The store conformance suite through the same pooler, in every mode
// TestConformance runs (pgvector's searches, the caches' loads and
// catch-ups, SQL ranking, epochs), and plain with the other exec modes
// that name no statements.
func TestPoolerConformance(t *testing.T) {
	srv := pgtest.Start(t)
	srv.HasPGVector(t) // required under ENGRAM_TEST_PGVECTOR=1
	runConformance(t, srv.Pooler(t, ""))
	for _, mode := range []string{"cache_describe", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			pooled := srv.Pooler(t, mode)
			storetest.RunStoreTests(t, func(t *testing.T, approver blocks.Approver) *memory.Store {
				c, err := memory.Open(context.Background(), pooled.NewDatabase(t), &memory.Options{Approver: approver})
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
		})
	}
}

// Two stores through the pooler (two machines behind one PgBouncer): each
// change one makes is seen by the other's next read of the block it has
// cached, before and after the listener's check of the notifications has
// failed. A store that trusted its LISTEN would serve its cached copy
// without a query, and never learn of the change.
func TestPoolerCachedBlocksStayFresh(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).Pooler(t, "").NewDatabase(t)
	a, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Permission: blocks.Admin, CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	want := ""
	for i := 0; ; i++ {
		// The document, from the reader's cache (Render would read the
		// rendering stored in the row).
		doc, err := a.Agent("ada").Block("notes").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.Render(); got != want {
			t.Fatalf("write %d: the reader's block holds %q, want %q", i, got, want)
		}
		if i == 100 {
			break
		}
		line := fmt.Sprintf("line %d\n", i)
		if err := b.Agent("ada").Block("notes").Append(ctx, line); err != nil {
			t.Fatal(err)
		}
		want += line
		// Spread over the listener's check (3 s) and past it.
		time.Sleep(50 * time.Millisecond)
	}
}

// namedStatementsURL is a new database's URL through the pooler without
// default_query_exec_mode: pgx's default, which names statements.
func namedStatementsURL(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(pgtest.Start(t).Pooler(t, "").NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Del("default_query_exec_mode")
	u.RawQuery = q.Encode()
	return u.String()
}

// Through the same pooler without default_query_exec_mode, pgx's named
// statements fail on the server connections they were not prepared on;
// the error says what to change in the URL, and is still the server's.
func TestPoolerWithoutExecModeSaysWhy(t *testing.T) {
	ctx := context.Background()
	dsn := namedStatementsURL(t)
	s, err := memory.Open(ctx, dsn, nil)
	if err == nil {
		defer s.Close()
		// Writers side by side, so that statements meet server
		// connections other than their own.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				a := s.Agent(fmt.Sprint("agent-", w))
				for i := range 50 {
					if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprint("entry ", i)}); err != nil {
						errs <- err
						return
					}
					if _, err := a.Archival().Search(ctx, "entry", nil); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		err = <-errs
	}
	if err == nil {
		t.Fatal("no statement failed through a pooler in transaction mode with named statements")
	}
	t.Logf("the error: %v", err)
	var pe *pgconn.PgError
	if !strings.Contains(err.Error(), "default_query_exec_mode=exec") || !errors.As(err, &pe) {
		t.Fatalf("err = %v, want the server's error and the hint", err)
	}
}

// The same through the backend's pool, a statement at a time
// (database/sql's QueryContext and its prepared statements, not a write's
// pipeline): each statement error says what to change.
func TestPoolerWithoutExecModeQueriesSayWhy(t *testing.T) {
	ctx := context.Background()
	dsn := namedStatementsURL(t)
	b, err := postgres.Open(ctx, dsn, nil)
	if err != nil {
		t.Skipf("the migrations failed first (TestPoolerWithoutExecModeSaysWhy covers that path): %v", err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string][]error{}
	fail := func(kind string, err error) {
		mu.Lock()
		errs[kind] = append(errs[kind], err)
		mu.Unlock()
	}
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				var n int
				if err := b.DB().QueryRowContext(ctx, `SELECT ?::int + 1`, w*100+i).Scan(&n); err != nil {
					fail("query", err)
				}
			}
		})
	}
	wg.Wait()
	// database/sql's prepared statement (the store prepares its frequent
	// reads: a block's look-up, the stamps), prepared once on one
	// connection and run on it while another client's statements take
	// the pooler's server connections in turn.
	b.DB().SetMaxOpenConns(1)
	st, err := b.DB().PrepareContext(ctx, `SELECT ?::int + 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	other, err := sql.Open("pgx", dsn+"&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				var n int
				_ = other.QueryRowContext(ctx, `SELECT 1`).Scan(&n) // its own errors are not this test's
			}
		})
	}
	for i := range 200 {
		var n int
		if err := st.QueryRowContext(ctx, i).Scan(&n); err != nil {
			fail("prepared", err)
		}
	}
	close(stop)
	wg.Wait()
	for _, kind := range []string{"query", "prepared"} {
		if len(errs[kind]) == 0 {
			t.Errorf("no %s statement failed through a pooler in transaction mode with named statements", kind)
		}
		for _, err := range errs[kind] {
			var pe *pgconn.PgError
			if !strings.Contains(err.Error(), "default_query_exec_mode=exec") || !errors.As(err, &pe) {
				t.Fatalf("%s: err = %v, want the server's error and the hint", kind, err)
			}
		}
		t.Logf("%d %s statements failed, each with the hint", len(errs[kind]), kind)
	}
}

// Through the pooler the store's LISTEN on engram_blocks must never run:
// it would stay on the pooled server connection it ran on, and every
// block change of every process would then be sent to connections other
// clients hold. Pooled connections polling pg_listening_channels while a
// store opens see the probe's one-off channel left behind (so they can
// see what is left), and never engram_blocks.
func TestPoolerLeavesNoBlocksListen(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).Pooler(t, "").NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(4)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	end := time.Now().Add(6 * time.Second) // past the probe's 3 s
	for range 4 {
		wg.Go(func() {
			for time.Now().Before(end) {
				rows, err := db.QueryContext(ctx, `SELECT pg_listening_channels()`)
				if err != nil {
					t.Error(err)
					return
				}
				for rows.Next() {
					var c string
					if err := rows.Scan(&c); err != nil {
						t.Error(err)
					}
					if strings.HasPrefix(c, "engram_probe_") {
						c = "engram_probe_*"
					}
					mu.Lock()
					seen[c]++
					mu.Unlock()
				}
				rows.Close()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	s, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wg.Wait()
	t.Logf("channels pooled server connections listened on: %v", seen)
	if seen["engram_blocks"] > 0 {
		t.Fatal("a pooled server connection listens on engram_blocks")
	}
	if seen["engram_probe_*"] == 0 {
		t.Fatal("no pooled server connection was seen listening on the probe's channel either: the check could not have seen engram_blocks")
	}
}
