package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestRefusedEditTakesNoWriteLock: an edit refused on the block's latest
// state is refused without the write lock, so a refusal however costly to
// judge (a peer's merge of thousands of nested maps) holds up no other
// writer. With another connection holding SQLite's write lock, each
// refusal below comes back as the refusal, at once, not as a failure to
// persist after the busy timeout; an acceptable edit still waits for the
// lock and fails to persist.
func TestRefusedEditTakesNoWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "refused.db")
	const busy = 2 * time.Second
	c := openFile(t, path, &memory.Options{BusyTimeout: busy})
	doc, peer := blockAndPeer(t, c, memory.BlockSpec{Label: "notes", Value: "alpha", CharLimit: 5000})
	saved := peer.Save()
	deep, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	m := deep.RootMap()
	for range 2000 {
		next := automerge.NewMap()
		if err := m.Set("n", next); err != nil {
			t.Fatal(err)
		}
		m = next
	}
	if _, err := deep.Commit("nested maps"); err != nil {
		t.Fatal(err)
	}
	long, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := mustText(t, long).Append(strings.Repeat("x", 5000)); err != nil {
		t.Fatal(err)
	}
	if _, err := long.Commit("too long"); err != nil {
		t.Fatal(err)
	}
	block := c.Agent("ada").Block("notes")

	release := holdWriteLock(t, path)
	defer release()
	for _, tc := range []struct {
		name string
		edit func() error
		want func(error) bool
	}{
		{"append over the limit", func() error { return block.Append(ctx, strings.Repeat("y", 5000)) }, isLimit},
		{"view append over the limit", func() error { return doc.AppendText(strings.Repeat("y", 5000), blocks.Agent) }, isLimit},
		{"merge over the limit", func() error { return block.Merge(ctx, long.SaveIncremental()) }, isLimit},
		{"merge of nested maps", func() error { return block.Merge(ctx, deep.SaveIncremental()) }, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "layout") && !errors.Is(err, memory.ErrPersist)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.edit()
			if took := time.Since(start); !tc.want(err) || took >= busy {
				t.Fatalf("with the write lock held elsewhere: err = %v after %v; want the refusal, before the busy timeout (%v)", err, took, busy)
			}
		})
	}
	if err := block.Append(ctx, "!"); !errors.Is(err, memory.ErrPersist) {
		t.Fatalf("an acceptable append with the write lock held elsewhere: err = %v, want ErrPersist", err)
	}
	release()
	if got := text(t, c, "ada", "notes"); got != "alpha" {
		t.Fatalf("after the refusals the block reads %q, want %q", got, "alpha")
	}
	if err := block.Append(ctx, " beta"); err != nil {
		t.Fatal(err)
	}
}

func isLimit(err error) bool { return errors.Is(err, blocks.ErrLimit) }

// TestEditRefusedOnAStaleStateIsJudgedAgain: an edit refused on the state
// this store last saw, where another store has since written, is judged
// again on the fresh state under the lock: an append that did not fit
// before the other store's deletion fits after it, and lands.
func TestEditRefusedOnAStaleStateIsJudgedAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "stale.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "0123456789ABCDEFGHIJ", CharLimit: 20}); err != nil {
		t.Fatal(err)
	}
	view, err := a.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Agent("ada").Block("notes").SetText(ctx, "0123"); err != nil {
		t.Fatal(err)
	}
	// 25 characters on a's cached state: refused there; 9 on the fresh one.
	if err := view.AppendText("xxxxx", blocks.Agent); err != nil {
		t.Fatalf("an append that fits the fresh state: %v", err)
	}
	for name, s := range map[string]*memory.Store{"a": a, "b": b} {
		if got := text(t, s, "ada", "notes"); got != "0123xxxxx" {
			t.Errorf("store %s reads %q, want %q", name, got, "0123xxxxx")
		}
	}

}

// TestMergeRefusedBeforeAShareChangeIsJudgedAgain: a merge refused for
// want of permission (an Append sharee's rewrite) is judged again once
// another store has raised the share to ReadWrite (the block's row is
// unchanged; only the share is), and the same merge then lands.
func TestMergeRefusedBeforeAShareChangeIsJudgedAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r1.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	blk, err := a.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "alpha", CharLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := blk.Share(ctx, "ada", blocks.Append); err != nil {
		t.Fatal(err)
	}
	doc, err := blk.Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	// Replace "alpha" by "omega": not an append.
	if err := mustText(t, peer).Splice(0, 5, "omega"); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit("rewrite"); err != nil {
		t.Fatal(err)
	}
	edit := peer.SaveIncremental()
	adaBlock := a.Agent("ada").Shared("bob", "notes")
	if err := adaBlock.Merge(ctx, edit); err == nil {
		t.Fatal("a rewrite by an Append sharee was accepted")
	}
	if err := b.Agent("bob").Block("notes").Share(ctx, "ada", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := adaBlock.Merge(ctx, edit); err != nil {
		t.Fatalf("the rewrite after another store raised the share to ReadWrite: %v", err)
	}
	if got := text(t, b, "bob", "notes"); got != "omega" {
		t.Fatalf("b reads %q", got)
	}
}
