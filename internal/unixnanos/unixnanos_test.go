package unixnanos_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/unixnanos"
)

func TestScanner(t *testing.T) {
	for _, tc := range []struct {
		src  any
		want int64
	}{
		{int64(42), 42}, {int64(math.MinInt64), math.MinInt64},
		{1.5, 1}, {-1.5, -2}, {1e300, math.MaxInt64}, {-1e300, math.MinInt64}, {math.NaN(), 0},
		{9.3e18, math.MaxInt64}, {-9223372036854775808.0, math.MinInt64},
		{"12", math.MaxInt64}, {"abc", math.MaxInt64}, {[]byte{0}, math.MaxInt64},
		{nil, 0}, {time.Unix(0, 7), 7},
	} {
		n := int64(-99)
		if err := (unixnanos.Scanner{N: &n}).Scan(tc.src); err != nil || n != tc.want {
			t.Errorf("Scan(%v) = %d, %v; want %d", tc.src, n, err, tc.want)
		}
	}
}

func TestWindow(t *testing.T) {
	first, last := time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)
	y := func(year int) time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }
	rows := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	for _, tc := range []struct {
		name         string
		since, until time.Time
		want         []int64
	}{
		{"none", time.Time{}, time.Time{}, rows},
		{"since 1600", y(1600), time.Time{}, rows},
		{"since first", first, time.Time{}, rows},
		{"since 0", time.Unix(0, 0), time.Time{}, []int64{0, 1, math.MaxInt64}},
		{"since last", last, time.Time{}, []int64{math.MaxInt64}},
		{"since 2300", y(2300), time.Time{}, nil},
		{"until 2300", time.Time{}, y(2300), rows},
		{"until last", time.Time{}, last, []int64{math.MinInt64, -1, 0, 1}},
		{"until 0", time.Time{}, time.Unix(0, 0), []int64{math.MinInt64, -1}},
		{"until first", time.Time{}, first, nil},
		{"until 1600", time.Time{}, y(1600), nil},
		{"since 0 until 1", time.Unix(0, 0), time.Unix(0, 1), []int64{0}},
	} {
		w := unixnanos.NewWindow(tc.since, tc.until)
		var got []int64
		for _, n := range rows {
			if w.Keeps(n) {
				got = append(got, n)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: keeps %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWindowConditions(t *testing.T) {
	y := func(year int) time.Time { return time.Date(year, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, tc := range []struct {
		since, until time.Time
		want         string
	}{
		{time.Time{}, time.Time{}, "[] []"},
		{time.Unix(0, 5), time.Time{}, "[c >= ?] [5]"},
		{time.Time{}, time.Unix(0, 7), "[c < ?] [7]"},
		{time.Unix(0, 5), time.Unix(0, 7), "[c >= ? c < ?] [5 7]"},
		{y(2300), time.Time{}, "[1 = 0] []"},
		{y(1600), y(2300), "[] []"},
	} {
		c, a := unixnanos.NewWindow(tc.since, tc.until).Conditions("c")
		if got := fmt.Sprint(c, " ", a); got != tc.want {
			t.Errorf("[%v, %v): %s, want %s", tc.since, tc.until, got, tc.want)
		}
	}
	for _, tc := range []struct {
		t    time.Time
		want bool
	}{{unixnanos.First(), true}, {unixnanos.Last(), true}, {unixnanos.Last().Add(1), false}, {unixnanos.First().Add(-1), false}, {time.Unix(0, 0), true}} {
		if unixnanos.Holds(tc.t) != tc.want {
			t.Errorf("Holds(%v) = %v", tc.t, !tc.want)
		}
	}
}
