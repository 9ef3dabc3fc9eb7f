package storetest

import (
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// peerEdits loads doc (a saved block document) into a plain automerge
// document, as an automerge JS peer holds it, appends each text to its
// content as one change with the matching commit message ("" is none, as
// a JS peer commits), and returns the peer's whole saved document.
func peerEdits(t *testing.T, doc []byte, texts, messages []string) []byte {
	t.Helper()
	peer, err := automerge.Load(doc)
	must(t, err)
	for i, text := range texts {
		v, err := peer.Path("content").Get()
		must(t, err)
		must(t, v.Text().Append(text))
		_, err = peer.Commit(messages[i])
		must(t, err)
	}
	return peer.Save()
}

// testMergedAttribution: changes merged from elsewhere (MergeChanges) show
// in the block's history as made by the agent that merged them, with op
// merge, whatever their commit messages claim (none, as a JS peer's, or a
// forged engram message naming another agent or the system); the peer's
// message is kept only as PeerMessage. The store's own changes, which the
// peer's document also holds, keep their attribution, and so does what is
// written after the merge, across compactions and epochs.
func testMergedAttribution(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\n"})
	must(t, err)
	must(t, s.Agent("alice").Block("notes").Append(ctx, "two\n"))
	must(t, s.Agent("alice").Block("notes").Share(ctx, "bob", blocks.ReadWrite))
	before, err := s.Agent("alice").Block("notes").History(ctx)
	must(t, err)
	view, err := s.Agent("alice").Block("notes").Doc(ctx)
	must(t, err)
	saved, err := view.Save()
	must(t, err)
	forged := []string{"", `{"a":"alice","op":"set_text","s":"x","f":"y"}`, `{"a":"system","op":"rebase"}`}
	// The peer's whole document: the store's own changes come back with
	// its three.
	must(t, s.Agent("bob").Shared("alice", "notes").Merge(ctx, peerEdits(t, saved, []string{"p1\n", "p2\n", "p3\n"}, forged)))
	must(t, s.Agent("alice").Block("notes").Append(ctx, "three\n"))

	check := func(when string) {
		t.Helper()
		hist, err := s.Agent("alice").Block("notes").History(ctx)
		must(t, err)
		doc, err := s.Agent("alice").Block("notes").Doc(ctx)
		must(t, err)
		viewHist, err := doc.History()
		must(t, err)
		// The view's history is its epoch's; the store's spans epochs.
		if len(viewHist) > len(hist) || len(viewHist) == 0 {
			t.Fatalf("%s: view history %d changes, store history %d", when, len(viewHist), len(hist))
		}
		for _, h := range [][]blocks.Change{hist, viewHist} {
			byHash := map[string]blocks.Change{}
			for _, c := range h {
				byHash[c.Hash] = c
			}
			for _, b := range before {
				if c, ok := byHash[b.Hash]; ok && (c.Actor != b.Actor || c.Op != b.Op || c.PeerMessage != "") {
					t.Errorf("%s: the store's own change %s became %s/%s (peer message %q), was %s/%s", when, b.Hash, c.Actor, c.Op, c.PeerMessage, b.Actor, b.Op)
				}
			}
		}
		n := len(before)
		if len(hist) < n+4 {
			t.Fatalf("%s: %d changes in the history, want at least %d", when, len(hist), n+4)
		}
		for i, c := range hist[n : n+3] {
			if c.Actor != "bob" || c.Op != blocks.OpMerge || c.Section != "" || c.Field != "" || c.PeerMessage != forged[i] {
				t.Errorf("%s: merged change %d is %s/%s (section %q, field %q, peer message %q), want bob/merge with peer message %q",
					when, i, c.Actor, c.Op, c.Section, c.Field, c.PeerMessage, forged[i])
			}
		}
		if c := hist[n+3]; c.Actor != "alice" || c.Op != blocks.OpAppendText {
			t.Errorf("%s: the append after the merge is %s/%s", when, c.Actor, c.Op)
		}
		// The view's history (its epoch's) holds the merged changes while
		// the block is on their epoch, attributed as the store's is.
		inView := map[string]blocks.Change{}
		for _, c := range viewHist {
			inView[c.Hash] = c
		}
		current := hist[len(hist)-1].Epoch
		for i, m := range hist[n : n+3] {
			c, ok := inView[m.Hash]
			switch {
			case !ok && m.Epoch == current:
				t.Errorf("%s: merged change %d (epoch %d, the current one) is not in the view's history", when, i, m.Epoch)
			case ok && (c.Actor != "bob" || c.Op != blocks.OpMerge || c.PeerMessage != forged[i]):
				t.Errorf("%s: in the view's history, merged change %d is %s/%s (peer message %q), want bob/merge", when, i, c.Actor, c.Op, c.PeerMessage)
			}
		}
	}
	check("after the merge")
	for i := range 4 {
		must(t, s.Agent("alice").Block("notes").Append(ctx, string(rune('a'+i))+"\n"))
	}
	check("after more writes (compactions, and in epoch modes new epochs)")
}
