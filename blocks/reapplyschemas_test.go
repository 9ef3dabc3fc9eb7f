package blocks_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// setup: d persisted "start", other a fork; d makes unpersisted edits,
// other edits and persists, other's epoch is archived and rebased.
// Returns the replica, its doc, the archived epoch, the new epoch's doc.
func carrySetup(t *testing.T) (blockseam.Replica, *blocks.Document, []byte, *blocks.Document) {
	t.Helper()
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("start\n", blocks.Agent))
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	other, err := d.Fork()
	must(t, err)
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)
	must(t, d.AppendText("ours-1\n", blocks.Agent))
	must(t, other.AppendText("theirs-1\n", blocks.Agent))
	_, h2, err := other.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(other, h2))
	old, err := other.Save()
	must(t, err)
	nd, err := other.Rebased()
	must(t, err)
	must(t, nd.AppendText("theirs-2\n", blocks.Agent))
	_, h3, err := nd.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(nd, h3))
	return rep, d, old, nd
}

// Reset → Reapply(through archive) → more local edits: sequence numbers of
// this replica's actor stay contiguous, pending changes load on another
// replica of the new epoch, Save/Load round-trips.
func TestReapplyThenEditKeepsSequence(t *testing.T) {
	rep, d, old, nd := carrySetup(t)
	snap, err := nd.Save()
	must(t, err)
	k, err := rep.Reset(snap)
	must(t, err)
	if k == nil {
		t.Fatal("nothing carried")
	}
	must(t, rep.Reapply(k, [][]byte{old}))
	for i := range 5 {
		must(t, d.AppendText(fmt.Sprintf("ours-after-%d\n", i), blocks.Agent))
	}
	am, err := blockseam.Automerge(d)
	must(t, err)
	chs, err := am.Changes()
	must(t, err)
	seqs := map[string][]uint64{}
	for _, ch := range chs {
		seqs[ch.ActorID()] = append(seqs[ch.ActorID()], ch.ActorSeq())
	}
	for a, s := range seqs {
		for i, q := range s {
			if q != uint64(i+1) {
				t.Errorf("actor %s seqs %v not contiguous", a[:8], s)
				break
			}
		}
	}
	data, _, err := d.PendingChanges()
	must(t, err)
	must(t, nd.LoadIncremental(data))
	want, _ := d.Text()
	if got, _ := nd.Text(); got != want {
		t.Fatalf("other replica %q, want %q", got, want)
	}
	for _, l := range []string{"start", "ours-1", "theirs-1", "theirs-2", "ours-after-4"} {
		if strings.Count(want, l+"\n") != 1 {
			t.Errorf("%q not once in %q", l, want)
		}
	}
	for _, doc := range []*blocks.Document{d, nd} {
		b, err := doc.Save()
		must(t, err)
		re, err := automerge.Load(b)
		if err != nil {
			t.Fatalf("Load of saved: %v", err)
		}
		_ = re
	}
	t.Logf("text %q seqs %v", want, seqs)
}

func logMessages(t *testing.T, d *blocks.Document) []string {
	t.Helper()
	v, err := d.Value()
	must(t, err)
	var out []string
	for _, e := range v.([]blocks.LogEntry) {
		out = append(out, e.Message)
	}
	return out
}

