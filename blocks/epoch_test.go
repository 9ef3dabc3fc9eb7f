package blocks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// directWriter is a store-like Writer that applies every edit
// directly, so Reset and Reapply can be driven through a Replica.
type directWriter struct{}

func (directWriter) Write(_ context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	return apply(req.Permission)
}

func TestRebasedKeepsValueAndRendering(t *testing.T) {
	for _, s := range []schema.Schema{schema.Text{}, fuzzSchema(),
		schema.Map{Fields: []schema.FieldDef{{Name: "n", Type: schema.FieldCounter}, {Name: "s", Type: schema.FieldString}, {Name: "l", Type: schema.FieldList}}},
		schema.List{Checkbox: true}, schema.Log{}} {
		t.Run(string(s.Kind()), func(t *testing.T) {
			d := newDoc(t, s, blocks.ReadWrite)
			switch s.Kind() {
			case schema.KindText:
				for i := range 50 {
					must(t, d.SetText(strings.Repeat("line\n", i%7)+"tail é😀", blocks.Agent))
				}
			case schema.KindComposite:
				must(t, d.Section("text").SetText("a\nb\nc\nd", blocks.Agent))
				must(t, d.Section("map").IncrementCounter("c", 5, blocks.Agent))
				must(t, d.Section("list").PushItem("x", blocks.Agent))
				must(t, d.Section("log").AppendLogEntry(map[string]any{"message": "m"}, blocks.Agent))
			case schema.KindMap:
				must(t, d.IncrementCounter("n", 3, blocks.Agent))
				must(t, d.IncrementCounter("n", -1, blocks.Agent))
				must(t, d.SetField("s", "v", blocks.Agent))
				must(t, d.AppendToListField("l", "i", blocks.Agent))
			case schema.KindList:
				must(t, d.PushItem("one", blocks.Agent))
				must(t, d.PushItem("two", blocks.Agent))
				must(t, d.CheckItem(1, true, blocks.Agent))
				must(t, d.DeleteItem(0, blocks.Agent))
			case schema.KindLog:
				for i := range 5 {
					must(t, d.AppendLogEntry(map[string]any{"message": strings.Repeat("x", i)}, blocks.Agent))
				}
			}
			nd, err := d.Rebased()
			must(t, err)
			if got, want := nd.Render(), d.Render(); got != want {
				t.Fatalf("rebased render differs:\n%q\n%q", got, want)
			}
			h, err := nd.History()
			must(t, err)
			if len(h) != 1 || h[0].Op != blocks.OpRebase || h[0].Actor != "system" {
				t.Fatalf("a new epoch has one system rebase change, got %+v", h)
			}
			if nd.Dirty() {
				t.Fatal("a rebased document has nothing pending")
			}
			// The counter still counts from its value.
			if s.Kind() == schema.KindMap {
				must(t, nd.IncrementCounter("n", 1, blocks.Agent))
				if v, _ := nd.Field("n"); v != int64(3) {
					t.Fatalf("counter after rebase + 1 = %v, want 3", v)
				}
			}
		})
	}
}

// TestResetKeepsViewsAndRefusesOldChanges runs for both ways into a new
// epoch: Reset (the snapshot's bytes, as another writer's rebase arrives)
// and Adopt (the fresh document itself, as the rebasing writer enters it).
func TestResetKeepsViewsAndRefusesOldChanges(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		name := map[bool]string{false: "reset", true: "adopt"}[adopt]
		t.Run(name, func(t *testing.T) { testResetKeepsViews(t, adopt) })
	}
}

func testResetKeepsViews(t *testing.T, adopt bool) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("alpha\nbeta\n", blocks.Agent))
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	stale, err := d.Fork() // a peer on the old epoch
	must(t, err)
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)
	view := d.View("other", blocks.ReadWrite)
	nd, err := d.Rebased()
	must(t, err)
	data, err := nd.Save()
	must(t, err)
	newHeads := strings.Join(nd.Heads(), ",")
	var events int
	cancel := d.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			events++
		}
	})
	defer cancel()
	var k *blockseam.Carried
	if adopt {
		k, err = rep.Adopt(nd)
		must(t, err)
		if _, err := rep.Adopt(nd); err == nil {
			t.Fatal("a fresh document was adopted twice")
		}
	} else {
		k, err = rep.Reset(data)
		must(t, err)
	}
	if k != nil {
		t.Fatal("nothing was pending, nothing is carried")
	}
	if events != 1 {
		t.Fatalf("subscribers heard %d remote events, want 1", events)
	}
	if got := strings.Join(d.Heads(), ","); got != newHeads {
		t.Fatalf("heads after reset %v, want the new epoch's %v", got, newHeads)
	}
	if d.Dirty() {
		t.Fatal("the new epoch's document counts as persisted")
	}
	// An old view writes on the new epoch.
	must(t, view.AppendText("gamma\n", blocks.Agent))
	if got, _ := d.Text(); got != "alpha\nbeta\ngamma\n" {
		t.Fatalf("text = %q", got)
	}
	// What the new epoch's writer sends, another replica that loaded the
	// snapshot takes (the adopted document is the snapshot's).
	other, err := blocks.Load(d.Info(), data, nil)
	must(t, err)
	inc, _, err := d.PendingChanges()
	must(t, err)
	if err := other.LoadIncremental(inc); err != nil {
		t.Fatalf("a replica of the new epoch refused its writer's change: %v", err)
	}
	if got, _ := other.Text(); got != "alpha\nbeta\ngamma\n" {
		t.Fatalf("the other replica reads %q", got)
	}
	// The stale peer's edits, whole document or changes, are refused:
	// merging them would put its history (and text) in twice.
	must(t, stale.AppendText("delta\n", blocks.Agent))
	whole, err := stale.Save()
	must(t, err)
	if _, _, err := rep.Merge(whole, blocks.Origin{System: true}); !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("merging an old epoch's document: %v, want ErrUnrelated", err)
	}
	inc, _, err = stale.PendingChanges()
	must(t, err)
	if _, _, err := rep.Merge(inc, blocks.Origin{System: true}); err == nil {
		t.Fatal("merging an old epoch's change was accepted")
	}
	if got, _ := d.Text(); got != "alpha\nbeta\ngamma\n" {
		t.Fatalf("a refused merge changed the text: %q", got)
	}
}

