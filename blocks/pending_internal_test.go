package blocks

import (
	"bytes"
	"math/rand"
	"slices"
	"testing"

	"github.com/engram-go/engram/schema"
)

// TestPendingFastMatchesScan: whenever PendingChanges' shortcut answers,
// it answers what the walk over the history would, across own edits,
// persisting, changes merged in from another replica (before, after and
// between own edits) and rollbacks.
func TestPendingFastMatchesScan(t *testing.T) {
	info := Info{Label: "b", Type: Working, Schema: schema.Text{}, Permission: ReadWrite, Owner: "agent-1"}
	r := rand.New(rand.NewSource(7))
	for run := range 20 {
		d, err := New(info, nil)
		if err != nil {
			t.Fatal(err)
		}
		peer, err := d.Fork()
		if err != nil {
			t.Fatal(err)
		}
		fast := 0
		for step := range 60 {
			switch op := r.Intn(6); op {
			case 0, 1: // own edit
				if err := d.AppendText("x", Agent); err != nil {
					t.Fatal(err)
				}
			case 2: // persist what is pending
				_, heads, err := d.PendingChanges()
				if err != nil {
					t.Fatal(err)
				}
				if err := d.markPersisted(heads); err != nil {
					t.Fatal(err)
				}
			case 3: // another replica's change arrives
				if err := peer.AppendText("p", Agent); err != nil {
					t.Fatal(err)
				}
				inc, _, err := peer.PendingChanges()
				if err != nil {
					t.Fatal(err)
				}
				_, heads, _ := peer.PendingChanges()
				peer.markPersisted(heads)
				if err := d.LoadIncremental(inc); err != nil {
					t.Fatal(err)
				}
			case 4: // the other replica catches up with ours
				all, err := d.Save()
				if err != nil {
					t.Fatal(err)
				}
				if err := peer.LoadIncremental(all); err != nil {
					t.Fatal(err)
				}
			case 5: // an edit rolled back
				d.c.mu.Lock()
				before := d.c.am.Heads()
				d.c.mu.Unlock()
				if err := d.AppendText("y", Agent); err != nil {
					t.Fatal(err)
				}
				d.c.mu.Lock()
				err := d.c.rollback(before)
				d.c.mu.Unlock()
				if err != nil {
					t.Fatal(err)
				}
			}
			d.c.mu.Lock()
			fd, fh, ok := d.c.pendingFast()
			sd, sh, err := d.c.pendingScan()
			d.c.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				fast++
				if !bytes.Equal(fd, sd) || !slices.Equal(fh, sh) {
					t.Fatalf("run %d step %d: shortcut gives %d bytes, heads %v; the walk %d bytes, heads %v", run, step, len(fd), fh, len(sd), sh)
				}
			}
		}
		if fast == 0 {
			t.Fatalf("run %d: the shortcut never answered", run)
		}
	}
}
