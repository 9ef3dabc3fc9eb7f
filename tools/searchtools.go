package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

const (
	// maxLimit caps the limit argument of the search tools.
	maxLimit = 50
	// maxContent is how many characters of a hit's content a result shows.
	maxContent = 1000
)

type archivalInsertArgs struct {
	Content  string         `json:"content" jsonschema_description:"What to remember: a fact, note or passage. Make it self-contained, since it will be found later by search without this conversation."`
	Tags     []string       `json:"tags,omitempty" jsonschema_description:"Short keywords to file it under, such as [\"preferences\", \"travel\"]. Searches can filter by them."`
	Metadata map[string]any `json:"metadata,omitempty" jsonschema_description:"Structured data to keep with it, as an object such as {\"source\": \"user\"}. Omit when there is none."`
}

type archivalSearchArgs struct {
	Query string   `json:"query" jsonschema_description:"What to look for: keywords or a question."`
	Tags  []string `json:"tags,omitempty" jsonschema_description:"Only entries carrying at least one of these tags."`
	Since string   `json:"since,omitempty" jsonschema_description:"Only entries created at or after this time: an RFC 3339 time (2025-01-31T09:00:00Z), a date (2025-01-31, from its start) or an age such as 24h or 7d (that long ago)."`
	Until string   `json:"until,omitempty" jsonschema_description:"Only entries created before this time: an RFC 3339 time, a date (2025-01-31, up to its end) or an age such as 24h or 7d (that long ago)."`
	Mode  string   `json:"mode,omitempty" jsonschema:"enum=auto,enum=fts,enum=vector,enum=hybrid" jsonschema_description:"How to match: fts (keywords), vector (meaning), hybrid (both) or auto (the best available; the default)."`
	Limit int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Maximum number of results, 1 to 50 (default 10)."`
}

type conversationSearchArgs struct {
	Query string `json:"query" jsonschema_description:"What to look for in past messages: keywords or a question."`
	Since string `json:"since,omitempty" jsonschema_description:"Only messages sent at or after this time: an RFC 3339 time (2025-01-31T09:00:00Z), a date (2025-01-31, from its start) or an age such as 24h or 7d (that long ago)."`
	Until string `json:"until,omitempty" jsonschema_description:"Only messages sent before this time: an RFC 3339 time, a date (2025-01-31, up to its end) or an age such as 24h or 7d (that long ago)."`
	Mode  string `json:"mode,omitempty" jsonschema:"enum=auto,enum=fts,enum=vector,enum=hybrid" jsonschema_description:"How to match: fts (keywords), vector (meaning), hybrid (both) or auto (the best available; the default)."`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50" jsonschema_description:"Maximum number of results, 1 to 50 (default 10)."`
}

func archivalInsert(ctx context.Context, ts *Toolset, a *archivalInsertArgs) (Result, error) {
	if strings.TrimSpace(a.Content) == "" {
		return Result{}, modelErrorf("content is empty; give the text to remember")
	}
	e, err := ts.mem.Archival().Insert(ctx, memory.ArchivalEntry{Content: a.Content, Tags: a.Tags, Metadata: a.Metadata})
	switch {
	case errors.Is(err, memory.ErrTooLarge):
		return Result{}, modelErrorf("%s; nothing was stored. Shorten it, or split it into several entries", cleanErr(err))
	case errors.Is(err, memory.ErrQuota):
		return Result{}, modelErrorf("%s; nothing was stored: %s", cleanErr(err), quotaHint)
	case err != nil:
		return Result{}, err
	}
	if e.Duplicate {
		return okResult("Already stored as archival entry #%d (the same text); its tags and metadata now include yours.", e.ID), nil
	}
	msg := fmt.Sprintf("Inserted archival entry #%d", e.ID)
	if len(e.Tags) > 0 {
		msg += " with tags " + strings.Join(e.Tags, ", ")
	}
	return okResult("%s.", msg), nil
}

