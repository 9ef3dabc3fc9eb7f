package blocks_test

import (
	"errors"
	"testing"

	"github.com/engram-go/engram/blocks"
)

func TestHistoryAtRestore(t *testing.T) {
	d := textDoc(t, blocks.ReadWrite)
	v1 := d.Heads()
	must(t, d.AppendText(" v2", blocks.Agent))
	must(t, d.SetText("rewritten", blocks.Agent))
	h, err := d.History()
	must(t, err)
	if len(h) != 4 {
		t.Fatalf("history has %d changes, want 4: %+v", len(h), h)
	}
	wantOps := []blocks.Op{blocks.OpCreate, blocks.OpSetText, blocks.OpAppendText, blocks.OpSetText}
	wantActors := []string{"system", "system", "agent-1", "agent-1"}
	for i, c := range h {
		if c.Op != wantOps[i] || c.Actor != wantActors[i] || c.Time.IsZero() || c.Hash == "" {
			t.Fatalf("change %d = %+v, want %s by %s", i, c, wantOps[i], wantActors[i])
		}
	}
	old, err := d.At(v1)
	must(t, err)
	if got, _ := old.Text(); got != "hello world" {
		t.Fatalf("At(v1) = %q", got)
	}
	if err := old.AppendText("x", blocks.System); !errors.Is(err, blocks.ErrHistorical) {
		t.Fatalf("write to historical view: %v", err)
	}
	must(t, d.Restore(v1, blocks.Agent))
	if got, _ := d.Text(); got != "hello world" {
		t.Fatalf("after restore = %q", got)
	}
	h2, _ := d.History()
	if len(h2) != 5 || h2[4].Op != blocks.OpRestore {
		t.Fatalf("restore should be a new change: %+v", h2[len(h2)-1])
	}
	if _, err := d.At([]string{"zz"}); err == nil {
		t.Fatal("At with a bad hash should fail")
	}
}

func TestSubscribeLocalAndRemote(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	b, err := a.Fork()
	must(t, err)
	var got []blocks.Event
	cancel := a.Subscribe(func(e blocks.Event) {
		// Called without locks: reading the document must not deadlock.
		_ = a.Render()
		got = append(got, e)
	})
	must(t, a.AppendText("!", blocks.Agent))
	must(t, b.AppendText("?", blocks.Agent))
	must(t, a.Merge(b))
	must(t, a.Merge(b)) // nothing new: no event
	if len(got) != 2 {
		t.Fatalf("events = %+v", got)
	}
	if got[0].Remote || got[0].Actor != "agent-1" || got[0].Op != blocks.OpAppendText {
		t.Fatalf("local event = %+v", got[0])
	}
	if !got[1].Remote || got[1].Op != blocks.OpMerge {
		t.Fatalf("merge event = %+v", got[1])
	}
	cancel()
	must(t, a.AppendText(".", blocks.Agent))
	if len(got) != 2 {
		t.Fatal("event after cancel")
	}
}
