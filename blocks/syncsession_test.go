package blocks_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

func hashStrings(hs []automerge.ChangeHash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	slices.Sort(out)
	return out
}

// An established session (peer synced before) survives a rollback caused
// by another peer: later edits on both sides converge to equal heads.
func TestSyncEstablishedSessionAfterAnotherPeersRefusal(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	saved, err := a.Save()
	must(t, err)
	peer, err := automerge.Load(saved)
	must(t, err)
	bad, err := automerge.Load(saved)
	must(t, err)
	sPeer := a.NewSyncState()
	pss := automerge.NewSyncState(peer)
	// establish: local edit on a, peer edit, sync.
	must(t, a.AppendText(" one", blocks.System))
	pt, _ := peer.RootMap().Get("content")
	must(t, pt.Text().Append(" two"))
	_, err = peer.Commit("two")
	must(t, err)
	must(t, syncRounds(t, sPeer, pss))
	// second session, refused.
	bt, _ := bad.RootMap().Get("content")
	must(t, bt.Text().Append("\x00evil"))
	_, err = bad.Commit("bad")
	must(t, err)
	sBad := a.NewSyncState()
	bss := automerge.NewSyncState(bad)
	if err := syncRounds(t, sBad, bss); err == nil {
		t.Fatal("bad change accepted")
	}
	// refused again on the same session, then a local edit and a peer edit.
	if err := syncRounds(t, sBad, bss); err == nil && strings.Contains(a.Render(), "evil") {
		t.Fatal("bad change accepted on retry")
	}
	must(t, a.AppendText(" three", blocks.System))
	must(t, pt.Text().Append(" four"))
	_, err = peer.Commit("four")
	must(t, err)
	must(t, syncRounds(t, sPeer, pss))
	got := a.Render()
	ps, _ := pt.Text().Get()
	if got != ps {
		t.Fatalf("diverged: block %q peer %q", got, ps)
	}
	for _, w := range []string{"one", "two", "three", "four"} {
		if !strings.Contains(got, w) {
			t.Fatalf("%s missing: %q", w, got)
		}
	}
	if !slices.Equal(a.Heads(), hashStrings(peer.Heads())) {
		ah := slices.Clone(a.Heads())
		slices.Sort(ah)
		if !slices.Equal(ah, hashStrings(peer.Heads())) {
			t.Fatalf("heads differ: %v vs %v", ah, hashStrings(peer.Heads()))
		}
	}
}