var agePattern = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$`)

// parseTime reads a since/until argument. A plain date means its start, or
// with end set the start of the next day (so until=date includes the day).
func parseTime(arg, s string, now time.Time, end bool) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	if m := agePattern.FindStringSubmatch(strings.ToLower(s)); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
			if d := n * float64(unit); d < float64(200*365*24*time.Hour) {
				return now.Add(-time.Duration(d)).UTC(), nil
			}
		}
	}
	return time.Time{}, modelErrorf("%s %s is not a time; use an RFC 3339 time (2025-01-31T09:00:00Z), a date (2025-01-31) or an age such as 24h or 7d", arg, quote(s))
}

// searchOptions builds the options shared by the search tools.
func (ts *Toolset) searchOptions(query, since, until, mode string, limit int) (*search.Options, error) {
	if strings.TrimSpace(query) == "" {
		return nil, modelErrorf("query is empty; give keywords or a question to search for")
	}
	m, err := search.ParseMode(mode)
	if err != nil {
		return nil, modelErrorf("mode %s is not one of auto, fts, vector, hybrid", quote(mode))
	}
	if limit < 0 || limit > maxLimit {
		return nil, modelErrorf("limit %d is out of range; use 1 to %d", limit, maxLimit)
	}
	now := ts.now()
	from, err := parseTime("since", since, now, false)
	if err != nil {
		return nil, err
	}
	to, err := parseTime("until", until, now, true)
	if err != nil {
		return nil, err
	}
	if !from.IsZero() && !to.IsZero() && !to.After(from) {
		return nil, modelErrorf("until (%s) must be after since (%s)", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	return search.NewOptions().Mode(m).Limit(limit).Since(from).Until(to), nil
}

// hit is one search result as shown to the model.
type hit struct {
	ID       int64              `json:"id"`
	Role     string             `json:"role,omitempty"`
	Created  string             `json:"created"`
	Tags     []string           `json:"tags,omitempty"`
	Snippet  string             `json:"snippet"`
	Content  string             `json:"content,omitempty"`
	Metadata map[string]any     `json:"metadata,omitempty"`
	Score    float64            `json:"score"`
	RankedBy string             `json:"ranked_by"`
	Source   search.ScoreSource `json:"score_source"`
}

// hits is the JSON a search tool returns.
type hits struct {
	Count   int    `json:"count"`
	Results []hit  `json:"results"`
	Note    string `json:"note,omitempty"`
}

// rankedBy names what the hit's score is: a reranked hit's score is the
// reranker's (memory.Options.Reranker), whatever fused it before.
func rankedBy(s search.ScoreSource) string {
	switch {
	case s.RerankRank > 0:
		return "rerank"
	case s.Fused != 0:
		return "hybrid"
	case s.VectorRank > 0:
		return "vector"
	}
	return "fts"
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

var unmark = strings.NewReplacer(search.HighlightStart, "", search.HighlightEnd, "", search.Ellipsis, "")

func toHit(r search.Result) hit {
	h := hit{
		ID:       r.ID,
		Created:  r.Created.UTC().Format(time.RFC3339),
		Tags:     r.Tags,
		Snippet:  r.Snippet,
		Score:    finite(r.Score),
		RankedBy: rankedBy(r.Source),
		Source:   r.Source,
	}
	h.Source.BM25, h.Source.Distance, h.Source.Fused = finite(h.Source.BM25), finite(h.Source.Distance), finite(h.Source.Fused)
	h.Source.FTSNorm, h.Source.Rerank = finite(h.Source.FTSNorm), finite(h.Source.Rerank)
	if unmark.Replace(r.Snippet) != r.Content {
		c := r.Content
		if utf8.RuneCountInString(c) > maxContent {
			c = string([]rune(c)[:maxContent]) + "…"
		}
		h.Content = c
	}
	return h
}

func hitsResult(rs []search.Result, convert func(search.Result) hit, none string) (Result, error) {
	out := hits{Count: len(rs), Results: make([]hit, 0, len(rs))}
	for _, r := range rs {
		out.Results = append(out.Results, convert(r))
	}
	if len(rs) == 0 {
		out.Note = none
	}
	b, err := marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("tools: encode results: %w", err)
	}
	return Result{Content: string(b)}, nil
}

// searchErr turns search refusals into model errors.
func searchErr(err error) error {
	switch {
	case errors.Is(err, search.ErrNoEmbedder):
		return modelErrorf("meaning-based search (vector, hybrid) is not available here; use mode fts or auto")
	case errors.Is(err, search.ErrInvalidQuery):
		return modelErrorf("query has nothing to search for (%s); use words or numbers", cleanErr(err))
	}
	return err
}

func archivalSearch(ctx context.Context, ts *Toolset, a *archivalSearchArgs) (Result, error) {
	opts, err := ts.searchOptions(a.Query, a.Since, a.Until, a.Mode, a.Limit)
	if err != nil {
		return Result{}, err
	}
	if len(a.Tags) > 0 {
		opts.Tags(a.Tags...)
	}
	rs, err := ts.mem.Archival().Search(ctx, a.Query, opts)
	if err != nil {
		return Result{}, searchErr(err)
	}
	return hitsResult(rs, func(r search.Result) hit {
		h := toHit(r)
		if len(r.Metadata) > 0 {
			h.Metadata = r.Metadata
		}
		return h
	}, "no archival entries match; try other words, fewer filters, or mode fts")
}

func conversationSearch(ctx context.Context, ts *Toolset, a *conversationSearchArgs) (Result, error) {
	opts, err := ts.searchOptions(a.Query, a.Since, a.Until, a.Mode, a.Limit)
	if err != nil {
		return Result{}, err
	}
	opts.ContentTypes(search.Messages)
	rs, err := ts.mem.Search(ctx, a.Query, opts)
	if err != nil {
		return Result{}, searchErr(err)
	}
	return hitsResult(rs, func(r search.Result) hit {
		h := toHit(r)
		if role, ok := r.Metadata["role"].(string); ok {
			h.Role = role
		}
		h.Tags = nil
		return h
	}, "no messages match; try other words or a wider time range")
}
