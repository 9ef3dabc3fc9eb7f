package searchindex

import (
	"context"
	"math"
	"slices"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// ftsLeg is one content type's full-text list and what ranked it.
type ftsLeg struct {
	k    *kind
	rs   []*hit
	from legSource
}

type legSource int

const (
	legSQL legSource = iota
	legCache
)

// bm25Max is the bm25 score of a row holding every phrase with a frequency
// growing without bound: Σ idf·(k1+1). idf is FTS5's, floored at 1e-6; a
// phrase no row holds counts with its idf at n = 0, ln((N+0.5)/0.5), the
// highest there is, so a type that lacks a query word does not look
// complete for the others.
func bm25Max(rows int64, df []int64) float64 {
	if rows <= 0 {
		return 0
	}
	var m float64
	for _, n := range df {
		m += bm25IDF(rows, n) * (bm25K1 + 1.0)
	}
	return m
}

// bm25IDF is FTS5's idf of a phrase df of rows hold (fts5Bm25Function's
// expression), floored at 1e-6. Statistics that drift
// (IndexOptions.TextStatsDrift) can count a phrase in more rows than they
// count in all: the logarithm of a negative ratio, NaN, takes the floor
// too, as the idf of a phrase in every row does.
func bm25IDF(rows, df int64) float64 {
	idf := math.Log((float64(rows-df) + 0.5) / (float64(df) + 0.5))
	if !(idf > 0.0) {
		idf = 1e-6
	}
	return idf
}

// maxScore is bm25Max over the text cache's statistics of t for the
// phrases (analyzed terms) a cached leg ranked with; ok is false when the
// cache holds no copy of t.
func (c *textCache) maxScore(t search.ContentType, phrases []string) (float64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.partial {
		return c.partialMaxScore(t, phrases)
	}
	p := c.parts[t]
	if p == nil || p.live == 0 {
		return 0, false
	}
	df := make([]int64, len(phrases))
	for i, ph := range phrases {
		if id, ok := p.termID(ph); ok {
			df[i] = int64(p.df[id])
		}
	}
	return bm25Max(int64(p.live), df), true
}

// cachePhrases are the analyzed terms a cached leg ranks with (cachedFTS
// and legMax); ok is false when a term analyzes to other than one token.
func cachePhrases(terms []string) ([]string, bool) {
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		n := 0
		var stem string
		analyzer.Analyze(t, nil, func(term []byte) { stem = string(term); n++ })
		if n != 1 {
			return nil, false
		}
		out = append(out, stem)
	}
	return out, true
}

// legMax finds leg l's highest attainable score: from the text cache's
// statistics when the cache ranked it, else from the dialect
// (driver.FullTextScale). 0 means unknown.
func (x *Index) legMax(ctx context.Context, l *ftsLeg, expr string, terms []string, scope search.Scope, s *settings) (float64, error) {
	if l.from == legCache {
		if ph, ok := cachePhrases(terms); ok {
			if m, ok := x.text.maxScore(l.k.t, ph); ok {
				return m, nil
			}
		}
		if !x.text.isPartial() || x.text.stats == nil {
			// Without driver.TextStats (PostgreSQL) a partial cache ranks with
			// its own statistics, not the engine's: once a catch-up
			// dropped them (a write since the leg ranked) the leg's
			// scale is unknown.
			return 0, nil
		}
		// A partial cache with driver.TextStats ranks with the engine's own
		// statistics: the engine's scale is the leg's.
	}
	fs, ok := x.d.(driver.FullTextScale)
	if !ok {
		return 0, nil
	}
	where, args := filters(x.d, l.k, scope, s, true)
	p := &driver.FullTextParams{Table: l.k.base, Alias: l.k.alias, Index: l.k.fts,
		Weights: l.k.bm25, Match: expr, Terms: terms, Where: where, Args: args}
	p.Owner, p.Shared = legOwner(l.k, scope)
	return fs.FullTextMax(ctx, x.db, p)
}

// minScaleShare bounds how far below the largest leg's scale a leg's own
// scale may divide its scores. For a one-word query the word's idf is in
// both a row's score and its leg's scale, so the share alone says nothing
// of the word's rarity: a block table holding the word in every row (idf
// floored at 1e-6) would give its rows the shares of an informative match.
// A leg whose best attainable score is under this fraction of another
// leg's is divided by that fraction of the other's instead, so its words'
// low idf counts. Legs of comparable scale (LoCoMo's messages and archival
// entries: the same at 0.1 and 0.25, lower from 0.5, docs/retrieval.md)
// keep their own: dividing all legs by one scale fused worse there.
const minScaleShare = 0.25

// fuseByScore merges the full-text lists of several content types into
// one by each row's score over its leg's highest attainable score
// (ScoreSource.FTSNorm, in [0, 1]): a row's share of what a perfect match
// for the whole query would score in its own table. Raw scores are not
// comparable across tables (each has its own row count, term frequencies
// and lengths: a term in every one of a few blocks has idf ≈ 0 there) and
// ranks are not either (the best of a list matching one word ties with
// the best of one matching all). ok is false when some non-empty leg's
// scale is unknown: the caller fuses by rank then. A leg's scale is at
// least minScaleShare of the largest, so that a word in every row of one
// table does not count as much as a rare word in another.
func (x *Index) fuseByScore(ctx context.Context, legs []ftsLeg, expr string, terms []string, scope search.Scope, s *settings) ([]*hit, bool, error) {
	// Every leg's scale first: a leg whose scale is unknown sends the
	// search to rank fusion, and a share set on an earlier leg's rows
	// would then claim an order that was not used.
	maxes := make([]float64, len(legs))
	for i := range legs {
		l := &legs[i]
		if len(l.rs) == 0 {
			continue
		}
		m, err := x.legMax(ctx, l, expr, terms, scope, s)
		if err != nil {
			return nil, false, err
		}
		if !(m > 0) || math.IsInf(m, 0) {
			return nil, false, nil
		}
		maxes[i] = m
	}
	floor := minScaleShare * slices.Max(maxes)
	var all []*hit
	for i, l := range legs {
		for _, r := range l.rs {
			r.Source.FTSNorm = math.Abs(r.Source.BM25) / max(maxes[i], floor)
			all = append(all, r)
		}
	}
	sortByNorm(all)
	return all, true, nil
}

// sortByNorm orders rows by FTSNorm (best first), then by their rank in
// their own list, content type and id (a total order).
func sortByNorm(all []*hit) {
	slices.SortFunc(all, func(a, b *hit) int {
		if a.Source.FTSNorm != b.Source.FTSNorm {
			if a.Source.FTSNorm > b.Source.FTSNorm {
				return -1
			}
			return 1
		}
		if a.Source.FTSRank != b.Source.FTSRank {
			return a.Source.FTSRank - b.Source.FTSRank
		}
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
}
