package syncrepo

import (
	"bytes"
	"errors"
	"testing"

	"github.com/automerge/automerge-go"
)

// withChanges rewrites only a message's changes: given the changes it
// has, it gives back the same bytes; given others, a message automerge
// reads with those; on anything cut short or not a sync message, an
// error and no panic.
func TestWithChanges(t *testing.T) {
	doc := automerge.New()
	for _, s := range []string{"one", "two", "three"} {
		if err := doc.Path("k").Set(s); err != nil {
			t.Fatal(err)
		}
		if _, err := doc.Commit(s); err != nil {
			t.Fatal(err)
		}
	}
	ss := automerge.NewSyncState(doc)
	req, _ := automerge.NewSyncState(automerge.New()).GenerateMessage()
	if _, err := ss.ReceiveMessage(req.Bytes()); err != nil {
		t.Fatal(err)
	}
	m, ok := ss.GenerateMessage()
	if !ok || len(m.Changes()) != 3 {
		t.Fatalf("no message with the 3 changes: %v", ok)
	}
	msg := m.Bytes()
	all := m.Changes()
	for _, tc := range []struct {
		name    string
		changes []*automerge.Change
	}{
		{"the same", all},
		{"none", nil},
		{"one", all[2:]},
	} {
		out, err := withChanges(msg, tc.changes)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if tc.name == "the same" && !bytes.Equal(out, msg) {
			t.Errorf("the same changes gave\n%x, not\n%x", out, msg)
		}
		got, err := automerge.NewSyncState(automerge.New()).ReceiveMessage(out)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got.Changes()) != len(tc.changes) || !equalHashes(got.Heads(), m.Heads()) {
			t.Errorf("%s: %d changes, heads %v (want %d, %v)", tc.name, len(got.Changes()), got.Heads(), len(tc.changes), m.Heads())
		}
		for i, c := range got.Changes() {
			if c.Hash() != tc.changes[i].Hash() {
				t.Errorf("%s: change %d is %s, want %s", tc.name, i, c.Hash(), tc.changes[i].Hash())
			}
		}
	}
	for n := range len(msg) {
		if _, err := withChanges(msg[:n], all); !errors.Is(err, errSyncMessage) {
			t.Errorf("the first %d bytes of %d: %v", n, len(msg), err)
		}
	}
}

func equalHashes(a, b []automerge.ChangeHash) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkComplete measures what complete adds to a push on a
// 10 000-character text of 100 changes, beside automerge's own work for
// the same message (a sync state's receive and generate).
func BenchmarkComplete(b *testing.B) {
	peer := automerge.New()
	if err := peer.RootMap().Set("content", automerge.NewText("")); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		v, _ := peer.Path("content").Get()
		if err := v.Text().Append(string(rune('a'+i%26)) + "123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"); err != nil {
			b.Fatal(err)
		}
		if _, err := peer.Commit("edit"); err != nil {
			b.Fatal(err)
		}
	}
	server, err := automerge.Load(peer.Save())
	if err != nil {
		b.Fatal(err)
	}
	v, _ := server.Path("content").Get()
	if err := v.Text().Append("more"); err != nil {
		b.Fatal(err)
	}
	if _, err := server.Commit("server"); err != nil {
		b.Fatal(err)
	}
	req, _ := automerge.NewSyncState(peer).GenerateMessage()
	round := func() *automerge.SyncMessage {
		ss := automerge.NewSyncState(server)
		if _, err := ss.ReceiveMessage(req.Bytes()); err != nil {
			b.Fatal(err)
		}
		m, ok := ss.GenerateMessage()
		if !ok {
			b.Fatal("no message")
		}
		return m
	}
	b.Run("automerge", func(b *testing.B) {
		for b.Loop() {
			round()
		}
	})
	m := round()
	b.Run("complete", func(b *testing.B) {
		for b.Loop() {
			d := &docState{heard: true, peerHeads: peer.Heads()}
			if _, err := d.complete(server, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
