package memory

import (
	"errors"
	"testing"
)

// TestHistoryDue: the rebase rule on histories shaped like the workloads
// it was measured on (change sizes from the store: ~133 bytes for a
// 1-character append, ~159 for 22 characters).
func TestHistoryDue(t *testing.T) {
	c := &Store{opts: Options{HistoryLimit: 64 << 10}}
	count := func(n int) func() (int, error) { return func() (int, error) { return n, nil } }
	asked := false
	never := func() (int, error) { asked = true; return 0, nil }
	for _, tc := range []struct {
		name    string
		history int64
		size    int
		changes func() (int, error)
		want    bool
	}{
		// 3,000 appends of 22 characters to an empty block: all content.
		{"line appends", 3000 * 159, 3000 * 22, count(3000), false},
		// 3,000 appends of one character: loading is mostly changes.
		{"character appends", 3000 * 133, 3000, count(3000), true},
		// 2,000 one-line rewrites (47 characters out, 47 in) of a
		// 939-character block: the deleted text is still loaded.
		{"rewrites", 2000 * (128 + 47), 939, count(2000), true},
		// One big paste replaced four times over: few changes, lots of
		// deleted text.
		{"big replacements", 5 * 100_000, 100_000, count(5), true},
		// Under the limit, or under 4× the size, the count is not asked.
		{"under the limit", 60 << 10, 100, never, false},
		{"under 4x the size", 300_000, 100_000, never, false},
		// When the count cannot be had, the bytes decide.
		{"count fails", 3000 * 159, 3000 * 22, func() (int, error) { return 0, errors.New("no") }, true},
	} {
		asked = false
		if got := c.historyDue(tc.history, tc.size, tc.changes); got != tc.want {
			t.Errorf("%s: due = %v, want %v", tc.name, got, tc.want)
		}
		if asked {
			t.Errorf("%s: the change count was asked for although the bytes do not qualify", tc.name)
		}
	}
	off := &Store{opts: Options{HistoryLimit: -1}}
	if off.historyDue(1<<30, 1, count(1<<20)) {
		t.Error("HistoryLimit < 0 rebased")
	}
}
