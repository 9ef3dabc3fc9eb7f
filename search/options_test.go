package search_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/engram-go/engram/search"
)

func TestOptionsSettings(t *testing.T) {
	s := (*search.Options)(nil).Settings()
	if s.Mode != search.Auto || s.Types != search.AllContent || s.Limit != search.DefaultLimit ||
		s.HasMinScore || s.IncludeSuperseded || !s.Since.IsZero() || len(s.TagsAny) != 0 {
		t.Fatalf("defaults = %+v", s)
	}
	since := time.Unix(100, 0)
	o := search.NewOptions().Mode(search.Hybrid).ContentTypes(search.Blocks, search.Archival).Limit(5000).
		Since(since).Until(since.Add(time.Hour)).Tags("a", "", "b", "a").AllTags("c").
		MinScore(0.5).IncludeSuperseded(true)
	s = o.Settings()
	if s.Mode != search.Hybrid || s.Types != search.Blocks|search.Archival || s.Limit != search.MaxLimit ||
		!s.Since.Equal(since) || !s.Until.Equal(since.Add(time.Hour)) || len(s.TagsAny) != 2 ||
		len(s.TagsAll) != 1 || !s.HasMinScore || s.MinScore != 0.5 || !s.IncludeSuperseded {
		t.Fatalf("settings = %+v", s)
	}
	s.TagsAny[0] = "changed"
	if o.Settings().TagsAny[0] != "a" {
		t.Fatal("Settings shares its slices with Options")
	}
	// Setters on a nil receiver start from defaults.
	var nilOpts *search.Options
	if got := nilOpts.Limit(3).Settings().Limit; got != 3 {
		t.Fatalf("nil receiver Limit = %d", got)
	}
	if got := search.NewOptions().Limit(-1).ContentTypes().Settings(); got.Limit != search.DefaultLimit || got.Types != search.AllContent {
		t.Fatalf("zero values = %+v", got)
	}
}

func TestParseAndText(t *testing.T) {
	for _, m := range []search.Mode{search.Auto, search.FTS, search.Vector, search.Hybrid} {
		got, err := search.ParseMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := search.ParseMode("bogus"); !errors.Is(err, search.ErrInvalidQuery) {
		t.Errorf("ParseMode(bogus) err = %v", err)
	}
	ct, err := search.ParseContentType("blocks|messages")
	if err != nil || ct != search.Blocks|search.Messages {
		t.Errorf("ParseContentType = %v, %v", ct, err)
	}
	b, _ := json.Marshal(struct {
		T search.ContentType
		M search.Mode
	}{search.Archival, search.Vector})
	if string(b) != `{"T":"archival","M":"vector"}` {
		t.Errorf("json = %s", b)
	}
}
