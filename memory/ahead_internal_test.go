package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// TestEditAppliedAheadMeetsAnotherWriter: an edit applied to the cached
// document before the write lock is kept only if no one wrote in between.
// Here another store on the same file writes in exactly that window; the
// edit must then be undone and applied again on the fresh state: both
// appends present once each, the character limit holding against the
// other writer's text, a revoked share refusing the write.
func TestEditAppliedAheadMeetsAnotherWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ahead.db")
	a, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.createBlock(ctx, "ann", BlockSpec{Label: "notes", CharLimit: 40}); err != nil {
		t.Fatal(err)
	}
	// between makes b run f in the window of a's next write: after the
	// edit was applied ahead, before the write lock. A miss makes the
	// block's next edits skip applying ahead; each case starts afresh, and
	// fails if its write did not apply ahead at all (it would test nothing).
	between := func(t *testing.T, f func() error) {
		for _, e := range a.lru.Values() {
			e.mu.Lock()
			e.aheadSkip, e.aheadPenalty = 0, 0
			e.mu.Unlock()
		}
		t.Cleanup(func() {
			if a.afterAhead != nil {
				a.afterAhead = nil
				t.Error("the write did not apply its edit ahead of the lock: the case tested nothing")
			}
		})
		a.afterAhead = func() {
			a.afterAhead = nil
			if err := f(); err != nil {
				t.Errorf("the other writer: %v", err)
			}
		}
	}
	rendered := func(s *Store) string {
		t.Helper()
		doc, err := s.getBlock(ctx, "ann", "notes")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := doc.Value()
		return v.(string)
	}

	t.Run("both appends land once", func(t *testing.T) {
		between(t, func() error { return b.appendToBlock(ctx, "ann", "notes", "B1 ") })
		if err := a.appendToBlock(ctx, "ann", "notes", "A1 "); err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Store{"a": a, "b": b} {
			if got := rendered(s); got != "B1 A1 " {
				t.Errorf("store %s reads %q, want %q", name, got, "B1 A1 ")
			}
		}
	})

	t.Run("the limit holds against the other writer's text", func(t *testing.T) {
		// 6 chars stored; a sees room for 30 more, b takes 30 of the 34 left.
		between(t, func() error { return b.appendToBlock(ctx, "ann", "notes", strings.Repeat("b", 30)) })
		err := a.appendToBlock(ctx, "ann", "notes", strings.Repeat("a", 30))
		if !errors.Is(err, blocks.ErrLimit) {
			t.Fatalf("append past the limit after another writer filled the block: %v, want ErrLimit", err)
		}
		want := "B1 A1 " + strings.Repeat("b", 30)
		for name, s := range map[string]*Store{"a": a, "b": b} {
			if got := rendered(s); got != want {
				t.Errorf("store %s reads %q, want %q", name, got, want)
			}
		}
	})

	t.Run("a share revoked in between refuses the write", func(t *testing.T) {
		if err := a.shareBlock(ctx, "ann", "notes", "bob", blocks.ReadWrite); err != nil {
			t.Fatal(err)
		}
		before := rendered(b)
		between(t, func() error { return b.unshareBlock(ctx, "ann", "notes", "bob") })
		err := a.applyEdit(ctx, "bob", "ann", "notes", Edit{Op: blocks.OpAppendText, Text: "x"})
		if !errors.Is(err, blocks.ErrPermission) {
			t.Fatalf("write through a share revoked in between: %v, want ErrPermission", err)
		}
		if got := rendered(b); got != before {
			t.Errorf("block changed to %q by a write whose share was revoked", got)
		}
	})
}
