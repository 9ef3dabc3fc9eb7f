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
