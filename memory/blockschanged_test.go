package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// closed reports whether ch was closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Every change committed through a Store that moves a BlocksStamp closes
// the channel BlocksChanged returned before it (content, metadata,
// create/delete, rebase, import, merge, share/re-share/unshare, write-back
// edits as made and as flushed); writes that move no stamp (messages,
// archival, tokens) leave it open, so a consumer is not woken for them.
func TestBlocksChangedSignalsEveryStampMove(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := memory.Open(ctx, fresh(filepath.Join(dir, "signal.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wb, err := memory.Open(ctx, fresh(filepath.Join(dir, "wb.db")), &memory.Options{WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	for _, s := range []*memory.Store{c, wb} {
		for _, b := range []struct{ owner, label string }{{"a", "notes"}, {"b", "board"}} {
			if _, err := s.Agent(b.owner).CreateBlock(ctx, memory.BlockSpec{Label: b.label, Value: "start", Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
		}
	}
	dump, err := c.Agent("b").Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		what  string
		f     func() error
		moves bool // the stamp of "a" or "b" moves
	}
	steps := []step{
		{"append", func() error { return c.Agent("a").Block("notes").Append(ctx, " two") }, true},
		{"apply edit", func() error {
			return c.Agent("a").Block("notes").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " three"})
		}, true},
		{"replace text", func() error { return c.Agent("a").Block("notes").SetText(ctx, "new") }, true},
		{"merge a peer's changes", func() error {
			doc, err := c.Agent("a").Block("notes").Doc(ctx)
			if err != nil {
				return err
			}
			return c.Agent("a").Block("notes").Merge(ctx, peerEdit(t, doc, func(root *automerge.Map) error {
				return subText(root, "content").Append(" peer")
			}))

		}, true},
		{"pin", func() error { return c.Agent("a").Block("notes").SetPinned(ctx, true) }, true},
		{"permission", func() error { return c.Agent("a").Block("notes").SetPermission(ctx, blocks.ReadWrite) }, true},
		{"share", func() error { return c.Agent("b").Block("board").Share(ctx, "a", blocks.Append) }, true},
		{"re-share", func() error { return c.Agent("b").Block("board").Share(ctx, "a", blocks.ReadWrite) }, true},
		{"owner edits the shared block", func() error { return c.Agent("b").Block("board").Append(ctx, " more") }, true},
		{"sharee edits the shared block", func() error {
			return c.Agent("a").Shared("b", "board").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " by a"})
		}, true},
		{"unshare", func() error { return c.Agent("b").Block("board").Unshare(ctx, "a") }, true},
		{"create", func() error {
			_, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "tmp", Permission: blocks.Admin})
			return err
		}, true},
		{"rebase", func() error { return c.Agent("a").Block("tmp").Rebase(ctx) }, true},
		{"delete", func() error { return c.Agent("a").Block("tmp").Delete(ctx) }, true},
		{"delete b's block", func() error { return c.Agent("b").Block("board").Delete(ctx) }, true},
		{"import", func() error { _, err := c.Import(ctx, dump); return err }, true},
		{"message", func() error {
			_, err := c.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "x"})
			return err
		}, false},
		{"archival", func() error {
			_, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "fact"})
			return err
		}, false},
		{"token", func() error { _, _, err := accesstoken.Of(c).Create(ctx, accesstoken.Spec{Agent: "a"}); return err }, false},
	}
	run := func(t *testing.T, s *memory.Store, steps []step) {
		stamps := func() [2]memory.BlocksStamp {
			var out [2]memory.BlocksStamp
			for i, a := range []string{"a", "b"} {
				st, err := s.Agent(a).BlocksStamp(ctx)
				if err != nil {
					t.Fatal(err)
				}
				out[i] = st
			}
			return out
		}
		for _, st := range steps {
			before := stamps()
			ch := s.BlocksChanged()
			if err := st.f(); err != nil {
				t.Fatalf("%s: %v", st.what, err)
			}
			moved := stamps() != before
			if moved != st.moves {
				t.Fatalf("%s: stamp moved %v, want %v", st.what, moved, st.moves)
			}
			if got := closed(ch); got != st.moves {
				t.Errorf("%s: signalled %v, want %v (stamp moved: %v)", st.what, got, st.moves, moved)
			}
			if st.moves && closed(s.BlocksChanged()) {
				t.Fatalf("%s: the next channel is closed already", st.what)
			}
		}
	}
	t.Run("write-through", func(t *testing.T) { run(t, c, steps) })
	t.Run("write-back", func(t *testing.T) {
		run(t, wb, []step{
			{"edit", func() error { return wb.Agent("a").Block("notes").Append(ctx, " two") }, true},
			{"flush", func() error { return wb.Flush(ctx) }, true},
			{"share", func() error { return wb.Agent("b").Block("board").Share(ctx, "a", blocks.Append) }, true},
		})
	})
}
