// Package unixnanos reads the time columns engram keeps as Unix
// nanoseconds (created_at and the like) whatever a hand edit left in
// them.
//
// The engines write an integer, but SQLite keeps what an UPDATE gives an
// INTEGER column when it does not read as an integer: a real, text, a
// blob. One such row must not fail every search or listing that reads it,
// so a [Scanner] reads it where SQLite orders it among the numbers: a
// real as its floor (held within int64), text and blobs, which SQLite
// orders after every number, as the last nanosecond. A time window then
// keeps the same rows whether SQL or Go applies it.
package unixnanos

import (
	"math"
	"time"
)

// Scanner scans a time column into the int64 it points to.
type Scanner struct{ N *int64 }

// Scan implements sql.Scanner.
func (s Scanner) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		*s.N = v
	case float64:
		switch f := math.Floor(v); {
		case math.IsNaN(f):
			*s.N = 0
		case f >= math.MaxInt64:
			*s.N = math.MaxInt64
		case f <= math.MinInt64:
			*s.N = math.MinInt64
		default:
			*s.N = int64(f)
		}
	case time.Time:
		*s.N = v.UnixNano()
	case nil:
		*s.N = 0
	default: // string, []byte
		*s.N = math.MaxInt64
	}
	return nil
}
