package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// TestMergeAppliedAhead: a merge decodes, applies and checks the peer's
// changes before the write lock, as an edit does (so that a small write
// never waits behind a big merge), and keeps them only if no one wrote in
// between: alone, the changes land once with who merged them recorded;
// with another store's append in that window, the merge is undone and
// applied again on the fresh state, and both land.
func TestMergeAppliedAhead(t *testing.T) {
	ctx := context.Background()
	a, b := openTwoStores(t)
	if _, err := a.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	// peer makes a change appending text on a plain automerge copy of the
	// block as a reads it.
	peer := func(text string) ([]byte, string) {
		t.Helper()
		doc, err := a.GetBlock(ctx, "ann", "notes")
		if err != nil {
			t.Fatal(err)
		}
		saved, err := doc.Save()
		if err != nil {
			t.Fatal(err)
		}
		p, err := automerge.Load(saved)
		if err != nil {
			t.Fatal(err)
		}
		v, err := p.Path("content").Get()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Text().Append(text); err != nil {
			t.Fatal(err)
		}
		h, err := p.Commit("")
		if err != nil {
			t.Fatal(err)
		}
		return p.SaveIncremental(), h.String()
	}
	rendered := func(s *Store) string {
		t.Helper()
		doc, err := s.GetBlock(ctx, "ann", "notes")
		if err != nil {
			t.Fatal(err)
		}
		v, _ := doc.Value()
		return v.(string)
	}
	merged := func(hash string) string {
		t.Helper()
		var agent string
		if err := b.be.DB().QueryRowContext(ctx, `SELECT agent FROM merged_changes WHERE hash = ?`, hash).Scan(&agent); err != nil {
			t.Fatalf("merged_changes of %s: %v", hash, err)
		}
		return agent
	}
	ahead := func(t *testing.T, between func() error) {
		for _, e := range a.lru.Values() {
			e.mu.Lock()
			e.aheadSkip, e.aheadPenalty = 0, 0
			e.mu.Unlock()
		}
		t.Cleanup(func() {
			if a.afterAhead != nil {
				a.afterAhead = nil
				t.Error("the merge was not applied ahead of the lock")
			}
		})
		a.afterAhead = func() {
			a.afterAhead = nil
			if between != nil {
				if err := between(); err != nil {
					t.Errorf("the other writer: %v", err)
				}
			}
		}
	}

	t.Run("alone", func(t *testing.T) {
		data, hash := peer("two\n")
		ahead(t, nil)
		if err := a.MergeChanges(ctx, "ann", "", "notes", data); err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Store{"a": a, "b": b} {
			if got := rendered(s); got != "one\ntwo\n" {
				t.Errorf("store %s reads %q", name, got)
			}
		}
		if got := merged(hash); got != "ann" {
			t.Errorf("merged by %q, want ann", got)
		}
	})

	t.Run("another writer in between", func(t *testing.T) {
		data, hash := peer("three\n")
		ahead(t, func() error { return b.AppendToBlock(ctx, "ann", "notes", "B\n") })
		if err := a.MergeChanges(ctx, "ann", "", "notes", data); err != nil {
			t.Fatal(err)
		}
		for name, s := range map[string]*Store{"a": a, "b": b} {
			got := rendered(s)
			if got != "one\ntwo\nB\nthree\n" && got != "one\ntwo\nthree\nB\n" {
				t.Errorf("store %s reads %q: want both the append and the merge, once each", name, got)
			}
		}
		if got := merged(hash); got != "ann" {
			t.Errorf("merged by %q, want ann", got)
		}
	})
}

