package blocks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// rotatingWriter is a Writer that rotates: it keeps what each append
// removed.
type rotatingWriter struct{ removed [][]blocks.LogEntry }

func (w *rotatingWriter) Write(_ context.Context, req blockseam.WriteRequest, apply func(blocks.Permission) error) error {
	return apply(req.Permission)
}

func (w *rotatingWriter) RotateLog(removed []blocks.LogEntry) { w.removed = append(w.removed, removed) }

// An append to a Log block with a Retention, on a document whose Writer
// rotates, removes the oldest entries in the same change: past the
// retention and until the block fits its limit. The document's size stays
// its rendering's, the removed entries reach the Writer, and an entry too
// large on its own is ErrLimit. Without a rotating Writer nothing rotates.
func TestAppendRotates(t *testing.T) {
	info := blocks.Info{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 4}, Permission: blocks.Append, CharLimit: 200}
	d, err := blocks.New(info, nil)
	must(t, err)
	w := &rotatingWriter{}
	if _, err := blockseam.Manage(d, w); err != nil {
		t.Fatal(err)
	}
	d = d.View("ada", blocks.Append)
	var all []string
	for i := range 30 {
		msg := fmt.Sprintf("entry %02d %s", i, strings.Repeat("x", i%7))
		all = append(all, msg)
		before := changes(t, d)
		must(t, d.AppendLogEntry(map[string]any{"message": msg}, blocks.Agent))
		if got := changes(t, d); got != before+1 {
			t.Fatalf("append %d made %d changes, want 1", i, got-before)
		}
		entries, _ := d.LogEntries(0)
		full := d.Render() // no display limit: the full rendering
		if d.Size() != utf8.RuneCountInString(full) || d.Size() > 200 || len(entries) > 4 {
			t.Fatalf("append %d: size %d, rendering %d runes, %d entries", i, d.Size(), utf8.RuneCountInString(full), len(entries))
		}
		if entries[0].Message != msg {
			t.Fatalf("append %d: newest entry %q", i, entries[0].Message)
		}
	}
	var seen []string
	for _, r := range w.removed {
		for _, e := range r {
			seen = append(seen, e.Message)
		}
	}
	entries, _ := d.LogEntries(0)
	for i := len(entries) - 1; i >= 0; i-- {
		seen = append(seen, entries[i].Message)
	}
	if fmt.Sprint(seen) != fmt.Sprint(all) {
		t.Fatalf("removed then kept:\n%q\nappended:\n%q", seen, all)
	}
	if err := d.AppendLogEntry(map[string]any{"message": strings.Repeat("y", 200)}, blocks.Agent); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("an entry larger than the block: %v", err)
	}

	plain, err := blocks.New(info, nil)
	must(t, err)
	plain = plain.View("ada", blocks.Append)
	for i := range 4 {
		must(t, plain.AppendLogEntry(map[string]any{"message": fmt.Sprintf("entry %d", i)}, blocks.Agent))
	}
	if err := plain.AppendLogEntry(map[string]any{"message": strings.Repeat("z", 80)}, blocks.Agent); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("a full log without a rotating Writer: %v, want ErrLimit", err)
	}
}

func changes(t *testing.T, d *blocks.Document) int {
	t.Helper()
	h, err := d.History()
	must(t, err)
	return len(h)
}
