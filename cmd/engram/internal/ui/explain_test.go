package ui

import (
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// explain names the score a result carries: the share of the best
// full-text score (types fused by score) and a reranker's score.
func TestExplainScoreSources(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  search.ScoreSource
		want []string
	}{
		{"one type", search.ScoreSource{FTSRank: 1, BM25: -2}, []string{"score = −BM25"}},
		{"types fused by score", search.ScoreSource{FTSRank: 1, BM25: -2, FTSNorm: 0.4},
			[]string{"full-text share 0.4000 (BM25 over the best score the query could get in its content type", "score = share of the best full-text score"}},
		{"reranked", search.ScoreSource{FTSRank: 3, BM25: -1, FTSNorm: 0.2, RerankRank: 1, Rerank: 0.9},
			[]string{"reranked 1 (reranker score 0.9)", "score = reranker score"}},
	} {
		got := strings.Join(explain(search.Result{Source: tc.src}), "\n")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
	}
}
