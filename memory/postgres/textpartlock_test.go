package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
)

// TestTextPartKeys: engram_text_part_key's keys are of the stored text
// partitions' class (see locks.go) and the kind, one of 256 buckets of
// owners each, so that a statement over many owners takes a bounded
// number of locks.
func TestTextPartKeys(t *testing.T) {
	b := openTestBackend(t)
	ctx := context.Background()
	for _, kind := range []int64{2, 4} {
		buckets := map[int64]bool{}
		for i := range 5000 {
			var k int64
			if err := b.DB().QueryRowContext(ctx, `SELECT engram_text_part_key(?, ?)`, kind, fmt.Sprint("agent-", i)).Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k>>56 != lockClassTextPart || k>>8&(1<<48-1) != kind {
				t.Fatalf("key of (%d, agent-%d) is %#x: want class %d, kind %d", kind, i, k, lockClassTextPart, kind)
			}
			buckets[k&255] = true
		}
		if len(buckets) != 256 {
			t.Errorf("kind %d: 5,000 owners fill %d buckets, want 256", kind, len(buckets))
		}
	}
}

// TestTextPartLocksBounded: a DELETE of messages of 40,000 owners takes a
// bounded number of locks (one per bucket it touches), not one per owner,
// which would exhaust the server's lock table ("out of shared memory"),
// and drops their parts.
func TestTextPartLocksBounded(t *testing.T) {
	b := openTestBackend(t)
	ctx := context.Background()
	if _, err := b.DB().ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
		SELECT 'owner-' || g, 'user', 'old words', 'b', 0, 0 FROM generate_series(1, 40000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DB().ExecContext(ctx, `INSERT INTO search_text_parts (kind, owner, data) VALUES (4, 'owner-7', 'x'), (4, 'someone else', 'y')`); err != nil {
		t.Fatal(err)
	}
	tx, err := b.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM messages WHERE content = 'old words'`); err != nil {
		t.Fatal(err)
	}
	var locks int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid::bigint >> 24 = 4`).Scan(&locks); err != nil {
		t.Fatal(err)
	}
	if locks > 256 {
		t.Errorf("the delete holds %d advisory locks, want at most 256", locks)
	}
	var left string
	if err := tx.QueryRowContext(ctx, `SELECT string_agg(owner, ',') FROM search_text_parts`).Scan(&left); err != nil || left != "someone else" {
		t.Errorf("parts left: %q (%v), want only someone else's", left, err)
	}
}

// TestTextPartsTruncated: a TRUNCATE of archival, messages or blocks
// takes the kind's stored parts with it.
func TestTextPartsTruncated(t *testing.T) {
	b := openTestBackend(t)
	ctx := context.Background()
	if _, err := b.DB().ExecContext(ctx, `INSERT INTO search_text_parts (kind, owner, data) VALUES (2, 'a', 'x'), (4, 'a', 'y'), (1, 'a', 'z')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table string
		left  int
	}{{"archival", 2}, {"messages", 1}, {"blocks", 0}} {
		if _, err := b.DB().ExecContext(ctx, `TRUNCATE `+c.table+` CASCADE`); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := b.DB().QueryRowContext(ctx, `SELECT count(*) FROM search_text_parts`).Scan(&n); err != nil || n != c.left {
			t.Fatalf("after TRUNCATE %s: %d parts (%v), want %d", c.table, n, err, c.left)
		}
	}
}

// TestWritesReadCommitted: engram's write transactions run at READ
// COMMITTED on a database whose default is REPEATABLE READ (each statement
// must see what committed before it: a save of a stored text partition
// must see a delete that committed while it began, a delete's trigger a
// part saved while it waited). Write (its BEGIN sent with its first
// statement), a BEGIN sent on its own (a transaction whose first
// statement is not an Exec), WriteOnce's pipeline and the Index's
// BeginWrite.
func TestWritesReadCommitted(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'repeatable read'); END $$`); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var def string
	if err := b.DB().QueryRowContext(ctx, `SHOW default_transaction_isolation`).Scan(&def); err != nil || def != "repeatable read" {
		t.Fatalf("default isolation %q (%v), want repeatable read", def, err)
	}
	level := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) string {
		var l string
		if err := q.QueryRowContext(ctx, `SELECT current_setting('transaction_isolation')`).Scan(&l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	got := map[string]string{}
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1`); err != nil {
			return err
		}
		got["Write"] = level(tx)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.Write(ctx, func(tx *sql.Tx) error { got["Write, a query first"] = level(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	var l string
	if _, err := b.WriteOnce(ctx, nil, `SELECT current_setting('transaction_isolation')`, nil, &l); err != nil {
		t.Fatal(err)
	}
	got["WriteOnce"] = l
	conn, err := b.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := (SearchDialect{}).BeginWrite(ctx, conn); err != nil {
		t.Fatal(err)
	}
	got["BeginWrite"] = level(conn)
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	for what, l := range got {
		if l != "read committed" {
			t.Errorf("%s: %s, want read committed", what, l)
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d of 4 paths measured", len(got))
	}
}
