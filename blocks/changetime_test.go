package blocks_test

import (
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// Change timestamps follow automerge's convention (automerge JS): whole
// seconds. Changes written with milliseconds (automerge-go's Commit, and
// engram before) still read right.
func TestChangeTimesAreSeconds(t *testing.T) {
	start := time.Now()
	doc, err := blocks.New(blocks.Info{Label: "n", Type: blocks.Working, Schema: schema.Text{}, Permission: blocks.ReadWrite}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.AppendText("hi", blocks.System); err != nil {
		t.Fatal(err)
	}
	saved, _ := doc.Save()
	raw, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	chs, _ := raw.Changes()
	end := time.Now()
	for _, ch := range chs {
		if got := ch.Timestamp().UnixMilli(); got < start.Unix() || got > end.Unix() {
			t.Fatalf("stored change time %d, want seconds in [%d, %d] (as automerge JS writes)", got, start.Unix(), end.Unix())
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	// A peer that writes milliseconds (automerge-go's default).
	v, _ := raw.RootMap().Get("content")
	v.Text().Append("!")
	raw.Commit("peer", automerge.CommitOptions{Time: &at})
	fork, _ := blocks.Load(doc.Info(), raw.Save(), nil)
	h, err := fork.History()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range h[:len(h)-1] {
		if c.Time.Before(start.Truncate(time.Second)) || c.Time.After(end) || c.Time.Nanosecond() != 0 {
			t.Fatalf("history time %v, want whole seconds between %v and %v", c.Time, start, end)
		}
	}
	if last := h[len(h)-1].Time; !last.Equal(at.Truncate(time.Millisecond)) {
		t.Fatalf("a millisecond timestamp read as %v", last)
	}
}
