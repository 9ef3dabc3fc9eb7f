package searchindex

import "testing"

// A log position is a snapshot's hold on the log: what it holds, whether
// a later one covers it, whether the trimming passed it.
func TestLogPos(t *testing.T) {
	// Snapshots of one history: 10 and 12 run at a; 12 still at b, 11
	// and 13 committed; nothing runs at c.
	a := logPos{xmin: 10, xmax: 13, xip: []int64{10, 12}}
	b := logPos{xmin: 12, xmax: 15, xip: []int64{12}}
	c := logPos{xmin: 16, xmax: 16}
	seq := logPos{xmin: 8, xmax: 8} // SQLite: entries up to 7
	for _, tc := range []struct {
		p    logPos
		x    int64
		want bool
	}{
		{a, 9, true}, {a, 10, false}, {a, 11, true}, {a, 12, false}, {a, 13, false},
		{b, 10, true}, {b, 12, false}, {b, 13, true}, {b, 14, true}, {b, 15, false},
		{c, 15, true}, {c, 16, false},
		{seq, 7, true}, {seq, 8, false},
		{logPos{}, 1, false},
	} {
		if got := tc.p.holds(tc.x); got != tc.want {
			t.Errorf("%+v holds %d = %v, want %v", tc.p, tc.x, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		p, q logPos
		want bool
	}{
		{"same", a, a, true},
		{"later covers earlier", b, a, true},
		{"earlier does not cover later", a, b, false},
		{"quiet covers all", c, b, true},
		{"all but quiet", b, c, false},
		{"anything covers none", a, logPos{}, true},
		{"none covers nothing", logPos{}, a, false},
		{"sqlite later", logPos{xmin: 9, xmax: 9}, seq, true},
		{"sqlite earlier", seq, logPos{xmin: 9, xmax: 9}, false},
		// q's xmax above p's, the gap all running in q: p holds all q does.
		{"gap running", logPos{xmin: 5, xmax: 5}, logPos{xmin: 5, xmax: 7, xip: []int64{5, 6}}, true},
		{"gap committed", logPos{xmin: 5, xmax: 5}, logPos{xmin: 5, xmax: 7, xip: []int64{5}}, false},
	} {
		if got := tc.p.covers(tc.q); got != tc.want {
			t.Errorf("%s: %+v covers %+v = %v, want %v", tc.name, tc.p, tc.q, got, tc.want)
		}
	}
	if got := later(a, b); !got.equal(b) {
		t.Errorf("later(a, b) = %+v, want b", got)
	}
	if got := later(c, a); !got.equal(c) {
		t.Errorf("later(c, a) = %+v, want c", got)
	}
	// Trimmed: entries below the floor may be gone; a position that may
	// not hold one of them cannot catch up.
	if a.trimmed(10) || !a.trimmed(11) || seq.trimmed(8) || !seq.trimmed(9) {
		t.Error("trimmed: wrong against the floor")
	}
	// Within one transaction, entries keep their order.
	if !(logEntry{5, 1}).before(logEntry{5, 2}) || (logEntry{5, 1}).before(logEntry{6, 2}) || (logEntry{5, 2}).before(logEntry{5, 1}) {
		t.Error("before: wrong")
	}
}
