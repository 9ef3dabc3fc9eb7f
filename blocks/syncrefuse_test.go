package blocks_test

import (
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// syncRounds runs the sync protocol between s (the block's side) and a raw
// automerge peer until both are quiet, and returns the first error the
// block's side gave.
func syncRounds(t *testing.T, s *blocks.SyncState, peer *automerge.SyncState) error {
	t.Helper()
	var first error
	for i := 0; i < 20; i++ {
		m1, ok1 := s.GenerateMessage()
		if ok1 {
			if _, err := peer.ReceiveMessage(m1); err != nil {
				t.Fatal(err)
			}
		}
		m2, ok2 := peer.GenerateMessage()
		if ok2 {
			if err := s.ReceiveMessage(m2.Bytes()); err != nil && first == nil {
				first = err
			}
		}
		if !ok1 && !ok2 {
			break
		}
	}
	return first
}

// A sync message whose changes the block refuses is rolled back, and the
// sync sessions go on with the document as it is: no session relays the
// refused change to another peer, and later good changes still arrive.
func TestSyncAfterRefusedMessage(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	saved, err := a.Save()
	must(t, err)
	bad, err := automerge.Load(saved)
	must(t, err)
	good, err := automerge.Load(saved)
	must(t, err)
	third, err := automerge.Load(saved)
	must(t, err)
	sBad, sGood, sThird := a.NewSyncState(), a.NewSyncState(), a.NewSyncState()

	// The bad peer puts a NUL byte in the text: refused.
	txt, err := bad.RootMap().Get("content")
	must(t, err)
	must(t, txt.Text().Append("\x00evil"))
	_, err = bad.Commit("bad")
	must(t, err)
	if err := syncRounds(t, sBad, automerge.NewSyncState(bad)); err == nil {
		t.Fatal("a NUL byte came in by sync")
	}
	if strings.Contains(a.Render(), "evil") {
		t.Fatalf("refused change kept: %q", a.Render())
	}

	// Another session must not hand the refused change on.
	thirdPeer := automerge.NewSyncState(third)
	must(t, syncRounds(t, sThird, thirdPeer))
	v, err := third.RootMap().Get("content")
	must(t, err)
	if s, _ := v.Text().Get(); strings.Contains(s, "evil") {
		t.Fatalf("a sync session relayed a refused change: peer now holds %q", s)
	}

	// A good change from another peer still arrives.
	gt, err := good.RootMap().Get("content")
	must(t, err)
	must(t, gt.Text().Append(" and more"))
	_, err = good.Commit("good")
	must(t, err)
	must(t, syncRounds(t, sGood, automerge.NewSyncState(good)))
	if got := a.Render(); !strings.Contains(got, "and more") {
		t.Fatalf("a good change after a refused one did not arrive by sync: %q", got)
	}
}
