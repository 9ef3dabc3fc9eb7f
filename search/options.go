package search

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Mode selects how a query is answered.
type Mode int

const (
	// Auto is Hybrid when the store has an embedder, else FTS. The default.
	Auto Mode = iota
	// FTS ranks full-text matches with FTS5's BM25 and returns highlighted
	// snippets.
	FTS
	// Vector ranks by cosine distance between the query's embedding and the
	// stored vectors (exact KNN).
	Vector
	// Hybrid fuses the FTS and Vector rankings with reciprocal-rank fusion
	// (k = 60), each side fetched deeper than the limit.
	Hybrid
)

// String returns "auto", "fts", "vector" or "hybrid".
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case FTS:
		return "fts"
	case Vector:
		return "vector"
	case Hybrid:
		return "hybrid"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// MarshalText encodes the mode as its String.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText parses a mode with ParseMode.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ParseMode is the inverse of Mode.String (case-insensitive), for CLIs and
// tool arguments. The empty string is Auto.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return Auto, nil
	case "fts", "text", "fulltext", "full-text":
		return FTS, nil
	case "vector", "vec", "semantic":
		return Vector, nil
	case "hybrid":
		return Hybrid, nil
	}
	return Auto, fmt.Errorf("%w: unknown mode %q (want auto, fts, vector or hybrid)", ErrInvalidQuery, s)
}

// ContentType is a set of searchable kinds of content (bit flags).
type ContentType uint8

const (
	// Blocks are memory blocks: label, description and rendered text.
	Blocks ContentType = 1 << iota
	// Archival are archival entries: content, tags and metadata.
	Archival
	// Messages are conversation messages: content.
	Messages

	// AllContent is every content type; the default.
	AllContent = Blocks | Archival | Messages
)

// contentKinds lists the single content types in their fixed order.
var contentKinds = [...]ContentType{Blocks, Archival, Messages}

// Has reports whether every type in t2 is in t.
func (t ContentType) Has(t2 ContentType) bool { return t&t2 == t2 && t2 != 0 }

// Kinds splits a set into its single types, in the order Blocks, Archival,
// Messages.
func (t ContentType) Kinds() []ContentType {
	var out []ContentType
	for _, k := range contentKinds {
		if t&k != 0 {
			out = append(out, k)
		}
	}
	return out
}

