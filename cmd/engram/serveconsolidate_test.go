package main

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// TestServeConsolidatesInTheBackground: with --consolidate-every, engram
// serve turns duplicates into merge proposals with no call (or, with
// --consolidate-apply-exact, merges them), logs each round, and stops
// with the server.
func TestServeConsolidatesInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		// wantPending merge proposals, wantLive entries of ada at the end
		wantPending, wantLive int
	}{
		{"propose", nil, 1, 2},
		{"apply exact", []string{"--consolidate-apply-exact"}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "s.db")
			ctx := context.Background()
			s, err := memory.Open(ctx, db, &memory.Options{KeepDuplicates: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"The build runs on Fridays.", "the build runs on FRIDAYS."} {
				if _, err := s.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: c}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			sctx, cancel := context.WithCancel(ctx)
			args := append([]string{"--db", db, "--json", "serve", "--addr", "127.0.0.1:0", "--consolidate-every", "20ms"}, tc.extra...)
			stdout, stderr, done := runAsync(t, sctx, args...)
			var info map[string]string
			if err := json.NewDecoder(stdout).Decode(&info); err != nil {
				t.Fatal(err)
			}
			go io.Copy(io.Discard, stdout)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), "consolidation round") {
				if time.Now().After(deadline) {
					cancel()
					t.Fatalf("no consolidation round logged in 10 s:\n%s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // more rounds: nothing proposed twice
			cancel()
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("serve exit %d:\n%s", code, stderr.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatal("serve did not stop")
			}
			s, err = memory.Open(ctx, db, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ps, err := s.Agent("ada").Proposals(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pending := 0
			for _, p := range ps {
				if p.Merge != nil && p.Status == "pending" {
					pending++
				}
			}
			live, err := s.Agent("ada").Archival().List(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pending != tc.wantPending || len(live) != tc.wantLive {
				t.Fatalf("%d pending merges and %d live entries, want %d and %d:\n%s", pending, len(live), tc.wantPending, tc.wantLive, stderr.String())
			}
		})
	}
	if _, errs, code := cli(t, filepath.Join(t.TempDir(), "x.db"), "", "serve", "--addr", "127.0.0.1:0", "--consolidate-every", "-1s"); code == 0 || !strings.Contains(errs, "--consolidate-every") {
		t.Fatalf("a negative interval: exit %d, %s", code, errs)
	}
}
