package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// The goroutine started behind a write does not ask again whether the
// block is still due: if another Store (or Block.Rebase) started a new
// epoch before the goroutine took the block, and this Store's entry
// followed it, the goroutine rebases the fresh epoch again, archiving an
// epoch of one change.
func TestRebaseBehindAnEpochAlreadyStarted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := rebasingStore(t, path)
	s2 := openPeer(t, path)
	// Rewrite until a write finds the block due: its rebase waits for
	// the block's lock, which the test holds.
	var e *entry
	for i := 1; i <= 200; i++ {
		if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(i)); err != nil {
			t.Fatal(err)
		}
		e = s.cachedEntry("ann", "notes")
		e.lock()
		if e.rebasing {
			break
		}
		e.unlock()
		e = nil
	}
	if e == nil {
		t.Fatal("no rebase started")
	}
	// The epoch the write found due: an earlier write's rebase may have
	// run to its end between that write and the test's lock.
	_, due, _, _ := e.freshness()
	time.Sleep(20 * time.Millisecond) // the goroutine waits for e.mu
	// Another Store starts the new epoch; this Store's entry follows it
	// (as any read or write under the lock would).
	if err := s2.Agent("ann").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := s.readTx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scanBlock(tx.QueryRowContext(ctx, `SELECT `+stateCols+` FROM blocks WHERE id = ?`, e.id))
	if err == nil {
		err = s.refresh(ctx, tx, e, r)
	}
	tx.Rollback()
	if err != nil {
		t.Fatal(err)
	}
	e.unlock()
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ep, archived := epochNow(t, s); ep != due+1 {
		h, _ := s.Agent("ann").Block("notes").History(ctx)
		t.Fatalf("epoch %d, %d archived, want %d: the epoch another Store started (one change) was rebased again (history %d changes)", ep, archived, due+1, len(h))
	}
}
