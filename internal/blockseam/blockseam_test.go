package blockseam_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// countingWriter applies each edit at once and counts the writes.
type countingWriter struct{ reqs []blockseam.WriteRequest }

func (w *countingWriter) Write(_ context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	w.reqs = append(w.reqs, req)
	return apply(req.Permission)
}

func newDoc(t *testing.T) *blocks.Document {
	t.Helper()
	d, err := blocks.New(blocks.Info{Label: "desk", Type: blocks.Core, Permission: blocks.ReadWrite, Owner: "ada",
		Schema: schema.Composite{Sections: []schema.Section{{Name: "notes", Schema: schema.Text{}}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A managed document's writes, section writes included, run inside the
// store's Writer; a document is managed once; changes from elsewhere enter
// only through the Replica.
func TestManage(t *testing.T) {
	d := newDoc(t)
	w := &countingWriter{}
	rep, err := blockseam.Manage(d, w)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Managed() {
		t.Fatal("Managed() = false after Manage")
	}
	if err := d.Section("notes").AppendText("hi", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	if len(w.reqs) != 1 || w.reqs[0].Op != blocks.OpAppendText || w.reqs[0].Label != "desk" {
		t.Fatalf("writer saw %+v, want one append_text on desk", w.reqs)
	}
	if _, err := blockseam.Manage(d, w); !errors.Is(err, blocks.ErrManaged) {
		t.Errorf("second Manage: err = %v, want ErrManaged", err)
	}
	if _, err := blockseam.Manage(nil, w); err == nil {
		t.Error("Manage of a nil document: no error")
	}

	peer, err := d.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if err := peer.Section("notes").AppendText(" there", blocks.System); err != nil {
		t.Fatal(err)
	}
	data, _, err := peer.PendingChanges()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.LoadIncremental(data); !errors.Is(err, blocks.ErrManaged) {
		t.Errorf("LoadIncremental on a managed document: err = %v, want ErrManaged", err)
	}
	fresh, _, err := rep.Merge(data, blocks.Origin{Agent: "bob", Permission: blocks.ReadWrite})
	if err != nil || len(fresh.Hashes) != 1 {
		t.Fatalf("Replica.Merge: %+v, %v; want one new change", fresh, err)
	}
	if got, _ := d.Section("notes").Text(); got != "hi there" {
		t.Errorf("text = %q after the merge, want %q", got, "hi there")
	}
}

// Reapply takes only what Reset carried.
func TestReapplyRefusesWhatResetDidNotCarry(t *testing.T) {
	rep, err := blockseam.Manage(newDoc(t), &countingWriter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Reapply(nil, nil); err != nil {
		t.Errorf("Reapply(nil) = %v, want nil (nothing carried)", err)
	}
	if err := rep.Reapply(&blockseam.Carried{State: "forged"}, nil); err == nil {
		t.Error("Reapply of a Carried Reset did not make: no error")
	}
}

// MarkPersisted ends what PendingChanges returns.
func TestMarkPersisted(t *testing.T) {
	d := newDoc(t)
	if err := d.Section("notes").SetText("x", blocks.System); err != nil {
		t.Fatal(err)
	}
	if !d.Dirty() {
		t.Fatal("not Dirty after an edit")
	}
	_, heads, err := d.PendingChanges()
	if err != nil {
		t.Fatal(err)
	}
	if err := blockseam.MarkPersisted(d, heads); err != nil {
		t.Fatal(err)
	}
	if d.Dirty() {
		t.Error("Dirty after MarkPersisted of the pending heads")
	}
	if err := blockseam.MarkPersisted(d, []string{"not a hash"}); err == nil {
		t.Error("MarkPersisted of a malformed head: no error")
	}
}
