package drivertest

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// metadataRow is the archival metadata the filter cases read: values of
// every JSON type, including strings that look like numbers and numbers
// that are 1 and 0 like booleans.
const metadataRow = `{"n": 10, "s": "5", "date": "2024-05-01", "t": true, "f": false, "one": 1, "zero": 0,
	"obj": {"a": 1}, "arr": [1], "nul": null, "deep": {"k": "v"}}`

// testMetadataCompare holds the dialect's metadata filters to one meaning
// on every engine: numbers compare numerically with numbers, strings as
// text with strings, booleans with booleans, and a value of another JSON
// type than the filter's never matches (SQLite's json_extract compares a
// number below every text, and 1 equal to true; PostgreSQL's jsonb orders
// the types: the two gave different results). A NaN or infinite bound is
// refused before any SQL (PostgreSQL's jsonb cannot hold it: the query
// failed there and ran on SQLite).
func testMetadataCompare(t *testing.T, e Engine) {
	ctx := context.Background()
	b := fresh(t, e)
	d := b.SearchDialect()
	rng := search.MetadataRangeFilter
	for _, c := range []struct {
		f    search.MetadataFilter
		want bool
	}{
		{search.MetadataFilter{Key: "n", Equals: 10}, true},
		{search.MetadataFilter{Key: "n", Equals: 10.0}, true},
		{rng("n", 9, nil), true},
		{rng("n", 11, nil), false},
		{rng("n", nil, 9.5), false},
		{rng("n", "1", nil), false}, // a number is not a string
		{rng("n", nil, "9"), false},
		{search.MetadataFilter{Key: "n", Equals: "10"}, false},
		{search.MetadataFilter{Key: "s", Equals: "5"}, true},
		{search.MetadataFilter{Key: "s", Equals: 5}, false},
		{rng("s", 3, nil), false}, // a string is not a number
		{rng("s", nil, 9), false},
		{rng("s", "4", "6"), true},
		{rng("date", "2024-01-01", "2024-12-31"), true},
		{rng("date", "2025-01-01", nil), false},
		{search.MetadataFilter{Key: "t", Equals: true}, true},
		{search.MetadataFilter{Key: "t", Equals: false}, false},
		{search.MetadataFilter{Key: "f", Equals: false}, true},
		{search.MetadataFilter{Key: "t", Equals: 1}, false}, // true is not 1
		{search.MetadataFilter{Key: "one", Equals: true}, false},
		{search.MetadataFilter{Key: "zero", Equals: false}, false},
		{rng("t", 0, nil), false},
		{rng("t", nil, 5), false},
		{rng("t", false, nil), true},
		{rng("one", nil, true), false},
		{rng("obj", 0, nil), false},
		{rng("arr", 0, nil), false},
		{rng("obj", "", nil), false},
		{search.MetadataFilter{Key: "nul", Equals: 0}, false},
		{search.MetadataFilter{Key: "nul", Equals: false}, false},
		{search.MetadataFilter{Key: "deep.k", Equals: "v"}, true},
		{search.MetadataFilter{Key: "missing", Equals: "v"}, false},
		{rng("missing", 0, nil), false},
	} {
		cond, args, err := searchindex.MetadataCondition(d, "r.m", c.f)
		if err != nil {
			t.Fatalf("%+v: %v", c.f, err)
		}
		var got int
		q := `SELECT CASE WHEN ` + cond + ` THEN 1 ELSE 0 END FROM (SELECT CAST(? AS TEXT) AS m) r`
		if err := b.DB().QueryRowContext(ctx, q, append(args, metadataRow)...).Scan(&got); err != nil {
			t.Fatalf("%+v: %s: %v", c.f, q, err)
		}
		if got == 1 != c.want {
			t.Errorf("%s: %+v matches %v, want %v", d.Name(), c.f, got == 1, c.want)
		}
	}
	for _, f := range []search.MetadataFilter{
		{Key: "n", Equals: math.NaN()},
		{Key: "n", Equals: math.Inf(1)},
		rng("n", math.Inf(-1), nil),
		rng("n", nil, float32(math.Inf(1))),
		rng("n", 0, math.NaN()),
	} {
		if _, _, err := searchindex.MetadataCondition(d, "r.m", f); !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("%+v: %v, want ErrInvalidQuery", f, err)
		}
	}
}
