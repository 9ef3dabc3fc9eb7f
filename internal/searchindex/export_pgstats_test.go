package searchindex

import (
	"context"
	"fmt"

	"github.com/engram-go/engram/driver"

	"github.com/engram-go/engram/search"
)

// TextStatsDiff compares x's partial text cache's own statistics of kind
// t (when ready) with what whole (a whole text cache of the same store)
// ranks with, and with a fresh count of the store; both caches must be
// caught up to the log's end, no write running. ready is false when x has
// no statistics of t to compare, or only drifting ones (TextStatsDrift).
func TextStatsDiff(ctx context.Context, x, whole *Index, t search.ContentType) (ready bool, err error) {
	x.text.mu.RLock()
	s := x.text.gstats[t]
	ok := x.text.partial && s != nil && s.loaded && s.complete && s.drift == 0
	var rows, tokens int64
	var df map[string]int64
	if ok {
		rows, tokens, df = s.rows, s.tokens, make(map[string]int64, len(s.df))
		for k, v := range s.df {
			df[k] = v
		}
	}
	x.text.mu.RUnlock()
	if !ok {
		return false, nil
	}
	fresh, err := x.text.countStats(ctx, x.db, t)
	if err != nil {
		return true, err
	}
	if err := statsEqual("fresh pass", fresh.rows, fresh.tokens, fresh.df, rows, tokens, df); err != nil {
		return true, err
	}
	whole.text.mu.RLock()
	defer whole.text.mu.RUnlock()
	p := whole.text.parts[t]
	if p == nil {
		return true, fmt.Errorf("whole cache has no %v", t)
	}
	wdf := map[string]int64{}
	for term, id := range p.post {
		if p.df[id] > 0 {
			wdf[term] = int64(p.df[id])
		}
	}
	return true, statsEqual("whole cache", int64(p.live), p.tokens, wdf, rows, tokens, df)
}

func statsEqual(what string, wrows, wtokens int64, wdf map[string]int64, rows, tokens int64, df map[string]int64) error {
	if wrows != rows || wtokens != tokens {
		return fmt.Errorf("%s: rows %d tokens %d, partial holds rows %d tokens %d", what, wrows, wtokens, rows, tokens)
	}
	for k, v := range wdf {
		if df[k] != v {
			return fmt.Errorf("%s: df[%q] = %d, partial holds %d", what, k, v, df[k])
		}
	}
	for k, v := range df {
		if _, ok := wdf[k]; !ok {
			return fmt.Errorf("%s: df[%q] = 0, partial holds %d", what, k, v)
		}
	}
	return nil
}

// ChangedSinceStatement is the statement a cache of table reads the log's
// bounds and its news with, for a position at xmin/xmax with xip running.
func ChangedSinceStatement(d driver.Dialect, table string, xmin, xmax int64, xip []int64) (string, []any) {
	return newChangeLog(d, table).changedSince(logPos{xmin: xmin, xmax: xmax, xip: xip})
}

// TextStatsDrift is how many rows x's statistics of kind t follow
// approximately (IndexOptions.TextStatsDrift).
func TextStatsDrift(x *Index, t search.ContentType) int64 {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	if s := x.text.gstats[t]; s != nil {
		return s.drift
	}
	return 0
}

// TextStatsFigures: kind t's statistics rows, tokens, drift and df of term.
func TextStatsFigures(x *Index, t search.ContentType, term string) (rows, tokens, drift, df int64, ok bool) {
	x.text.mu.RLock()
	defer x.text.mu.RUnlock()
	s := x.text.gstats[t]
	if s == nil || !s.loaded {
		return 0, 0, 0, 0, false
	}
	return s.rows, s.tokens, s.drift, s.df[term], true
}
