package blocks_test

import (
	"errors"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// ChangesSince hands a peer at earlier heads exactly what it lacks (a
// copy at those heads catches up to the same heads and text), nothing at
// the current heads, and ErrUnrelated for heads of another history.
func TestChangesSince(t *testing.T) {
	d := textDoc(t, blocks.ReadWrite)
	saved, err := d.Save()
	must(t, err)
	old := d.Heads()
	must(t, d.AppendText(" and more", blocks.System))
	must(t, d.AppendText(" again", blocks.System))

	data, now, err := d.ChangesSince(old)
	must(t, err)
	peer, err := automerge.Load(saved)
	must(t, err)
	must(t, peer.LoadIncremental(data))
	var got []string
	for _, h := range peer.Heads() {
		got = append(got, h.String())
	}
	if len(got) != len(now) || got[0] != now[0] || now[0] != d.Heads()[0] {
		t.Fatalf("peer heads %v, ChangesSince said %v, document %v", got, now, d.Heads())
	}
	v, err := peer.Path("content").Get()
	must(t, err)
	if s, _ := v.Text().Get(); s != "hello world and more again" {
		t.Fatalf("peer text %q", s)
	}

	if data, _, err := d.ChangesSince(now); err != nil || len(data) != 0 {
		t.Fatalf("at the current heads: %d bytes, %v", len(data), err)
	}
	other := textDoc(t, blocks.ReadWrite)
	must(t, other.AppendText("!", blocks.System))
	if _, _, err := d.ChangesSince(other.Heads()); !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("another document's heads: %v", err)
	}
	if _, _, err := d.ChangesSince([]string{"zz"}); !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("a malformed head: %v", err)
	}
}