// TestPersistPreparedAhead: a write-back store's Flush reads its pending
// changes and renders the block before the write lock (a block edited
// many times since its last flush makes a big row), and keeps them only
// if no one wrote the block in between: alone, the edits land; with
// another store's append in that window, they are taken again on the
// fresh state, and both land.
func TestPersistPreparedAhead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "persistahead.db")
	a, err := Open(ctx, path, &Options{WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stored := func() string {
		t.Helper()
		var s string
		if err := b.be.DB().QueryRowContext(ctx, `SELECT rendered FROM blocks WHERE owner = 'ann' AND label = 'notes'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ahead := func(t *testing.T, between func() error) {
		t.Cleanup(func() {
			if a.afterAhead != nil {
				a.afterAhead = nil
				t.Error("the flush did not prepare its row ahead of the lock")
			}
		})
		a.afterAhead = func() {
			a.afterAhead = nil
			if between != nil {
				if err := between(); err != nil {
					t.Errorf("the other writer: %v", err)
				}
			}
		}
	}

	t.Run("alone", func(t *testing.T) {
		for _, s := range []string{"two\n", "three\n"} {
			if err := a.AppendToBlock(ctx, "ann", "notes", s); err != nil {
				t.Fatal(err)
			}
		}
		ahead(t, nil)
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := stored(); !strings.Contains(got, "one\ntwo\nthree\n") {
			t.Errorf("stored rendering %q", got)
		}
	})

	t.Run("another writer in between", func(t *testing.T) {
		if err := a.AppendToBlock(ctx, "ann", "notes", "four\n"); err != nil {
			t.Fatal(err)
		}
		ahead(t, func() error { return b.AppendToBlock(ctx, "ann", "notes", "B\n") })
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		got := stored()
		if strings.Count(got, "four\n") != 1 || strings.Count(got, "B\n") != 1 {
			t.Errorf("stored rendering %q: want both the flushed edit and the other append, once each", got)
		}
		doc, err := b.GetBlock(ctx, "ann", "notes")
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := doc.Value(); v.(string) != strings.TrimSpace(got)+"\n" && !strings.Contains(got, v.(string)) {
			t.Errorf("store b reads %q, stored %q", v, got)
		}
	})
}

// TestCompactionSavedAhead: a write applied ahead that will compact its
// block saves the document ahead of the lock too (saving costs in
// proportion to the block), and the snapshot it stores is the block as
// written: a store opened afterwards reads every append.
func TestCompactionSavedAhead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "snapahead.db")
	a, err := Open(ctx, path, &Options{CompactAfter: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.CreateBlock(ctx, "ann", BlockSpec{Label: "notes"}); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 20 {
		line := fmt.Sprintf("line %d\n", i)
		want.WriteString(line)
		if err := a.AppendToBlock(ctx, "ann", "notes", line); err != nil {
			t.Fatal(err)
		}
	}
	if n := a.snapsAhead.Load(); n < 3 {
		t.Errorf("%d of the compactions of 20 appends (one every 4) saved their snapshot ahead of the lock", n)
	}
	b, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	doc, err := b.GetBlock(ctx, "ann", "notes")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := doc.Value(); v != want.String() {
		t.Errorf("a store opened afterwards reads %q, want %q", v, want.String())
	}
}

// openTwoStores opens two stores on one new database file, closed when
// the test ends.
func openTwoStores(t *testing.T) (a, b *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "two.db")
	return openPeer(t, path), openPeer(t, path)
}

// TestRefusalAheadMeetsAShareChange: a merge refused ahead of the lock for
// want of permission (an Append sharee's rewrite) does not stand when
// another store raises the share to ReadWrite between the refusal and the
// check of whether it stands: the block's row is unchanged, only the
// sharee's permission is, and the write under the lock, which judges with
// the current permission, lands the merge.
func TestRefusalAheadMeetsAShareChange(t *testing.T) {
	ctx := context.Background()
	a, b := openTwoStores(t)
	blk, err := a.Agent("bob").CreateBlock(ctx, BlockSpec{Label: "notes", Value: "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if err := blk.Share(ctx, "ada", blocks.Append); err != nil {
		t.Fatal(err)
	}
	rewrite := peerEdit(t, a, "bob", "notes", func(txt *automerge.Text) error {
		return txt.Splice(0, 5, "omega") // not an append
	})
	raised := false
	a.afterRefusedAhead = func() {
		if raised {
			return
		}
		raised = true
		if err := b.Agent("bob").Block("notes").Share(ctx, "ada", blocks.ReadWrite); err != nil {
			t.Error(err)
		}
	}
	err = a.Agent("ada").Shared("bob", "notes").Merge(ctx, rewrite)
	a.afterRefusedAhead = nil
	if !raised {
		t.Fatal("the merge was not refused ahead of the lock")
	}
	if err != nil {
		t.Fatalf("the rewrite, the share raised to ReadWrite before the refusal was judged: %v", err)
	}
	for name, s := range map[string]*Store{"a": a, "b": b} {
		doc, err := s.GetBlock(ctx, "bob", "notes")
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.Render(); !strings.Contains(got, "omega") {
			t.Errorf("store %s renders %q, want the rewrite", name, got)
		}
	}
}
