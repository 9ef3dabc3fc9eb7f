package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
)

func testMigrations(t *testing.T, e Engine) {
	ctx := context.Background()
	target := e.NewDatabase(t)
	b := open(t, e, target)
	have, latest, err := b.SchemaVersion(ctx)
	if err != nil || latest == 0 || have != latest {
		t.Fatalf("SchemaVersion = %d of %d, %v; want the latest", have, latest, err)
	}
	// The store's tables are there.
	for _, table := range []string{"blocks", "block_updates", "block_snapshots", "shares", "proposals", "archival", "messages", "token_counts"} {
		var n int
		if err := b.DB().QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}
	if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "kept", 1, 1); return err }); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Opening again applies nothing and keeps the rows; so does a second
	// backend opening the database while the first has it open.
	again := open(t, e, target)
	other := open(t, e, target)
	for _, c := range []driver.Backend{again, other} {
		if h, l, err := c.SchemaVersion(ctx); err != nil || h != have || l != latest {
			t.Fatalf("after reopening: SchemaVersion = %d of %d, %v; want %d of %d", h, l, err, have, latest)
		}
	}
	if n := counts(t, again, "kept"); n != 1 {
		t.Fatalf("%d rows after reopening, want 1", n)
	}
}

func testIsConflict(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "dup", 7, 1); return err }); err != nil {
		t.Fatal(err)
	}
	dup := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "dup", 7, 2); return err })
	if dup == nil || !b.IsConflict(dup) {
		t.Errorf("IsConflict(%v) = false for a unique violation", dup)
	}
	notNull := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, insertCount, "dup", 8, nil); return err })
	syntax := b.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
		return err
	})
	for _, err := range []error{nil, errors.New("unique constraint failed"), context.Canceled, sql.ErrNoRows, notNull, syntax} {
		if b.IsConflict(err) {
			t.Errorf("IsConflict(%v) = true", err)
		}
	}
	if notNull == nil || syntax == nil {
		t.Errorf("a NOT NULL violation (%v) and a missing table (%v) were not errors", notNull, syntax)
	}
}

