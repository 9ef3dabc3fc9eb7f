package main

import (
	"strings"
	"testing"
	"time"
)

// A read-only token's every edit is refused, and each refusal is answered
// from a whole copy of the document: the first moves the connection to a
// private copy (the shared one saved and loaded), and every later one
// loads the store's whole document again to take the edit back. The
// token's budget is charged the edit's operations (one), not this work:
// on a block of 300,000 characters one-character edits cost the server
// far more than the same edit through the Go API, frame after frame.
func TestSyncRefusedEditCost(t *testing.T) {
	const edits = 20
	s := startAbuseServe(t, 1<<20, 0, strings.Repeat("lorem ipsum dolor sit amet\n", 300_000/27))
	p := newGoPeer(t, s.ws+s.ro, s.url)
	if !p.until(func(p *goPeer) bool { return len(p.text()) > 290_000 }) {
		t.Fatal("no sync")
	}
	var refused int
	cpu, hwm := cost(t, s.pid, func() {
		for i := range edits {
			in := func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.bytesIn }()
			p.edit("x")
			// the refusal (and counter-change) comes back
			if !p.until(func(p *goPeer) bool { return p.bytesIn > in }) {
				t.Fatalf("edit %d: no answer", i)
			}
			refused++
			time.Sleep(50 * time.Millisecond)
		}
	})
	per := cpu / time.Duration(refused)
	t.Logf("%d refused one-character edits on a 300,000-character block: %v CPU (%v each), peak RSS +%d MiB", refused, cpu, per, hwm>>20)
	if per > 50*time.Millisecond {
		t.Errorf("a refused one-character edit of a read-only token costs the server %v of CPU (charged 1 operation); at 200 frames a second per connection that is %.0f cores", per, 200*per.Seconds())
	}
}