// String returns "blocks", "archival", "messages", or a "|"-joined set.
func (t ContentType) String() string {
	var parts []string
	for _, k := range contentKinds {
		if t&k == 0 {
			continue
		}
		switch k {
		case Blocks:
			parts = append(parts, "blocks")
		case Archival:
			parts = append(parts, "archival")
		case Messages:
			parts = append(parts, "messages")
		}
	}
	if rest := t &^ AllContent; rest != 0 {
		parts = append(parts, fmt.Sprintf("ContentType(%#x)", uint8(rest)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// MarshalText encodes the set as its String.
func (t ContentType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText parses a set with ParseContentType.
func (t *ContentType) UnmarshalText(b []byte) error {
	v, err := ParseContentType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ParseContentType parses "blocks", "archival", "messages" or "all", or a
// list of them separated by "|" or ",".
func ParseContentType(s string) (ContentType, error) {
	var t ContentType
	for _, part := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == '|' || r == ',' || r == ' ' }) {
		switch part {
		case "blocks", "block":
			t |= Blocks
		case "archival":
			t |= Archival
		case "messages", "message":
			t |= Messages
		case "all":
			t |= AllContent
		default:
			return 0, fmt.Errorf("%w: unknown content type %q (want blocks, archival, messages or all)", ErrInvalidQuery, part)
		}
	}
	if t == 0 {
		return AllContent, nil
	}
	return t, nil
}

const (
	// DefaultLimit is the number of results when Limit is not set.
	DefaultLimit = 10
	// MaxLimit caps Limit.
	MaxLimit = 1000
)

// Options narrow and shape a search. Build them fluently:
//
//	search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(20)
//
// A nil *Options means the defaults (see Settings). The setters change and
// return the receiver; on a nil receiver they start from NewOptions. An
// Options value is not safe for concurrent mutation, but a finished one may
// be shared by concurrent searches.
type Options struct {
	mode              Mode
	types             ContentType
	limit             int
	since, until      time.Time
	tagsAny, tagsAll  []string
	minScore          float64
	hasMinScore       bool
	includeSuperseded bool
	vectorWeight      float64
	hasVectorWeight   bool
	metadata          []MetadataFilter
}

// MetadataFilter keeps archival entries whose metadata has Key (a
// top-level key, or a dotted path "a.b") equal to Equals, or, for a range,
// between Min and Max (inclusive; nil means unbounded). Numbers compare as
// numbers; strings (RFC 3339 dates included) compare as text, which orders
// RFC 3339 UTC dates correctly.
//
// A literal MetadataFilter{Key, Equals} is an equality; a range is made by
// MetadataRangeFilter (or Options.MetadataRange), and IsRange says which a
// filter is. Validate refuses a filter that sets the other kind's fields
// (an equality with Min or Max, a range with Equals).
type MetadataFilter struct {
	Key      string
	Equals   any
	Min, Max any
	isRange  bool
}

// NewOptions returns options with every default: Auto mode, all content
// types, limit 10, no time range, no tag filter, no minimum score,
// superseded archival entries hidden.
func NewOptions() *Options { return &Options{} }

func (o *Options) orNew() *Options {
	if o == nil {
		return NewOptions()
	}
	return o
}

// Mode sets the search mode (default Auto).
func (o *Options) Mode(m Mode) *Options {
	o = o.orNew()
	o.mode = m
	return o
}

// ContentTypes sets what to search; several types may be given or or-ed
// together (Blocks|Archival). No types, or 0, means all.
func (o *Options) ContentTypes(types ...ContentType) *Options {
	o = o.orNew()
	o.types = 0
	for _, t := range types {
		o.types |= t
	}
	return o
}

// Limit sets the maximum number of results: 0 or less means DefaultLimit,
// more than MaxLimit means MaxLimit.
func (o *Options) Limit(n int) *Options {
	o = o.orNew()
	o.limit = n
	return o
}

// Since keeps only content created at or after t (zero t: no bound).
func (o *Options) Since(t time.Time) *Options {
	o = o.orNew()
	o.since = t
	return o
}

// Until keeps only content created before t (zero t: no bound). Together
// with Since it is the half-open range [since, until).
func (o *Options) Until(t time.Time) *Options {
	o = o.orNew()
	o.until = t
	return o
}

// Tags keeps only archival entries carrying at least one of tags. Tags only
// exist on archival entries, so any tag filter excludes blocks and messages.
// Empty strings are ignored; calling it again replaces the list.
func (o *Options) Tags(tags ...string) *Options {
	o = o.orNew()
	o.tagsAny = cleanTags(tags)
	return o
}

// AllTags keeps only archival entries carrying every one of tags (see Tags).
func (o *Options) AllTags(tags ...string) *Options {
	o = o.orNew()
	o.tagsAll = cleanTags(tags)
	return o
}

// MinScore drops results whose Score is below s. What Score means
// depends on the mode and is recorded in each Result's Source; with an
// memory.Options.Reranker it is the fused Score, checked before reranking.
func (o *Options) MinScore(s float64) *Options {
	o = o.orNew()
	o.minScore = s
	o.hasMinScore = !math.IsNaN(s)
	return o
}

// IncludeSuperseded also returns archival entries that a newer entry
// replaced (valid_to set). They are hidden by default.
func (o *Options) IncludeSuperseded(include bool) *Options {
	o = o.orNew()
	o.includeSuperseded = include
	return o
}

func cleanTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// Settings is the resolved, read-only view of Options with defaults applied.
type Settings struct {
	Mode              Mode        // as set; Auto is resolved by the search engine
	Types             ContentType // never 0
	Limit             int         // 1..MaxLimit
	Since, Until      time.Time   // zero: unbounded
	TagsAny           []string    // at least one of these (archival only)
	TagsAll           []string    // all of these (archival only)
	MinScore          float64     // valid when HasMinScore
	HasMinScore       bool
	IncludeSuperseded bool
	VectorWeight      float64 // Hybrid fusion weight of the vector side (default 1)
	HasVectorWeight   bool    // VectorWeight was set (Auto then uses it instead of the embedder's)
	Metadata          []MetadataFilter
}

// VectorWeight weights the vector side in Hybrid fusion: each result gets
// 1/(k+ftsRank) + w/(k+vectorRank). Hybrid's default is 1, plain
// reciprocal-rank fusion; Auto's default is the embedder's own weight (see
// FusionWeighter). A weight that is negative, NaN or infinite makes the
// search fail with ErrInvalidQuery.
func (o *Options) VectorWeight(w float64) *Options {
	o = o.orNew()
	o.vectorWeight, o.hasVectorWeight = w, true
	return o
}

// MetadataEquals keeps archival entries whose metadata key (or dotted
// path) equals v (a string, number or bool). Metadata only exists on
// archival entries, so a metadata filter excludes blocks and messages.
// Filters add up (all must hold).
func (o *Options) MetadataEquals(key string, v any) *Options {
	o = o.orNew()
	o.metadata = append(slices.Clip(o.metadata), MetadataFilter{Key: key, Equals: v})
	return o
}

// MetadataRange keeps archival entries whose metadata key lies between min
// and max, inclusive (nil: unbounded on that side).
func (o *Options) MetadataRange(key string, min, max any) *Options {
	o = o.orNew()
	o.metadata = append(slices.Clip(o.metadata), MetadataFilter{Key: key, Min: min, Max: max, isRange: true})
	return o
}

// Settings returns the options with defaults applied. It is safe on a nil
// receiver (all defaults). The slices are copies.
func (o *Options) Settings() Settings {
	if o == nil {
		o = &Options{}
	}
	s := Settings{
		Mode:              o.mode,
		Types:             o.types & AllContent,
		Limit:             o.limit,
		Since:             o.since,
		Until:             o.until,
		TagsAny:           slices.Clone(o.tagsAny),
		TagsAll:           slices.Clone(o.tagsAll),
		MinScore:          o.minScore,
		HasMinScore:       o.hasMinScore,
		IncludeSuperseded: o.includeSuperseded,
		VectorWeight:      1,
	}
	if o.hasVectorWeight {
		s.VectorWeight, s.HasVectorWeight = o.vectorWeight, true
	}
	s.Metadata = slices.Clone(o.metadata)
	if s.Types == 0 {
		s.Types = AllContent
	}
	if s.Limit <= 0 {
		s.Limit = DefaultLimit
	}
	if s.Limit > MaxLimit {
		s.Limit = MaxLimit
	}
	return s
}

// Validate checks a metadata filter whatever the SQL dialect: its key, the
// types of its values, and that it sets only its own kind's fields (Equals
// for an equality; Min, Max or both for a range). A search or
// memory.ArchivalQuery fails with its error, which wraps ErrInvalidQuery.
func (f MetadataFilter) Validate() error {
	if strings.TrimSpace(f.Key) == "" || strings.ContainsAny(f.Key, `"\`) {
		return fmt.Errorf("%w: metadata key %q (a key or a dotted path, without quotes)", ErrInvalidQuery, f.Key)
	}
	val := func(v any) error {
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%w: metadata %q: value %v is not a finite number", ErrInvalidQuery, f.Key, x)
			}
			return nil
		case float32:
			if x64 := float64(x); math.IsNaN(x64) || math.IsInf(x64, 0) {
				return fmt.Errorf("%w: metadata %q: value %v is not a finite number", ErrInvalidQuery, f.Key, x)
			}
			return nil
		case string, int, int32, int64, bool:
			return nil
		}
		return fmt.Errorf("%w: metadata %q: value %v (%T) is not a string, number or bool", ErrInvalidQuery, f.Key, v, v)
	}
	if !f.isRange {
		if f.Min != nil || f.Max != nil {
			return fmt.Errorf("%w: metadata %q: Min or Max set on an equality filter (a range is made by MetadataRangeFilter or Options.MetadataRange)", ErrInvalidQuery, f.Key)
		}
		return val(f.Equals)
	}
	if f.Equals != nil {
		return fmt.Errorf("%w: metadata range on %q also sets Equals (a filter is an equality or a range)", ErrInvalidQuery, f.Key)
	}
	if f.Min == nil && f.Max == nil {
		return fmt.Errorf("%w: metadata range on %q has neither a minimum nor a maximum", ErrInvalidQuery, f.Key)
	}
	for _, v := range []any{f.Min, f.Max} {
		if v != nil {
			if err := val(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// IsRange reports whether f is a range (MetadataRangeFilter,
// Options.MetadataRange) rather than an equality.
func (f MetadataFilter) IsRange() bool { return f.isRange }

// MetadataRangeFilter makes a range MetadataFilter (for
// memory.ArchivalQuery's Metadata; Options.MetadataRange adds one to a
// search).
func MetadataRangeFilter(key string, min, max any) MetadataFilter {
	return MetadataFilter{Key: key, Min: min, Max: max, isRange: true}
}

// Validate checks that s is what Options.Settings makes of valid options:
// a known mode, content types within AllContent and not none, a limit in
// 1..MaxLimit, a finite vector weight >= 0 and valid metadata filters
// (MetadataFilter.Validate). A search fails with its error, which wraps
// ErrInvalidQuery.
func (s Settings) Validate() error {
	switch s.Mode {
	case Auto, FTS, Vector, Hybrid:
	default:
		return fmt.Errorf("%w: unknown mode %v", ErrInvalidQuery, s.Mode)
	}
	if s.Types == 0 || s.Types&^AllContent != 0 {
		return fmt.Errorf("%w: content types %v (want a set of blocks, archival and messages)", ErrInvalidQuery, s.Types)
	}
	if s.Limit < 1 || s.Limit > MaxLimit {
		return fmt.Errorf("%w: limit %d (want 1..%d)", ErrInvalidQuery, s.Limit, MaxLimit)
	}
	if s.HasVectorWeight && (math.IsNaN(s.VectorWeight) || math.IsInf(s.VectorWeight, 0) || s.VectorWeight < 0) {
		return fmt.Errorf("%w: vector weight %v (want a finite number >= 0)", ErrInvalidQuery, s.VectorWeight)
	}
	for _, f := range s.Metadata {
		if err := f.Validate(); err != nil {
			return err
		}
	}
	return nil
}
