package searchindex

import (
	"math"
	"strings"
	"sync/atomic"

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
	// textSynced, set for a ranking's legs (Index.rank) and again for its
	// page (Index.fill), records that the text cache caught up with the
	// log for them: the others read the cache as it is, so that a search
	// reads the log twice (its legs', its page's), not once per leg and
	// per kind of row on its page (a round trip each on PostgreSQL).
	textSynced *atomic.Bool
}
