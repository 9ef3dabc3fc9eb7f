package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// roundTrips counts what the pool's connections send the server, one per
// round trip: a statement on its own, a batch (pipelined statements, one
// Sync), a prepare. Statements sending block notifications (the notifier's,
// after the commits) are counted apart.
type roundTrips struct {
	mu      sync.Mutex
	n       int
	notify  int
	queries []string
}

func (r *roundTrips) count(sql string) {
	if strings.HasPrefix(sql, "LISTEN ") {
		return // the listening connection's (not the pool's), whenever it (re)connects
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Contains(sql, "pg_notify") {
		r.notify++
		return
	}
	r.n++
	r.queries = append(r.queries, sql)
}

func (r *roundTrips) take() (n, notify int, queries []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, notify, queries = r.n, r.notify, r.queries
	r.n, r.notify, r.queries = 0, 0, nil
	return n, notify, queries
}

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.count(d.SQL)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	var qs []string
	for _, q := range d.Batch.QueuedQueries {
		qs = append(qs, q.SQL)
	}
	r.count("batch: " + strings.Join(qs, "; "))
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareStartData) context.Context {
	r.count("prepare: " + d.SQL)
	return ctx
}
func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

var registerCounting sync.Once

// countingTracer is the tracer of the stores opened with "pgcount://"
// URLs (the test's driver: the postgres backend with a tracer).
var countingTracer = &roundTrips{}

// openCounting opens a store on a fresh database whose statements
// countingTracer counts, and returns it with the database's URL.
func openCounting(t *testing.T) (*memory.Store, string) {
	t.Helper()
	registerCounting.Do(func() {
		memory.Register("postgres-counting", driver.Driver{
			Schemes: []string{"pgcount"},
			Open: func(ctx context.Context, target string, o *driver.OpenOptions) (driver.Backend, error) {
				dsn := "postgres" + strings.TrimPrefix(target, "pgcount")
				b, err := Open(ctx, dsn, &Options{LockTimeout: o.LockTimeout, Logger: o.Logger, tracer: countingTracer})
				if err != nil {
					return nil, err
				}
				return b, nil
			},
		})
	})
	dsn := pgtest.Start(t).NewDatabase(t)
	if !strings.HasPrefix(dsn, "postgres://") {
		t.Fatalf("pgtest gave %q, not a postgres:// URL", dsn)
	}
	s, err := memory.Open(context.Background(), "pgcount://"+strings.TrimPrefix(dsn, "postgres://"), &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dsn
}

// A small append to a Text block, in steady state (the block cached, its
// statements prepared), costs its writer one round trip: the write's
// transaction (BEGIN, its locks, the claim of the edit applied ahead with
// the update row, COMMIT) goes to the server as one pipeline. The
// block's notification to other processes is sent after the commit,
// apart, and shared by the blocks written meanwhile.
func TestAppendRoundTrips(t *testing.T) {
	ctx := context.Background()
	s, _ := openCounting(t)
	a := s.Agent("ann")
	if _, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	b := a.Block("notes")
	for i := range 5 { // warm: the block cached, statements prepared
		if err := b.Append(ctx, fmt.Sprintf("warm %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	// What the store does once after opening (LISTEN for notifications,
	// then a look at the blocks it cached) is over before the count.
	time.Sleep(500 * time.Millisecond)
	countingTracer.take()
	const appends = 20
	for i := range appends {
		if err := b.Append(ctx, fmt.Sprintf("note %d: the tide turned at the harbour\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	n, _, queries := countingTracer.take()
	t.Logf("%d round trips for %d appends", n, appends)
	if n > appends {
		t.Errorf("%d round trips for %d appends, want at most one per append; sent:\n%s", n, appends, strings.Join(queries, "\n"))
	}
	got, err := b.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "note 19: the tide") || strings.Count(got, "the tide turned") != appends {
		t.Errorf("block holds %q, want the %d appends", got, appends)
	}
}

// An append whose block's lock another transaction holds is not written
// by the one-round-trip path (which never waits): its transaction is
// rolled back and the append waits for the lock on the ordinary path,
// then completes once the holder commits; the connection stays usable.
func TestAppendWaitsForBusyBlock(t *testing.T) {
	ctx := context.Background()
	s, dsn := openCounting(t)
	b := s.Agent("bob").Block("notes")
	if _, err := s.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := b.Append(ctx, fmt.Sprintf("before %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var id int64
	if err := raw.QueryRowContext(ctx, `SELECT id FROM blocks WHERE owner = 'bob' AND label = 'notes'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	holder, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(lockClassBlock, uint64(id))); err != nil {
		t.Fatal(err)
	}
	countingTracer.take()
	done := make(chan error, 1)
	go func() { done <- b.Append(ctx, "while held\n") }()
	select {
	case err := <-done:
		t.Fatalf("append returned (%v) while another transaction held the block's lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("append after the lock's release: %v", err)
	}
	_, _, queries := countingTracer.take()
	if !slices.Contains(queries, "rollback") {
		t.Errorf("the one-round-trip attempt was not rolled back; sent:\n%s", strings.Join(queries, "\n"))
	}
	for i := range 3 {
		if err := b.Append(ctx, fmt.Sprintf("after %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"before 2\n", "while held\n", "after 2\n"} {
		if strings.Count(got, want) != 1 {
			t.Errorf("block holds %q, want %q once", got, want)
		}
	}
}
