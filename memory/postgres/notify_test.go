package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two stores on one database (as on two machines): a change one commits
// reaches the other's cached document through LISTEN/NOTIFY, and after the
// listening connection is killed, the store re-checks what it cached, so
// a change made while notifications were down is still seen.
func TestNotificationsReachOtherStores(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
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
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	listeners := func() int {
		var n int
		admin.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n)
		return n
	}
	eventually(t, 10*time.Second, "stores did not start listening", func() bool { return listeners() == 2 })
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	text := func() string {
		doc, err := b.Agent("ada").Block("notes").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := doc.Text()
		return s
	}
	if got := text(); got != "" {
		t.Fatalf("b sees %q", got)
	}
	if err := a.Agent("ada").Block("notes").Append(ctx, "first\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "b never saw a's append", func() bool { return text() == "first\n" })

	// Kill every listening connection; write while they are down.
	var killed int
	if err := admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != 2 {
		t.Fatalf("terminated %d listeners, want 2", killed)
	}
	if err := a.Agent("ada").Block("notes").Append(ctx, "second\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "b never saw the append made while notifications were down",
		func() bool { return text() == "first\nsecond\n" })
	// Notifications flow again: a third change arrives too.
	eventually(t, 10*time.Second, "listeners did not reconnect", func() bool { return listeners() == 2 })
	if err := a.Agent("ada").Block("notes").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: "third\n"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "b never saw the third append", func() bool { return strings.HasSuffix(text(), "third\n") })
	// Deleting the block reaches b too.
	if err := a.Agent("ada").Block("notes").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "b still serves a deleted block", func() bool {
		_, err := b.Agent("ada").Block("notes").Doc(ctx)
		return err != nil
	})
}