func TestReapplyCarriesUnpersistedEdits(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("one\ntwo\nthree\n", blocks.Agent))
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	// Another writer's replica rebases and then edits the first line.
	other, err := d.Fork()
	must(t, err)
	nd, err := other.Rebased()
	must(t, err)
	must(t, nd.SetText("ONE\ntwo\nthree\n", blocks.Agent))
	newEpoch, err := nd.Save()
	must(t, err)
	// Meanwhile this replica edits the last line and has not persisted it.
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)
	must(t, d.SetText("one\ntwo\nTHREE\n", blocks.Agent))
	k, err := rep.Reset(newEpoch)
	must(t, err)
	if k == nil {
		t.Fatal("the unpersisted edit was not carried")
	}
	if got, _ := d.Text(); got != "ONE\ntwo\nthree\n" {
		t.Fatalf("after reset: %q, want the new epoch's text", got)
	}
	must(t, rep.Reapply(k, nil))
	if got, _ := d.Text(); got != "ONE\ntwo\nTHREE\n" {
		t.Fatalf("after reapply: %q, want both edits once", got)
	}
	if !d.Dirty() {
		t.Fatal("the re-applied edit is pending")
	}
	// It loads on the new epoch's document: nothing from the old history.
	data, _, err := d.PendingChanges()
	must(t, err)
	must(t, nd.LoadIncremental(data))
	if got, _ := nd.Text(); got != "ONE\ntwo\nTHREE\n" {
		t.Fatalf("the new epoch with the re-applied change reads %q", got)
	}
}

// Unpersisted edits of this replica interleaved with another writer's
// change it merged (the order once found to lose edits: ours, theirs, ours, then
// the other writer rebases) are all carried to the new epoch: the carried
// base holds the other writer's change and none of ours.
func TestReapplyCarriesEditsAroundAMergedChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps string // o: this replica appends, t: the other writer's append merges in
	}{
		{"ours theirs ours", "oto"},
		{"theirs ours", "to"},
		{"ours theirs", "ot"},
		{"ours ours theirs theirs ours", "ootto"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoc(t, schema.Text{}, blocks.ReadWrite)
			_, heads, err := d.PendingChanges()
			must(t, err)
			must(t, blockseam.MarkPersisted(d, heads))
			other, err := d.Fork()
			must(t, err)
			rep, err := blockseam.Manage(d, directWriter{})
			must(t, err)
			for i, step := range tc.steps {
				line := fmt.Sprintf("%c%d\n", step, i)
				if step == 'o' {
					must(t, d.AppendText(line, blocks.Agent))
					continue
				}
				// The other writer appends and persists; this replica
				// loads its change, as a store's refresh does.
				must(t, other.AppendText(line, blocks.Agent))
				data, heads, err := other.PendingChanges()
				must(t, err)
				must(t, blockseam.MarkPersisted(other, heads))
				must(t, rep.LoadIncremental(data))
			}
			// The other writer rebases: the new epoch holds its changes only.
			nd, err := other.Rebased()
			must(t, err)
			newEpoch, err := nd.Save()
			must(t, err)
			// Every line once, in the order automerge merged them.
			want, _ := d.Text()
			if n := strings.Count(want, "\n"); n != len(tc.steps) {
				t.Fatalf("before the reset: %q, want %d lines", want, len(tc.steps))
			}
			k, err := rep.Reset(newEpoch)
			must(t, err)
			if k == nil {
				t.Fatal("the unpersisted edits were not carried")
			}
			must(t, rep.Reapply(k, nil))
			if got, _ := d.Text(); got != want {
				t.Fatalf("after reapply: %q, want %q", got, want)
			}
		})
	}
}

// TestSizeBytes: a block's size in bytes follows appends (counted from
// the appended text only) and whole rewrites, beside its size in
// characters.
func TestSizeBytes(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	check := func(want string) {
		t.Helper()
		if got := d.SizeBytes(); got != len(want) {
			t.Fatalf("SizeBytes = %d, want %d", got, len(want))
		}
		if got := d.Size(); got != len([]rune(want)) {
			t.Fatalf("Size = %d, want %d", got, len([]rune(want)))
		}
	}
	must(t, d.SetText("abc", blocks.Agent))
	check("abc")
	must(t, d.AppendText("記憶😀", blocks.Agent))
	check("abc記憶😀")
	must(t, d.SetText("é", blocks.Agent))
	check("é")
}
