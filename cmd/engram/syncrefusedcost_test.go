package main

import (
	"strings"
	"testing"
	"time"
)

// A read-only token's every edit is refused, and each refusal is answered
// from a whole copy of the document: the first moves the connection to a
// private copy (the shared one copied), and every later one copies the
// store's whole document again to take the edit back. Joining the block
// copied it too, when no other session held it. On a block of 300,000
// characters each copy is most of a second of CPU for a one-character
// edit, so the token's budget is charged the block's size for each:
// forty such edits sent at once are answered at the budget's pace (50,000
// operations a second by default, a copy every 6 s), not as fast as the
// server can copy.
func TestSyncRefusedEditCost(t *testing.T) {
	if raceEnabled {
		t.Skip("measures latency and CPU: run without -race (CI's second pass)")
	}
	const edits = 40
	const window = 12 * time.Second
	s := startAbuseServe(t, 1<<20, 0, strings.Repeat("lorem ipsum dolor sit amet\n", 300_000/27))
	p := newGoPeer(t, s.ws+s.ro, s.url)
	// The first sync of 300,000 characters takes seconds on a busy
	// machine: up to six of until's 5 s.
	synced := false
	for range 6 {
		if synced = p.until(func(p *goPeer) bool { return len(p.text()) > 290_000 }); synced {
			break
		}
	}
	if !synced {
		t.Fatal("no sync")
	}
	cpu, hwm := cost(t, s.pid, func() {
		for range edits {
			p.edit("x")
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(window - edits*50*time.Millisecond)
	})
	t.Logf("%d refused edits on a 300,000-character block: %v of server CPU over %v, peak RSS +%d MiB", edits, cpu, window, hwm>>20)
	// Unthrottled, the copies keep a core busy for the whole window
	// (forty copies take longer than it on any machine this runs on); at
	// the budget's pace two or three copies fall in it.
	if cpu > window/2 {
		t.Errorf("%d refused edits cost %v of server CPU within %v: the copies they cause are not charged to the token's budget", edits, cpu, window)
	}
	if hwm > 512<<20 {
		t.Errorf("peak RSS grew %d MiB", hwm>>20)
	}
}
