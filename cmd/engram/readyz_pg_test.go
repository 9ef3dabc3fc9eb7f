package main

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// TestServeReadyzWaitsForPrewarm: engram serve's /readyz is the store's
// prewarming, not a constant: while another session holds the messages
// table locked, the prewarming store cannot read it and /readyz answers
// 503 (with /healthz 200); once the lock goes, 200. (Open itself reads
// the archival table, not the messages.)
func TestServeReadyzWaitsForPrewarm(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	seed, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the harbour crane"}); err != nil {
		t.Fatal(err)
	}
	if err := seed.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	lock, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, `LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	store, err := memory.Open(openCtx, dsn, &memory.Options{Prewarm: true})
	if err != nil {
		t.Fatalf("open (should not need the messages table): %v", err)
	}
	defer store.Close()
	f := startServe(t, store, nil)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for range 3 {
		if code, body := get("/readyz"); code != http.StatusServiceUnavailable {
			t.Fatalf("/readyz while prewarming cannot read: %d %q, want 503", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while prewarming: %d, want 200", code)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, body := get("/readyz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz %d %q 30 s after the lock went, want 200", code, body)
		}
	}
}
