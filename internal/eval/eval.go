// Package eval measures retrieval quality: graded-relevance metrics
// (NDCG, ReciprocalRank, Recall, Evaluate) and the Cranfield test
// collection (LoadCranfield, FindCranfield) that the quality tests of
// internal/searchindex and memory/postgres and the bench program score search with. It
// is internal so that it is not part of engram's public API; bench, a
// module of its own, may still import it because its import path lies
// under this module's root (the go command checks internal imports by
// import path) and its replace directive points at this tree.
package eval

import (
	"math"
	"slices"
)

// Relevance maps document ids to graded gains (> 0) for one query; ids not
// in the map are irrelevant.
type Relevance map[string]float64

// NDCG returns the normalised discounted cumulative gain of ranked at
// cutoff k with exponential gain: DCG = sum over ranks i = 1..k of
// (2^rel(i) - 1) / log2(i+1), divided by the DCG of the ideal ordering of
// rel. This is the usual graded-relevance form (Burges et al.); with the
// Cranfield grades (5 - position) it reproduces the reference figures in
// the collection's README. It is 0 when rel has no positive grade.
// Repeated ids count once (the first time).
func NDCG(ranked []string, rel Relevance, k int) float64 {
	return ndcg(ranked, rel, k, func(g float64) float64 { return math.Exp2(g) - 1 })
}

// NDCGLinear is NDCG with linear gain: DCG = sum of rel(i) / log2(i+1).
func NDCGLinear(ranked []string, rel Relevance, k int) float64 {
	return ndcg(ranked, rel, k, func(g float64) float64 { return g })
}

func ndcg(ranked []string, rel Relevance, k int, gain func(float64) float64) float64 {
	ideal := make([]float64, 0, len(rel))
	for _, g := range rel {
		if g > 0 {
			ideal = append(ideal, g)
		}
	}
	if len(ideal) == 0 || k <= 0 {
		return 0
	}
	slices.Sort(ideal)
	slices.Reverse(ideal)
	var idcg float64
	for i, g := range ideal {
		if i == k {
			break
		}
		idcg += gain(g) / math.Log2(float64(i+2))
	}
	var dcg float64
	seen := map[string]bool{}
	for i, id := range ranked {
		if i == k {
			break
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		if g := rel[id]; g > 0 {
			dcg += gain(g) / math.Log2(float64(i+2))
		}
	}
	return dcg / idcg
}

// ReciprocalRank returns 1/rank of the first relevant id in ranked (0 if
// none).
func ReciprocalRank(ranked []string, rel Relevance) float64 {
	for i, id := range ranked {
		if rel[id] > 0 {
			return 1 / float64(i+1)
		}
	}
	return 0
}

// Recall returns the fraction of relevant ids found in the first k of
// ranked (0 when rel has none).
func Recall(ranked []string, rel Relevance, k int) float64 {
	total := 0
	for _, g := range rel {
		if g > 0 {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	found := 0
	seen := map[string]bool{}
	for i, id := range ranked {
		if i == k {
			break
		}
		if rel[id] > 0 && !seen[id] {
			seen[id] = true
			found++
		}
	}
	return float64(found) / float64(total)
}

// Metrics are mean retrieval-quality figures over a query set.
type Metrics struct {
	Queries      int     // queries with at least one relevant document
	NDCG10       float64 // mean nDCG@10 (exponential gain, see NDCG)
	NDCG10Linear float64 // mean nDCG@10 with linear gain (NDCGLinear)
	MRR          float64 // mean reciprocal rank
	Recall100    float64 // mean recall@100
}

// Evaluate averages nDCG@10 (both gains), MRR and recall@100 of runs (query id to ranked
// document ids) over the queries in qrels that have relevant documents. A
// query without a run counts as retrieving nothing.
func Evaluate(runs map[string][]string, qrels map[string]Relevance) Metrics {
	var m Metrics
	ids := make([]string, 0, len(qrels))
	for q := range qrels {
		ids = append(ids, q)
	}
	slices.Sort(ids) // a fixed summation order: identical figures every run
	for _, q := range ids {
		rel := qrels[q]
		relevant := false
		for _, g := range rel {
			if g > 0 {
				relevant = true
				break
			}
		}
		if !relevant {
			continue
		}
		ranked := runs[q]
		m.Queries++
		m.NDCG10 += NDCG(ranked, rel, 10)
		m.NDCG10Linear += NDCGLinear(ranked, rel, 10)
		m.MRR += ReciprocalRank(ranked, rel)
		m.Recall100 += Recall(ranked, rel, 100)
	}
	if m.Queries > 0 {
		n := float64(m.Queries)
		m.NDCG10 /= n
		m.NDCG10Linear /= n
		m.MRR /= n
		m.Recall100 /= n
	}
	return m
}
