package main

import (
	"strings"
	"testing"
	"time"
)

// A read-only token's every edit is refused, and each refusal is answered
// from a whole copy of the document: the first moves the connection to a
// private copy (the shared one saved and loaded, which the peer then
// syncs with from the start), and every later one loads the store's
// whole document again to take the edit back. On a
// block of 300,000 characters that is most of a second of CPU for a
// one-character edit, so the token's budget is charged the block's size
// for each copy: twenty such edits sent at once are answered at the
// budget's pace (50,000 operations a second by default), not as fast as
// the server can copy.
func TestSyncRefusedEditCost(t *testing.T) {
	if raceEnabled {
		t.Skip("measures latency and CPU: run without -race (CI's second pass)")
	}
	const edits = 20
	const window = 10 * time.Second
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
	// The first refusal moves the connection to its private copy, and the
	// peer then syncs with that copy from the start: a cost each
	// connection pays once, measured alone until the server is idle again.
	first, _ := cost(t, s.pid, func() {
		p.edit("x")
		settle(t, s.pid, 30*time.Second)
	})
	cpu, hwm := cost(t, s.pid, func() {
		for range edits {
			p.edit("x")
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(window - edits*50*time.Millisecond)
	})
	t.Logf("a first refused edit on a 300,000-character block: %v of server CPU; %d more sent: %v over %v, peak RSS +%d MiB", first, edits, cpu, window, hwm>>20)
	// Unthrottled, the copies keep a core busy for the whole window; at
	// the budget's pace a 300,000-character copy is one every 6 s, two in
	// the window, each 0.9–2 s of CPU depending on the machine: half the
	// window tells the two apart on any of them.
	if cpu > window/2 {
		t.Errorf("%d refused edits cost %v of server CPU within %v: the copies they cause are not charged to the token's budget", edits, cpu, window)
	}
	if hwm > 512<<20 {
		t.Errorf("peak RSS grew %d MiB", hwm>>20)
	}
}

// settle waits until process pid has used no more than 50 ms of CPU in
// half a second, or until max has passed.
func settle(t *testing.T, pid int, max time.Duration) {
	t.Helper()
	end := time.Now().Add(max)
	last := procCPU(t, pid)
	for time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		now := procCPU(t, pid)
		if now-last <= 50*time.Millisecond {
			return
		}
		last = now
	}
}
