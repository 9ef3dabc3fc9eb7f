package tools

import (
	"slices"
	"testing"
	"time"
)

func TestMatchLines(t *testing.T) {
	for _, tc := range []struct {
		text, old string
		want      []int
	}{
		{"abc", "b", []int{1}},
		{"abc", "x", nil},
		{"aaa", "aa", []int{1, 1}}, // overlapping occurrences are ambiguous too
		{"a\nb\na", "a", []int{1, 3}},
		{"héllo héllo", "é", []int{1, 1}},
		{"", "a", nil},
	} {
		if got := matchLines(tc.text, tc.old); !slices.Equal(got, tc.want) {
			t.Errorf("matchLines(%q, %q) = %v, want %v", tc.text, tc.old, got, tc.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		end  bool
		want time.Time
	}{
		{"", false, time.Time{}},
		{"2025-01-31T09:00:00Z", false, time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)},
		{"2025-01-31T10:00:00+01:00", false, time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)},
		{"2025-01-31T09:00:00", false, time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)},
		{"2025-01-31", false, time.Date(2025, 1, 31, 0, 0, 0, 0, time.UTC)},
		{"2025-01-31", true, time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)},
		{"24h", false, now.Add(-24 * time.Hour)},
		{"7d", false, now.Add(-7 * 24 * time.Hour)},
		{"2w", false, now.Add(-14 * 24 * time.Hour)},
		{"90m", false, now.Add(-90 * time.Minute)},
		{"1.5h", false, now.Add(-90 * time.Minute)},
	} {
		got, err := parseTime("since", tc.in, now, tc.end)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("parseTime(%q, end=%v) = %v, %v; want %v", tc.in, tc.end, got, err, tc.want)
		}
	}
	for _, bad := range []string{"yesterday", "-5d", "5y", "99999999999d", "2025-13-01"} {
		if _, err := parseTime("since", bad, now, false); err == nil {
			t.Errorf("parseTime(%q) accepted", bad)
		}
	}
}

func TestIsInfra(t *testing.T) {
	if !isInfra(errUnknown) {
		t.Error("unknown errors must count as infrastructure")
	}
}

var errUnknown = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }
