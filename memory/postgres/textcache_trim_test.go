package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// hookConnector runs hook before a query containing match (once armed).
type hookConnector struct {
	rebindConnector
	armed *atomic.Bool
	match string
	hook  func()
}

func (c hookConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.rebindConnector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &hookConn{conn.(*rebindConn), c}, nil
}

type hookConn struct {
	*rebindConn
	c hookConnector
}

func (h *hookConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if strings.Contains(query, h.c.match) && h.c.armed.CompareAndSwap(true, false) {
		h.c.hook()
	}
	return h.rebindConn.QueryContext(ctx, query, args)
}

// A catch-up reads the log's bounds and then the entries after its
// position, in separate statements: under READ COMMITTED a trim between
// the two lost entries the bounds said were there, and the change they
// logged stayed out of the cache for good (found by review). Its read
// transaction is REPEATABLE READ on PostgreSQL (SearchDialect.SnapshotIsolation).
// The hook writes a burst that trims the log between the two statements.
func TestTextCacheCatchUpMissesTrimmedEntries(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	dsn := srv.NewDatabase(t)
	b, err := Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatal(err)
		}
	}
	var x, y int64
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('ann', 'a quiet harbour', 1, 1) RETURNING id`).Scan(&x); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('ann', 'hot row', 1, 1) RETURNING id`).Scan(&y)
	}); err != nil {
		t.Fatal(err)
	}
	// touch logs n entries for the hot row y, as n one-row writes to it
	// would (inserted directly: 100,000 UPDATE statements take ~90 s).
	touch := func(n int) {
		exec(`INSERT INTO search_text_log (kind, id) SELECT 2, ? FROM generate_series(1, ?)`, y, n)
	}

	var armed atomic.Bool
	cfg := b.cfg
	hookDB := sql.OpenDB(hookConnector{rebindConnector{Connector: stdlib.GetConnector(*cfg)}, &armed,
		"SELECT DISTINCT kind, id FROM search_text_log", func() { touch(2600) }})
	defer hookDB.Close()
	cached, err := searchindex.NewIndex(ctx, hookDB, b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	sqlIdx, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlIdx.Close()
	if err := cached.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}

	// The change the cache must see, then the hot row's traffic: the log
	// still holds it (under 100,000 entries behind).
	exec(`UPDATE archival SET content = 'the zebra crossing' WHERE id = ?`, x)
	touch(99_500)

	find := func(x *searchindex.Index) []int64 {
		t.Helper()
		rs, err := x.Search(ctx, "zebra", search.Scope{All: true}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(10))
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, r := range rs {
			ids = append(ids, r.ID)
		}
		return ids
	}
	armed.Store(true)
	before := cached.CacheStats().TextLegs
	find(cached) // the catch-up the burst races
	if armed.Load() {
		t.Fatal("the catch-up never read the log entries")
	}
	got := find(cached) // and again, once caught up
	want := find(sqlIdx)
	t.Logf("SQL: %v, cache: %v (text legs answered by the cache: %d)", want, got, cached.CacheStats().TextLegs-before)
	if len(want) != 1 || want[0] != x {
		t.Fatalf("SQL leg: %v, want [%d]", want, x)
	}
	if len(got) != 1 || got[0] != x {
		t.Fatalf("the text cache misses the update of %d: %v (SQL: %v)", x, got, want)
	}
}
