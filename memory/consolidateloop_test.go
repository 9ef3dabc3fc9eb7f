package memory_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// pendingMerges is how many merge proposals of agent are pending.
func pendingMerges(t *testing.T, c *memory.Store, agent string) int {
	t.Helper()
	ps, err := c.Agent(agent).Proposals(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range ps {
		if p.Merge != nil && p.Status == "pending" {
			n++
		}
	}
	return n
}

// waitFor polls cond every few milliseconds for up to five seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited 5 s for %s", what)
}

// TestRunConsolidationProposesInTheBackground: duplicates inserted while
// the loop runs become proposals with no call, each cluster once (the
// loop resumes past what it examined), for every agent; cancelling the
// context or closing the store ends the loop.
func TestRunConsolidationProposesInTheBackground(t *testing.T) {
	ctx := context.Background()
	c := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	insert := func(agent string, texts ...string) {
		t.Helper()
		for _, s := range texts {
			if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert("ada", "The deploy is on Friday.", "the deploy is on friday")
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.RunConsolidation(lctx, 10*time.Millisecond, nil) }()
	waitFor(t, "ada's merge proposal", func() bool { return pendingMerges(t, c, "ada") == 1 })
	insert("bob", "Tea at four.", "tea at four!")
	waitFor(t, "bob's merge proposal", func() bool { return pendingMerges(t, c, "bob") == 1 })
	time.Sleep(100 * time.Millisecond) // ten more rounds
	if n := pendingMerges(t, c, "ada"); n != 1 {
		t.Fatalf("ada has %d pending merges after more rounds, want 1 (a cluster proposed once)", n)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunConsolidation after cancel = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RunConsolidation still running 5 s after its context was cancelled")
	}

	// Closing the store ends a loop with a long interval at once.
	done2 := make(chan error, 1)
	go func() { done2 <- c.RunConsolidation(ctx, time.Hour, nil) }()
	time.Sleep(20 * time.Millisecond)
	c.Close()
	select {
	case <-done2:
	case <-time.After(5 * time.Second):
		t.Fatal("RunConsolidation still running 5 s after Close")
	}
}

// TestRunConsolidationAppliesExact: with ApplyExact the loop merges
// exact duplicates (kept at write time) itself, leaving no proposal.
func TestRunConsolidationAppliesExact(t *testing.T) {
	ctx := context.Background()
	c := openDedup(t, filepath.Join(t.TempDir(), "m.db"), &memory.Options{KeepDuplicates: true})
	var ids []int64
	for _, s := range []string{"Lunch is at one.", "lunch  is at ONE."} {
		e, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: s})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.RunConsolidation(lctx, 10*time.Millisecond, &memory.ConsolidateOptions{ApplyExact: true})
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the merge", func() bool {
		e, err := c.Agent("ada").Archival().Get(ctx, ids[0])
		return err == nil && e.SupersededBy != 0
	})
	if n := pendingMerges(t, c, "ada"); n != 0 {
		t.Fatalf("%d pending merges, want 0 (applied)", n)
	}
}

func TestRunConsolidationRefusesABadInterval(t *testing.T) {
	c := openDedup(t, filepath.Join(t.TempDir(), "m.db"), nil)
	if err := c.RunConsolidation(context.Background(), 0, nil); err == nil {
		t.Fatal("RunConsolidation with a zero interval: no error")
	}
}

// TestRunConsolidationResumesAfterRestart: a loop on a reopened store
// resumes past what the last one examined (recorded in the store): a
// cluster the owner rejected is not proposed again.
func TestRunConsolidationResumesAfterRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	c, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"The deploy is on Friday.", "the deploy is on friday"} {
		if _, err := c.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: s}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(c *memory.Store, d time.Duration) {
		lctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if err := c.RunConsolidation(lctx, 10*time.Millisecond, nil); err != nil {
			t.Fatal(err)
		}
	}
	run(c, 200*time.Millisecond)
	ps, err := c.Agent("ada").Proposals(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("proposals after the first loop: %d, %v (want 1)", len(ps), err)
	}
	if err := c.Agent("ada").RejectProposal(ctx, ps[0].ID, "they differ"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	run(c2, 200*time.Millisecond)
	if n := pendingMerges(t, c2, "ada"); n != 0 {
		t.Fatalf("%d pending merges after a restart, want 0 (the loop resumes past what it examined)", n)
	}
}
