package search_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// A MetadataFilter is an equality or a range, and IsRange says which;
// Validate refuses a filter with fields the other kind would read, which
// the search and memory.ArchivalQuery would otherwise ignore without a
// word (a literal {Key, Equals: 3, Min: 5} kept every entry equal to 3).
func TestMetadataFilterValidate(t *testing.T) {
	rng := search.MetadataRangeFilter
	withEquals := func(f search.MetadataFilter, v any) search.MetadataFilter { f.Equals = v; return f }
	for _, c := range []struct {
		name string
		f    search.MetadataFilter
		ok   bool
		want string // in the error
	}{
		{"equals", search.MetadataFilter{Key: "n", Equals: 3}, true, ""},
		{"equals dotted", search.MetadataFilter{Key: "a.b", Equals: "x"}, true, ""},
		{"equals bool", search.MetadataFilter{Key: "n", Equals: false}, true, ""},
		{"range min", rng("n", 3, nil), true, ""},
		{"range max", rng("n", nil, 3.5), true, ""},
		{"range both", rng("d", "2024-01-01", "2024-12-31"), true, ""},
		{"zero value", search.MetadataFilter{}, false, "metadata key"},
		{"blank key", search.MetadataFilter{Key: " ", Equals: 1}, false, "metadata key"},
		{"quoted key", search.MetadataFilter{Key: `a"b`, Equals: 1}, false, "metadata key"},
		{"equals nil", search.MetadataFilter{Key: "n"}, false, "not a string, number or bool"},
		{"equals slice", search.MetadataFilter{Key: "n", Equals: []int{1}}, false, "not a string, number or bool"},
		{"equals NaN", search.MetadataFilter{Key: "n", Equals: math.NaN()}, false, "not a finite number"},
		{"range unbounded", rng("n", nil, nil), false, "neither a minimum nor a maximum"},
		{"range Inf", rng("n", math.Inf(1), nil), false, "not a finite number"},
		// A literal with Min or Max is no range (IsRange is false): it
		// was read as an equality with Equals nil, or with Equals set,
		// the bounds were ignored.
		{"literal min", search.MetadataFilter{Key: "n", Min: 5}, false, "MetadataRangeFilter"},
		{"literal max", search.MetadataFilter{Key: "n", Max: 5}, false, "MetadataRangeFilter"},
		{"equals and min", search.MetadataFilter{Key: "n", Equals: 3, Min: 5}, false, "MetadataRangeFilter"},
		{"equals and max", search.MetadataFilter{Key: "n", Equals: 3, Max: 1}, false, "MetadataRangeFilter"},
		{"range and equals", withEquals(rng("n", 5, nil), 3), false, "Equals"},
	} {
		err := c.f.Validate()
		if c.ok {
			if err != nil {
				t.Errorf("%s: %+v: %v", c.name, c.f, err)
			}
			continue
		}
		if !errors.Is(err, search.ErrInvalidQuery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %+v: %v, want ErrInvalidQuery saying %q", c.name, c.f, err, c.want)
		}
	}
}

// Settings.Validate holds a Settings to what Options.Settings makes: a
// known mode, content types in AllContent and not none, a limit in
// 1..MaxLimit, a finite non-negative vector weight, valid metadata
// filters. Every Options' Settings passes but an unknown mode or a bad
// weight or filter.
func TestSettingsValidate(t *testing.T) {
	valid := search.NewOptions().Settings()
	with := func(f func(*search.Settings)) search.Settings {
		s := valid
		f(&s)
		return s
	}
	for _, c := range []struct {
		name string
		s    search.Settings
		want string // "" when valid
	}{
		{"defaults", valid, ""},
		{"every option", search.NewOptions().Mode(search.Hybrid).ContentTypes(search.Archival).Limit(5000).
			Tags("a").AllTags("b").MinScore(0.5).IncludeSuperseded(true).VectorWeight(0).
			MetadataEquals("k", "v").MetadataRange("n", 1, nil).Settings(), ""},
		{"zero value", search.Settings{}, "content types"},
		{"no types", with(func(s *search.Settings) { s.Types = 0 }), "content types"},
		{"unknown type", with(func(s *search.Settings) { s.Types = search.Blocks | 0x80 }), "content types"},
		{"limit 0", with(func(s *search.Settings) { s.Limit = 0 }), "limit"},
		{"limit over", with(func(s *search.Settings) { s.Limit = search.MaxLimit + 1 }), "limit"},
		{"unknown mode", search.NewOptions().Mode(search.Mode(9)).Settings(), "mode"},
		{"negative mode", with(func(s *search.Settings) { s.Mode = -1 }), "mode"},
		{"weight", search.NewOptions().VectorWeight(-1).Settings(), "vector weight"},
		{"weight NaN", search.NewOptions().VectorWeight(math.NaN()).Settings(), "vector weight"},
		{"filter", search.NewOptions().MetadataEquals("", 1).Settings(), "metadata key"},
		{"filter literal", with(func(s *search.Settings) {
			s.Metadata = []search.MetadataFilter{{Key: "n", Equals: 1, Min: 2}}
		}), "MetadataRangeFilter"},
	} {
		err := c.s.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %+v: %v", c.name, c.s, err)
		case c.want != "" && (!errors.Is(err, search.ErrInvalidQuery) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %+v: %v, want ErrInvalidQuery saying %q", c.name, c.s, err, c.want)
		}
	}
}

// Validate is callable on the value Options.Settings returns, as a
// program checks options before a search.
func TestSettingsValidateOnOptionsSettings(t *testing.T) {
	if err := search.NewOptions().Limit(5).Settings().Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
	if err := search.NewOptions().VectorWeight(-1).Settings().Validate(); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("VectorWeight(-1): %v, want ErrInvalidQuery", err)
	}
}
