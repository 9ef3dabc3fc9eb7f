package unixnanos_test

import (
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
