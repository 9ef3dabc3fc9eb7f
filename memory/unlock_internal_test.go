package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// TestReaderRightAfterAMergeSeesIt: a merge's state is hidden from views
// until its write ends (the write may still fail). A reader that takes the
// block the moment the merging writer lets go of it must see the merge
// the writer committed, not the state before it.
func TestReaderRightAfterAMergeSeesIt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "unlock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	doc, err := s.GetBlock(ctx, "ann", "notes")
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
	v, err := peer.Path("content").Get()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Text().Append("from a peer\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit(""); err != nil {
		t.Fatal(err)
	}
	e := s.cachedEntry("ann", "notes")
	if e == nil {
		t.Fatal("the block is not cached")
	}
	before, _, _, _ := e.freshness()

	var (
		history []blocks.Change
		value   any
		read    bool
	)
	s.afterUnlock = func(u *entry) {
		if read || u != e {
			return
		}
		if seq, _, _, _ := e.freshness(); seq == before {
			return // not the merge's write
		}
		read = true // (the reads below unlock the block too)
		var herr error
		if history, herr = s.blockHistory(ctx, "ann", "", "notes"); herr != nil {
			t.Error(herr)
		}
		e.lock()
		value, _ = e.doc.View("ann", blocks.ReadWrite).Value()
		e.unlock()
	}
	if err := s.Agent("ann").Block("notes").Merge(ctx, peer.SaveIncremental()); err != nil {
		t.Fatal(err)
	}
	s.afterUnlock = nil
	if !read {
		t.Fatal("no reader ran right after the merge's write")
	}
	if last := history[len(history)-1]; last.Op != blocks.OpMerge || last.Actor != "ann" {
		t.Errorf("the history's last change right after the merge: %s/%s, want ann/merge", last.Actor, last.Op)
	}
	if got, _ := value.(string); !strings.Contains(got, "from a peer") {
		t.Errorf("a view right after the merge reads %q, without the merge", got)
	}
}

// TestReaderRightAfterAnEditSeesIt: the same for an edit. Once the writer
// lets go of the block its edit is committed, and the block's stamp has
// moved (BlocksChanged consumers may already be reading): a view must
// read the edit, not the state before it until the edit's call returns.
func TestReaderRightAfterAnEditSeesIt(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "unlock.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	e := s.cachedEntry("ann", "notes")
	if e == nil {
		t.Fatal("the block is not cached")
	}
	before, _, _, _ := e.freshness()
	var (
		history []blocks.Change
		value   any
		read    bool
	)
	s.afterUnlock = func(u *entry) {
		if read || u != e {
			return
		}
		if seq, _, _, _ := e.freshness(); seq == before {
			return // not the edit's write
		}
		read = true
		var herr error
		if history, herr = s.blockHistory(ctx, "ann", "", "notes"); herr != nil {
			t.Error(herr)
		}
		value, _ = e.doc.View("ann", blocks.ReadWrite).Value()
	}
	if err := s.Agent("ann").Block("notes").Append(ctx, "two\n"); err != nil {
		t.Fatal(err)
	}
	s.afterUnlock = nil
	if !read {
		t.Fatal("no reader ran right after the edit's write")
	}
	if last := history[len(history)-1]; last.Op != blocks.OpAppendText {
		t.Errorf("the history's last change right after the edit: %s/%s, want ann/%s", last.Actor, last.Op, blocks.OpAppendText)
	}
	if got, _ := value.(string); !strings.Contains(got, "two") {
		t.Errorf("a view right after the edit reads %q, without the edit", got)
	}
}