// A Log block: this replica appends X unflushed while the other writer
// appends Y (persisted) on the same epoch; the other writer's next epoch
// trims the oldest entries. Carried through the archive, X is re-made on
// the new epoch's first state, before the trim: when automerge ordered X
// before Y, the Log diff (rotatedOut finds no overlap) deletes every entry
// and appends them all again, and the trim's deletes miss the copies: the
// trimmed entries come back.
func TestReapplyKeepsLogTrim(t *testing.T) {
	bad := 0
	for trial := range 20 {
		for _, through := range []bool{false, true} {
			d := newDoc(t, schema.Log{}, blocks.Admin)
			for i := range 4 {
				must(t, d.AppendLogEntry(map[string]any{"message": fmt.Sprintf("e%d", i)}, blocks.Agent))
			}
			_, heads, err := d.PendingChanges()
			must(t, err)
			must(t, blockseam.MarkPersisted(d, heads))
			other, err := d.Fork()
			must(t, err)
			rep, err := blockseam.Manage(d, directWriter{})
			must(t, err)
			must(t, d.AppendLogEntry(map[string]any{"message": "X"}, blocks.Agent))
			must(t, other.AppendLogEntry(map[string]any{"message": "Y"}, blocks.Agent))
			_, h2, err := other.PendingChanges()
			must(t, err)
			must(t, blockseam.MarkPersisted(other, h2))
			old, err := other.Save()
			must(t, err)
			nd, err := other.Rebased()
			must(t, err)
			_, err = nd.TrimLog(2, blocks.Agent) // keeps e3, Y
			must(t, err)
			_, h3, err := nd.PendingChanges()
			must(t, err)
			must(t, blockseam.MarkPersisted(nd, h3))
			snap, err := nd.Save()
			must(t, err)
			k, err := rep.Reset(snap)
			must(t, err)
			var arch [][]byte
			if through {
				arch = [][]byte{old}
			}
			must(t, rep.Reapply(k, arch))
			got := logMessages(t, d)
			// What the other writer's replica reads once it loads the change.
			data, _, err := d.PendingChanges()
			must(t, err)
			must(t, nd.LoadIncremental(data))
			gotOther := logMessages(t, nd)
			s := strings.Join(got, ",")
			if strings.Contains(s, "e0") || strings.Contains(s, "e1") || strings.Contains(s, "e2") || strings.Count(s, "X") != 1 {
				t.Errorf("trial %d archive=%v: %v (other replica %v), want [e3 Y X] in some order, trimmed e0-e2 gone", trial, through, got, gotOther)
				bad++
			}
		}
	}
	t.Logf("%d bad", bad)
}

func listItems(t *testing.T, d *blocks.Document) string {
	t.Helper()
	its, err := d.Items()
	must(t, err)
	var out []string
	for _, it := range its {
		s := fmt.Sprint(it.Value)
		if it.Checked {
			s += "✓"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// A List block: this replica checks item b unflushed; the other writer
// rebases and then deletes b (persisted, in the new epoch's snapshot).
// By value the delete holds; through the archive the check is re-made as
// "replace b by b✓" on the new epoch's first state, concurrent with the
// delete: b comes back.
func TestReapplyKeepsListDelete(t *testing.T) {
	for _, through := range []bool{false, true} {
		d := newDoc(t, schema.List{Checkbox: true}, blocks.ReadWrite)
		for _, s := range []string{"a", "b", "c"} {
			must(t, d.PushItem(s, blocks.Agent))
		}
		_, heads, err := d.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(d, heads))
		other, err := d.Fork()
		must(t, err)
		rep, err := blockseam.Manage(d, directWriter{})
		must(t, err)
		must(t, d.CheckItem(1, true, blocks.Agent)) // b✓, unflushed
		old, err := other.Save()
		must(t, err)
		nd, err := other.Rebased()
		must(t, err)
		must(t, nd.DeleteItem(1, blocks.Agent)) // b deleted on the new epoch
		_, h3, err := nd.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(nd, h3))
		snap, err := nd.Save()
		must(t, err)
		k, err := rep.Reset(snap)
		must(t, err)
		if got := listItems(t, d); got != "a,c" {
			t.Fatalf("after reset %q", got)
		}
		var arch [][]byte
		if through {
			arch = [][]byte{old}
		}
		must(t, rep.Reapply(k, arch))
		got := listItems(t, d)
		t.Logf("archive=%v: %s", through, got)
		if got != "a,c" {
			t.Errorf("archive=%v: items %q after reapply; the other writer's acknowledged delete of b is undone (by value: a,c)", through, got)
		}
	}
}

// A Map block's list field: this replica appends "ours" unflushed; the
// other writer rebases, then appends "theirs-after" (persisted, in the new
// epoch's snapshot). Through the archive the carried append is re-made by
// writeField, which sets a new list on the epoch's first state: that set
// overwrites the list the other writer appended to, and its item is gone.
func TestReapplyKeepsListFieldAppends(t *testing.T) {
	s := schema.Map{Fields: []schema.FieldDef{{Name: "l", Type: schema.FieldList}}}
	for _, through := range []bool{false, true} {
		d := newDoc(t, s, blocks.ReadWrite)
		must(t, d.AppendToListField("l", "first", blocks.Agent))
		_, heads, err := d.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(d, heads))
		other, err := d.Fork()
		must(t, err)
		rep, err := blockseam.Manage(d, directWriter{})
		must(t, err)
		must(t, d.AppendToListField("l", "ours", blocks.Agent))
		old, err := other.Save()
		must(t, err)
		nd, err := other.Rebased()
		must(t, err)
		must(t, nd.AppendToListField("l", "theirs-after", blocks.Agent))
		_, h3, err := nd.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(nd, h3))
		snap, err := nd.Save()
		must(t, err)
		k, err := rep.Reset(snap)
		must(t, err)
		var arch [][]byte
		if through {
			arch = [][]byte{old}
		}
		must(t, rep.Reapply(k, arch))
		v, err := d.Field("l")
		must(t, err)
		got := fmt.Sprint(v)
		t.Logf("archive=%v: %s", through, got)
		if !strings.Contains(got, "theirs-after") || !strings.Contains(got, "ours") {
			t.Errorf("archive=%v: l = %s, want first, theirs-after and ours", through, got)
		}
	}
}

