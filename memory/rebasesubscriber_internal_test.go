package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
)

// A subscriber of every edit's event that Flushes (waiting for the
// rebase its write started) and, at the end, Closes: nothing hangs.
func TestFlushAndCloseFromAnEditSubscriber(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), &Options{CompactAfter: 3, HistoryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	view, err := s.Agent("ann").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closeNow := false
	flushes := 0
	view.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			return
		}
		if closeNow {
			s.Close()
			return
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := s.Flush(fctx); err != nil {
			t.Errorf("Flush from the subscriber: %v", err)
		}
		flushes++
	})
	for i := 1; i <= 40; i++ {
		if i == 40 {
			ep, _ := epochNow(t, s)
			t.Logf("%d flushes from the subscriber, epoch %d", flushes, ep)
			closeNow = true
		}
		within(t, 10*time.Second, "edit", func() error { return view.SetText(notesText(i), blocks.Agent) })
	}
	if err := view.SetText("after close", blocks.Agent); err == nil {
		t.Fatal("an edit after Close succeeded")
	}
}
