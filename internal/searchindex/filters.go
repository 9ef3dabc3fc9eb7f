package searchindex

import (
	"math"
	"strings"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/search"
)

// MetadataCondition is the SQL condition of one metadata filter over the
// JSON column col (e.g. "a.metadata_json") in dialect d, with its
// arguments: the store uses it for ArchivalQuery too. The key path travels
// as an argument, never inside the SQL text. It fails with
// search.ErrInvalidQuery for an empty key, a key holding '"', or a value
// that is not a string, finite number or bool. A value of another JSON type than the filter's
// never matches (a string "5" is not the number 5, true is not 1).
func MetadataCondition(d driver.Dialect, col string, f search.MetadataFilter) (string, []any, error) {
	if err := f.Validate(); err != nil {
		return "", nil, err
	}
	path := strings.Split(f.Key, ".")
	if !f.IsRange() {
		c, args := d.MetadataCompare(col, path, "=", f.Equals)
		return c, args, nil
	}
	var conds []string
	var args []any
	for _, b := range []struct {
		v  any
		op string
	}{{f.Min, ">="}, {f.Max, "<="}} {
		if b.v == nil {
			continue
		}
		c, a := d.MetadataCompare(col, path, b.op, b.v)
		conds = append(conds, c)
		args = append(args, a...)
	}
	return strings.Join(conds, " AND "), args, nil
}

// hasTagFilter reports whether a tag filter is set.
func (s *settings) hasTagFilter() bool {
	return len(s.TagsAny) > 0 || len(s.TagsAll) > 0 || len(s.Metadata) > 0
}

// unixNanos is t as the created_at columns hold it, nanoseconds since the
// epoch, clamped to int64: time.UnixNano wraps a time before 1678 or after
// 2262 into another date, so a bound such as Until(9999-12-31) (which an
// agent may give the search tools) kept nothing.
func unixNanos(t time.Time) int64 {
	switch {
	case t.Before(minUnixNanos):
		return math.MinInt64
	case t.After(maxUnixNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var minUnixNanos, maxUnixNanos = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// fusionWeight is Auto's vector weight for emb.
func fusionWeight(emb search.Embedder) float64 {
	if fw, ok := emb.(search.FusionWeighter); ok {
		if w := fw.FusionWeight(); w >= 0 && !math.IsInf(w, 0) && !math.IsNaN(w) {
			return w
		}
	}
	return search.DefaultFusionWeight
}

// contentKinds lists the single content types in their fixed order.
var contentKinds = [...]search.ContentType{search.Blocks, search.Archival, search.Messages}

// settings are a search's options with defaults applied (search.Settings)
// and what the engine decided for it.
type settings struct {
	search.Settings
	vecCache bool // the vector cache is ready: KNN runs over it (Index.rank)
}