// The List case two epochs behind: the other writer deletes b on epoch 1
// and rebases again; this replica, still on epoch 0 with b checked
// unflushed, switches to epoch 2. By value b stays deleted; through the
// archives it is back.
func TestReapplyKeepsListDeleteTwoEpochs(t *testing.T) {
	for _, through := range []bool{false, true} {
		d := newDoc(t, schema.List{Checkbox: true}, blocks.ReadWrite)
		for _, s := range []string{"a", "b", "c"} {
			must(t, d.PushItem(s, blocks.Agent))
		}
		_, heads, err := d.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(d, heads))
		other, err := d.Fork()
		must(t, err)
		rep, err := blockseam.Manage(d, directWriter{})
		must(t, err)
		must(t, d.CheckItem(1, true, blocks.Agent))
		a0, err := other.Save()
		must(t, err)
		e1, err := other.Rebased()
		must(t, err)
		must(t, e1.DeleteItem(1, blocks.Agent))
		a1, err := e1.Save()
		must(t, err)
		e2, err := e1.Rebased()
		must(t, err)
		snap, err := e2.Save()
		must(t, err)
		k, err := rep.Reset(snap)
		must(t, err)
		var arch [][]byte
		if through {
			arch = [][]byte{a0, a1}
		}
		must(t, rep.Reapply(k, arch))
		if got := listItems(t, d); got != "a,c" {
			t.Errorf("archive=%v: items %q, want a,c (b deleted on epoch 1)", through, got)
		}
	}
}

// Compaction-style epoch: StartRebase, Build, the source moves, Finish
// adds a catch-up rebase change; the builder keeps editing with the same
// actor. The carry goes through (no fallback) and keeps every line.
func TestReapplyThroughFinishCatchUp(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("start\n", blocks.Agent))
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	other, err := d.Fork()
	must(t, err)
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)
	must(t, d.AppendText("ours\n", blocks.Agent))
	must(t, other.AppendText("t1\n", blocks.Agent))
	r := other.StartRebase()
	must(t, r.Build())
	must(t, other.AppendText("t2-during-build\n", blocks.Agent))
	_, h2, err := other.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(other, h2))
	old, err := other.Save()
	must(t, err)
	nd, _, err := r.Finish()
	must(t, err)
	must(t, nd.AppendText("t3-after\n", blocks.Agent))
	am, err := blockseam.Automerge(nd)
	must(t, err)
	chs, _ := am.Changes()
	rebases := 0
	for _, ch := range chs {
		if strings.Contains(ch.Message(), `"rebase"`) {
			rebases++
		}
	}
	if rebases != 2 {
		t.Fatalf("%d rebase changes, want 2 (build + catch-up)", rebases)
	}
	snap, err := nd.Save()
	must(t, err)
	k, err := rep.Reset(snap)
	must(t, err)
	must(t, rep.Reapply(k, [][]byte{old}))
	got, _ := d.Text()
	for _, l := range []string{"start", "ours", "t1", "t2-during-build", "t3-after"} {
		if strings.Count(got, l+"\n") != 1 {
			t.Errorf("%q not once in %q", l, got)
		}
	}
	// Through, not by value: the carried change depends on the last
	// rebase change only (by value it would depend on t3-after too).
	dam, _ := blockseam.Automerge(d)
	all, _ := dam.Changes()
	var rebaseHead string
	ok := false
	for _, ch := range all {
		if strings.Contains(ch.Message(), `"rebase"`) {
			rebaseHead = ch.Hash().String()
		}
		if strings.Contains(ch.Message(), `"merge"`) {
			ok = len(ch.Dependencies()) == 1 && ch.Dependencies()[0].String() == rebaseHead
		}
	}
	if !ok {
		t.Errorf("the carried change does not sit on the epoch start (fallback to by-value?)")
	}
}
