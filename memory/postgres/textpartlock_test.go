package postgres

import (
	"context"
	"database/sql"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
)

// TestTextPartKeys: engram_text_part_key's keys are of the stored text
// partitions' class (so a writer takes them after its other locks, see
// locks.go), one per kind and owner.
func TestTextPartKeys(t *testing.T) {
	b := openTestBackend(t)
	ctx := context.Background()
	seen := map[int64]string{}
	for _, kind := range []int{2, 4} {
		for _, owner := range []string{"", "a", "b", "agent-0001", "agent-0002", "ünïcode", "2:a"} {
			var k int64
			if err := b.DB().QueryRowContext(ctx, `SELECT engram_text_part_key(?, ?)`, kind, owner).Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k>>56 != lockClassTextPart {
				t.Errorf("key of (%d, %q) is %#x: class %d, want %d", kind, owner, k, k>>56, lockClassTextPart)
			}
			id := string(rune('0'+kind)) + ":" + owner
			if o, dup := seen[k]; dup {
				t.Errorf("(%s) and (%s) share key %#x", o, id, k)
			}
			seen[k] = id
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