// Statements use "?" placeholders on every engine, in reads on DB and in
// Write's transaction; a '?' inside a string literal or a comment is not
// one.
func testPlaceholders(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	const q = `SELECT '?' || ?, CAST(? AS BIGINT) + CAST(? AS BIGINT) -- why?
		+ 0`
	check := func(where string, row *sql.Row) {
		t.Helper()
		var s string
		var n int64
		if err := row.Scan(&s, &n); err != nil || s != "?x" || n != 5 {
			t.Errorf("%s: %q, %d, %v; want \"?x\", 5", where, s, n, err)
		}
	}
	check("DB", b.DB().QueryRowContext(ctx, q, "x", 2, 3))
	err := b.Write(ctx, func(tx *sql.Tx) error {
		check("Write", tx.QueryRowContext(ctx, q, "x", 2, 3))
		_, err := tx.ExecContext(ctx, `UPDATE token_counts SET tokens = ? WHERE encoding = ? AND hash = ?`, 1, "?", 2)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A ReadTx sees one snapshot: a commit made after its first read is not
// seen until it ends. It is read-only.
func testReadTx(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	tx, err := b.ReadTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	count := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		t.Helper()
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM token_counts WHERE encoding = 'snap'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(tx); n != 0 {
		t.Fatalf("fresh database: %d rows", n)
	}
	if err := b.Write(ctx, func(w *sql.Tx) error { _, err := w.ExecContext(ctx, insertCount, "snap", 1, 1); return err }); err != nil {
		t.Fatal(err)
	}
	if n := count(tx); n != 0 {
		t.Errorf("the read transaction saw a later commit (%d rows)", n)
	}
	if _, err := tx.ExecContext(ctx, insertCount, "snap", 2, 2); err == nil {
		t.Error("a read transaction wrote")
	}
	tx.Rollback()
	if n := count(b.DB()); n != 1 {
		t.Errorf("after the read transaction: %d rows, want 1", n)
	}
}

// PadsRows says whether blocks has the pad column the store then writes.
func testPadsRows(t *testing.T, e Engine) {
	b := fresh(t, e)
	_, err := b.DB().ExecContext(context.Background(), `UPDATE blocks SET pad = NULL WHERE id = 0`)
	if b.PadsRows() != (err == nil) {
		t.Fatalf("PadsRows() = %v, but updating blocks.pad: %v", b.PadsRows(), err)
	}
}

func testJSONInt64s(t *testing.T, e Engine) {
	b := fresh(t, e)
	// The engine may word the subquery by the list's length (n): each
	// wording reads the same integers, the length given being a hint.
	for _, n := range []int{4, 1000} {
		jsonInt64s(t, b, n)
	}
}

func jsonInt64s(t *testing.T, b driver.Backend, n int) {
	ctx := context.Background()
	// Beyond 2^53, where a float would round; after another placeholder.
	q := `SELECT v.value FROM (` + b.JSONInt64s(n) + `) AS v WHERE v.value > ? ORDER BY v.value`
	read := func(rows *sql.Rows, err error) []int64 {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var v int64
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := []int64{3, 42, 9007199254740993}
	if got := read(b.DB().QueryContext(ctx, q, "[3, -1, 9007199254740993, 42]", 0)); !slices.Equal(got, want) {
		t.Errorf("n %d: got %v, want %v", n, got, want)
	}
	if got := read(b.DB().QueryContext(ctx, q, "[]", 0)); len(got) != 0 {
		t.Errorf("n %d: empty array: %v", n, got)
	}
	// As the store uses it: x IN (…).
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, insertCount, fmt.Sprint("in-", n), -5, 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var got int
	if err := b.DB().QueryRowContext(ctx, `SELECT count(*) FROM token_counts WHERE encoding = ? AND hash IN (`+b.JSONInt64s(n)+`)`, fmt.Sprint("in-", n), "[-5, 6]").Scan(&got); err != nil || got != 1 {
		t.Errorf("n %d: IN: %d, %v; want 1", n, got, err)
	}
}

// A BlockNotifier reports a block committed by another backend, says when
// it is live, and returns when its ctx ends.
func testBlockNotifier(t *testing.T, e Engine) {
	target := e.NewDatabase(t)
	b := open(t, e, target)
	n, ok := b.(driver.BlockNotifier)
	if !ok {
		t.Skipf("%s does not implement driver.BlockNotifier", b.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var ids []int64
	changed := make(chan struct{}, 16)
	live := make(chan bool, 16)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		n.WatchBlocks(ctx,
			func(id int64) {
				mu.Lock()
				ids = append(ids, id)
				mu.Unlock()
				select {
				case changed <- struct{}{}:
				default: // a wake-up is pending already
				}
			},
			func(up bool) {
				select {
				case live <- up:
				default: // never block the watcher on a slow test
				}
			})
	}()
	defer func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(10 * time.Second):
			t.Error("WatchBlocks did not return after its ctx ended")
		}
	}()
	if e.NotificationsUnreachable {
		// Down, said once the LISTEN's check fails, and never up.
		select {
		case up := <-live:
			if up {
				t.Fatal("live(true) where notifications cannot arrive")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("WatchBlocks never said the notifications are down")
		}
		select {
		case up := <-live:
			if up {
				t.Fatal("live(true) where notifications cannot arrive")
			}
		case <-time.After(time.Second):
		}
		return
	}
	select {
	case up := <-live:
		if !up {
			t.Fatal("live(false) before live(true)")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WatchBlocks never went live")
	}
	w := open(t, e, target)
	bg := context.Background()
	var id int64
	err := w.Write(bg, func(tx *sql.Tx) error {
		return tx.QueryRowContext(bg, `INSERT INTO blocks (owner, label, block_type, permission, schema_json, char_limit, created_at, updated_at)
			VALUES ('ada', 'notes', 'core', 'admin', '{}', 100, 0, 0) RETURNING id`).Scan(&id)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		mu.Lock()
		seen := slices.Contains(ids, id)
		mu.Unlock()
		if seen {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("block %d committed by another backend was never reported (got %v)", id, ids)
		}
	}
}

func testClose(t *testing.T, e Engine) {
	ctx := context.Background()
	b, err := e.Open(t, e.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := b.DB().PingContext(ctx); err == nil {
		t.Error("DB still usable after Close")
	}
	if err := b.Write(ctx, func(*sql.Tx) error { return nil }); err == nil {
		t.Error("Write succeeded after Close")
	}
}
