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

// openOneBlock opens a store in a temporary directory with ann's Text
// block "notes" reading "one\n", and returns it with its path.
func openOneBlock(t *testing.T) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "notes.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// peerAppend returns a change appending text to ann's "notes", made on a
// plain automerge copy of the block as s reads it.
func peerAppend(t *testing.T, s *Store, text string) []byte {
	t.Helper()
	return peerEdit(t, s, "ann", "notes", func(txt *automerge.Text) error { return txt.Append(text) })
}

// peerEdit returns the change edit makes to the content of owner's Text
// block label, on a plain automerge copy of the block as s reads it.
func peerEdit(t *testing.T, s *Store, owner, label string, edit func(*automerge.Text) error) []byte {
	t.Helper()
	doc, err := s.GetBlock(context.Background(), owner, label)
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
	if err := edit(v.Text()); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit(""); err != nil {
		t.Fatal(err)
	}
	return peer.SaveIncremental()
}

// readRightAfterWrite runs write with a reader hooked in right after the
// block's lock is released once its row moved (the write committed), and
// returns the history and the view's value that reader saw.
func readRightAfterWrite(t *testing.T, s *Store, write func() error) ([]blocks.Change, string) {
	t.Helper()
	ctx := context.Background()
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
			return // not the write's
		}
		read = true // (the reads below unlock the block too)
		var herr error
		if history, herr = s.blockHistory(ctx, "ann", "", "notes"); herr != nil {
			t.Error(herr)
		}
		value, _ = e.doc.View("ann", blocks.ReadWrite).Value()
	}
	err := write()
	s.afterUnlock = nil
	if err != nil {
		t.Fatal(err)
	}
	if !read || len(history) == 0 {
		t.Fatal("no reader ran right after the write")
	}
	str, _ := value.(string)
	return history, str
}

// TestReaderRightAfterAMergeSeesIt: a merge's state is hidden from views
// until its write ends (the write may still fail). A reader that takes the
// block the moment the merging writer lets go of it must see the merge
// the writer committed, not the state before it.
func TestReaderRightAfterAMergeSeesIt(t *testing.T) {
	s, _ := openOneBlock(t)
	data := peerAppend(t, s, "from a peer\n")
	history, value := readRightAfterWrite(t, s, func() error {
		return s.Agent("ann").Block("notes").Merge(context.Background(), data)
	})
	if last := history[len(history)-1]; last.Op != blocks.OpMerge || last.Actor != "ann" {
		t.Errorf("the history's last change right after the merge: %s/%s, want ann/merge", last.Actor, last.Op)
	}
	if !strings.Contains(value, "from a peer") {
		t.Errorf("a view right after the merge reads %q, without the merge", value)
	}
}

// TestReaderRightAfterAnEditSeesIt: the same for an edit. Once the writer
// lets go of the block its edit is committed, and the block's stamp has
// moved (BlocksChanged consumers may already be reading): a view must
// read the edit, not the state before it until the edit's call returns.
func TestReaderRightAfterAnEditSeesIt(t *testing.T) {
	s, _ := openOneBlock(t)
	history, value := readRightAfterWrite(t, s, func() error {
		return s.Agent("ann").Block("notes").Append(context.Background(), "two\n")
	})
	if last := history[len(history)-1]; last.Op != blocks.OpAppendText {
		t.Errorf("the history's last change right after the edit: %s/%s, want ann/%s", last.Actor, last.Op, blocks.OpAppendText)
	}
	if !strings.Contains(value, "two") {
		t.Errorf("a view right after the edit reads %q, without the edit", value)
	}
}

// TestEditEventHeadsAreItsOwn: an edit's event names the heads its own
// write left, even when another writer takes the block the moment the
// first lets go of it and commits before the first edit's event fires.
func TestEditEventHeadsAreItsOwn(t *testing.T) {
	s, _ := openOneBlock(t)
	ctx := context.Background()
	e := s.cachedEntry("ann", "notes")
	if e == nil {
		t.Fatal("the block is not cached")
	}
	var events [][]string
	cancel := e.doc.View("ann", blocks.ReadWrite).Subscribe(func(ev blocks.Event) {
		if ev.Op != "" {
			events = append(events, ev.Heads)
		}
	})
	defer cancel()
	var second bool
	s.afterUnlock = func(u *entry) {
		if second || u != e {
			return
		}
		second = true
		if err := s.Agent("ann").Block("notes").Append(ctx, "three\n"); err != nil {
			t.Error(err)
		}
	}
	err := s.Agent("ann").Block("notes").Append(ctx, "two\n")
	s.afterUnlock = nil
	if err != nil {
		t.Fatal(err)
	}
	if !second || len(events) != 2 {
		t.Fatalf("second write ran: %v; events: %d, want 2", second, len(events))
	}
	history, err := s.blockHistory(ctx, "ann", "", "notes")
	if err != nil {
		t.Fatal(err)
	}
	if len(history) < 2 {
		t.Fatalf("history has %d changes", len(history))
	}
	// The second edit's event fires first (it ran inside the first's
	// unlock); the first's comes after it and names its own change.
	two, three := history[len(history)-2].Hash, history[len(history)-1].Hash
	if got := fmt.Sprint(events[0]); got != fmt.Sprint([]string{three}) {
		t.Errorf("the second edit's event heads %s, want its change %s", got, three)
	}
	if got := fmt.Sprint(events[1]); got != fmt.Sprint([]string{two}) {
		t.Errorf("the first edit's event heads %s, want its change %s (not the later writer's %s)", got, two, three)
	}
}
