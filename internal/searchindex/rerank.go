package searchindex

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/engram-go/engram/search"
)

// DefaultRerankDepth is how many of a search's first fused results a
// Reranker scores when IndexOptions.RerankDepth is 0.
const DefaultRerankDepth = 30

// DefaultRerankBackoff is how long searches skip a Reranker after it
// failed (IndexOptions.RerankBackoff), doubled for each failure in a row.
const DefaultRerankBackoff = 30 * time.Second

// MaxRerankDepth bounds IndexOptions.RerankDepth: every leg fetches that
// many candidates and the reranker reads them all in one request, so a
// deeper list costs more than it can change the first page (MaxLimit).
const MaxRerankDepth = search.MaxLimit

// RerankFailures counts rerankings since the Index was made that failed
// and left a search in its fused order.
func (x *Index) RerankFailures() int64 { return x.rerankFailures.Load() }

// rerank reorders the first RerankDepth of ranked by the Reranker's
// scores: their rows are fetched (a stub whose row changed since ranking
// is dropped), scored, and sorted by score, best first (ties keep the
// fused order); Score becomes the reranker's, Source.Rerank and
// RerankRank record it. The rest of ranked follows unchanged.
func (x *Index) rerank(ctx context.Context, query string, ranked []*hit, scope search.Scope, s *settings, terms []string) ([]*hit, error) {
	n := min(len(ranked), cmp.Or(x.opts.RerankDepth, DefaultRerankDepth))
	if n <= 0 {
		return ranked, nil
	}
	if !x.opts.RerankStrict && x.clock().UnixNano() < x.rerankPause.Load() {
		return ranked, nil // backing off after failures
	}
	since := x.rerankPause.Load()
	head := slices.Clone(ranked[:n])
	if err := x.fill(ctx, head, scope, s, terms); err != nil {
		return nil, err
	}
	head = slices.DeleteFunc(head, func(r *hit) bool { return r.stub })
	docs := make([]string, len(head))
	for i, r := range head {
		docs[i] = r.Content
		if r.Type == search.Blocks {
			docs[i] = search.BlockText(r.Label, "", r.Content)
		}
	}
	scores, err := x.opts.Reranker.Rerank(ctx, query, docs)
	if err == nil {
		err = checkScores(scores, len(docs))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("search: rerank: %w", context.Cause(ctx))
		}
		err = fmt.Errorf("%w: %d candidates: %w", search.ErrReranker, len(docs), err)
		if x.opts.RerankStrict {
			return nil, err
		}
		x.rerankFailures.Add(1)
		pause := x.pauseReranker(since)
		if x.opts.Logger != nil {
			x.opts.Logger.Warn("search: reranking failed; results keep the fused order", "err", err, "skipped_for", pause)
		}
		return ranked, nil
	}
	x.rerankStreak.Store(0)
	for i, r := range head {
		r.Source.Rerank = scores[i]
	}
	slices.SortStableFunc(head, func(a, b *hit) int { return cmp.Compare(b.Source.Rerank, a.Source.Rerank) })
	for i, r := range head {
		r.Source.RerankRank = i + 1
		r.Score = r.Source.Rerank
	}
	return append(head, ranked[n:]...), nil
}

// checkScores holds a Reranker's answer to one finite score per doc.
func checkScores(scores []float64, n int) error {
	if len(scores) != n {
		return fmt.Errorf("%d scores for %d texts", len(scores), n)
	}
	for i, v := range scores {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("score %d is %v", i, v)
		}
	}
	return nil
}

// pauseReranker makes searches skip the Reranker for the back-off after
// one more failure in a row, and returns how long. since is the pause
// the failed reranking began under: if another failure set a pause since,
// both were in flight in one outage and count once (concurrent searches
// would otherwise double the back-off as many times at once).
func (x *Index) pauseReranker(since int64) time.Duration {
	base := x.opts.RerankBackoff
	if base < 0 {
		return 0
	}
	x.rerankMu.Lock()
	defer x.rerankMu.Unlock()
	if p := x.rerankPause.Load(); p != since {
		return time.Duration(max(0, p-x.clock().UnixNano()))
	}
	if base == 0 {
		base = DefaultRerankBackoff
	}
	// Saturate rather than overflow: a doubled long back-off, or one
	// added to the clock past what UnixNano holds, would otherwise end
	// before it began and every search would ask the failing reranker.
	d := base
	for range min(x.rerankStreak.Add(1)-1, 4) {
		if d > math.MaxInt64/2 {
			d = math.MaxInt64
			break
		}
		d *= 2
	}
	now := x.clock().UnixNano()
	until := now + int64(d)
	if until < now {
		until = math.MaxInt64
	}
	x.rerankPause.Store(until)
	return d
}

func (x *Index) clock() time.Time {
	if x.now != nil {
		return x.now()
	}
	return time.Now()
}
