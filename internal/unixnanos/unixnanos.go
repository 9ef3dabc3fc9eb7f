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

// Null is a nullable time column (sql.NullInt64 read as Scanner reads).
type Null struct {
	N     int64
	Valid bool // false: NULL
}

// Scan implements sql.Scanner.
func (n *Null) Scan(src any) error {
	n.Valid = src != nil
	return Scanner{N: &n.N}.Scan(src)
}

// Window is a time window [since, until) over columns of Unix
// nanoseconds, as SQL and Go apply it alike: Lo and Hi bound it where
// HasLo and HasHi; Empty keeps nothing. A zero time is no bound. A since
// at or before the first nanosecond an int64 holds (1677-09-21) bounds
// nothing, one after the last (2262-04-11) keeps nothing; an until after
// the last bounds nothing, one at or before the first keeps nothing
// (time.Time.UnixNano wraps around outside them).
type Window struct {
	Lo, Hi       int64
	HasLo, HasHi bool
	Empty        bool
}

// NewWindow is the window [since, until).
func NewWindow(since, until time.Time) Window {
	var w Window
	if !since.IsZero() && since.After(first) {
		if since.After(last) {
			w.Empty = true
		} else {
			w.Lo, w.HasLo = since.UnixNano(), true
		}
	}
	if !until.IsZero() && !until.After(last) {
		if !until.After(first) {
			w.Empty = true
		} else {
			w.Hi, w.HasHi = until.UnixNano(), true
		}
	}
	return w
}

// Conditions are the window's SQL conditions on col, with their
// arguments, to be joined with AND (none: it bounds nothing).
func (w Window) Conditions(col string) (conds []string, args []any) {
	if w.Empty {
		return []string{"1 = 0"}, nil
	}
	if w.HasLo {
		conds, args = append(conds, col+" >= ?"), append(args, w.Lo)
	}
	if w.HasHi {
		conds, args = append(conds, col+" < ?"), append(args, w.Hi)
	}
	return conds, args
}

// Holds reports whether a column of Unix nanoseconds can hold t:
// 1677-09-21 to 2262-04-11.
func Holds(t time.Time) bool {
	return !t.Before(first) && !t.After(last)
}

// Keeps reports whether a row stamped n is in the window.
func (w Window) Keeps(n int64) bool {
	return !w.Empty && (!w.HasLo || n >= w.Lo) && (!w.HasHi || n < w.Hi)
}

// The first and last nanosecond an int64 of Unix nanoseconds holds.
var first, last = time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC()

// First is the first time a column holds (1677-09-21, UTC).
func First() time.Time { return first }

// Last is the last time a column holds (2262-04-11, UTC).
func Last() time.Time { return last }
