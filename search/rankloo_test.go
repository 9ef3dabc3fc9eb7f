package search_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
)

// TestRankingLeaveOneOut chooses the context columns' weights (before,
// after) by leave-one-conversation-out over LoCoMo's dev half: for each
// conversation, the candidate with the best evidence R@10 over the other
// conversations is chosen and scored on the held-out one. The per-fold
// table (chosen weights, held-out R@10 of the choice and of the shipped
// 0.5 / 0.25) and the per-category recall of the choices are what
// docs/retrieval.md reports. Ranking is the text cache's (the harness of
// TestRankingVariants), so a weight chosen here is one the engines can
// use. It fails if the shipped weights lose to the fold's choice by more
// than .01 on a held-out conversation: then the default fits the dev
// conversations and should move.
func TestRankingLeaveOneOut(t *testing.T) {
	if raceEnabled {
		t.Skip("leave-one-out skipped under -race")
	}
	testenv.SkipUnlessLong(t, "leave-one-conversation-out over LoCoMo")
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(t, "LoCoMo dev set not found (set ENGRAM_LOCOMO or place it at ../shared/datasets/locomo-dev)")
	}
	l, err := eval.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	var cands []variant
	for _, b := range []float64{0, 0.25, 0.5, 0.75, 1} {
		for _, a := range []float64{0, 0.125, 0.25, 0.5} {
			cands = append(cands, variant{name: fmt.Sprintf("%.3g/%.3g", b, a), w: [3]float64{1, b, a}})
		}
	}
	shipped := slices.IndexFunc(cands, func(v variant) bool { return v.w == [3]float64{1, 0.5, 0.25} })
	ks := []int{5, 10, 25}
	// rec[conv][cand][question] = R@5/10/25
	type qres struct {
		cat int
		r   [3]float64
	}
	rec := make([][][]qres, len(l.Conversations))
	for ci, c := range l.Conversations {
		var docs []variantDoc
		var dia []string
		for _, s := range c.Sessions {
			for i, tr := range s.Turns {
				var texts [3]string
				texts[0] = tr.Text
				if i > 0 {
					texts[1] = s.Turns[i-1].Text
				}
				if i+1 < len(s.Turns) {
					texts[2] = s.Turns[i+1].Text
				}
				docs = append(docs, newVariantDoc(texts))
				dia = append(dia, tr.DiaID)
			}
		}
		x := newVariantIndex(docs)
		rec[ci] = make([][]qres, len(cands))
		for vi, v := range cands {
			for _, q := range c.Questions {
				var ranked []string
				for _, i := range x.rank(v, variantPhrases(q.Question), 25) {
					ranked = append(ranked, dia[i])
				}
				var r qres
				r.cat = q.Category
				for j, k := range ks {
					r.r[j] = eval.EvidenceRecall(ranked, q.Evidence, k)
				}
				rec[ci][vi] = append(rec[ci][vi], r)
			}
		}
	}
	mean := func(rs []qres, cat, k int) (float64, int) {
		var s float64
		n := 0
		for _, r := range rs {
			if cat == 0 || r.cat == cat {
				s += r.r[k]
				n++
			}
		}
		if n == 0 {
			return 0, 0
		}
		return s / float64(n), n
	}
	// Per-category sums over the held-out folds, for the choices and for
	// the shipped weights.
	type acc struct {
		n         int
		loo, ship [3]float64
	}
	cats := map[int]*acc{}
	t.Logf("%-8s %4s  %-11s %-22s %-22s", "held out", "n", "chosen", "chosen R@5/10/25", "shipped R@5/10/25")
	for hold := range l.Conversations {
		best, bestR := -1, -1.0
		for vi := range cands {
			var s float64
			n := 0
			for ci := range l.Conversations {
				if ci == hold {
					continue
				}
				for _, r := range rec[ci][vi] {
					s += r.r[1]
					n++
				}
			}
			if r := s / float64(n); r > bestR+1e-12 {
				best, bestR = vi, r
			}
		}
		var ch, sh [3]float64
		for k := range ks {
			ch[k], _ = mean(rec[hold][best], 0, k)
			sh[k], _ = mean(rec[hold][shipped], 0, k)
		}
		t.Logf("%-8s %4d  %-11s %.3f/%.3f/%.3f    %.3f/%.3f/%.3f", l.Conversations[hold].ID, len(rec[hold][best]), cands[best].name,
			ch[0], ch[1], ch[2], sh[0], sh[1], sh[2])
		if sh[1] < ch[1]-0.01 {
			t.Errorf("%s held out: shipped weights R@10 %.3f, the other folds' choice %s %.3f", l.Conversations[hold].ID, sh[1], cands[best].name, ch[1])
		}
		for qi, r := range rec[hold][best] {
			for _, c := range []int{0, r.cat} {
				a := cats[c]
				if a == nil {
					a = &acc{}
					cats[c] = a
				}
				a.n++
				for k := range ks {
					a.loo[k] += r.r[k]
					a.ship[k] += rec[hold][shipped][qi].r[k]
				}
			}
		}
	}
	t.Logf("%-12s %4s  %-19s %-19s", "category", "n", "LOO R@5/10/25", "shipped R@5/10/25")
	for _, c := range []int{0, 1, 2, 3, 4, 5} {
		a := cats[c]
		if a == nil {
			continue
		}
		name := "all"
		if c != 0 {
			name = eval.LoCoMoCategories[c]
		}
		n := float64(a.n)
		t.Logf("%-12s %4d  %.3f/%.3f/%.3f  %.3f/%.3f/%.3f", name, a.n, a.loo[0]/n, a.loo[1]/n, a.loo[2]/n, a.ship[0]/n, a.ship[1]/n, a.ship[2]/n)
	}
}
