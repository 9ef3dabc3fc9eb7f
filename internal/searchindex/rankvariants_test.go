package searchindex_test

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
)

// The ranking variants (context columns; BM25F and proximity), prototyped over
// the text cache's own analysis and scoring (QueryTerms, CachePhrases,
// FTS5's idf, k1 = 1.2, b = 0.75) so that "baseline" is what engram ranks
// today: each LoCoMo turn indexed with the turns before (weight 0.5) and
// after (0.25) it in its session, and Cranfield's abstracts alone.
// docs/retrieval.md records the table this test logs and what was kept.

// nFields: a document's fields are its own text, the context before and
// after it, and its date (a session's date, as a numbered-session
// transcript entry's metadata holds it).
const nFields = 4

// variantDoc is one document's fields: own text, context before, after, date.
type variantDoc struct {
	tf  [nFields]map[string]int
	len [nFields]int
	pos map[string][]int // own field's term positions
}

func newVariantDoc(texts [nFields]string) variantDoc {
	var d variantDoc
	d.pos = map[string][]int{}
	for f, s := range texts {
		d.tf[f] = map[string]int{}
		analyzer.Analyze(s, nil, func(term []byte) {
			t := string(term)
			d.tf[f][t]++
			if f == 0 {
				d.pos[t] = append(d.pos[t], d.len[f])
			}
			d.len[f]++
		})
	}
	return d
}

// variantIndex is one store's documents and statistics.
type variantIndex struct {
	docs   []variantDoc
	df     map[string]int
	post   map[string][]int // term -> documents holding it in any field
	avgAll float64
	avg    [nFields]float64
	// sessions, when set, indexes each session as one document (the
	// session-level candidates of TestRankingExpansionLeaveOneOut).
	sessions *variantIndex
}

func newVariantIndex(docs []variantDoc) *variantIndex {
	x := &variantIndex{docs: docs, df: map[string]int{}, post: map[string][]int{}}
	var all int
	var per [nFields]int
	for i, d := range docs {
		seen := map[string]bool{}
		for f := range d.tf {
			per[f] += d.len[f]
			all += d.len[f]
			for t := range d.tf[f] {
				if !seen[t] {
					seen[t] = true
					x.df[t]++
					x.post[t] = append(x.post[t], i)
				}
			}
		}
	}
	n := float64(max(len(docs), 1))
	x.avgAll = float64(all) / n
	for f := range per {
		x.avg[f] = math.Max(float64(per[f])/n, 1e-9)
	}
	return x
}

const (
	variantK1 = 1.2
	variantB  = 0.75
)

func (x *variantIndex) idf(t string) float64 {
	return searchindex.BM25IDFForTest(int64(len(x.docs)), int64(x.df[t]))
}

// variant scores one document for the query's phrases.
type variant struct {
	name  string
	w     [nFields]float64 // field weights
	bm25f bool             // per-field length normalisation (else FTS5's whole-row bm25)
	prox  float64          // weight of the BM25TP term-pair proximity score (0: none)
	// pw, when set, weighs each phrase (a query's added time words); nil:
	// every phrase 1.
	pw map[string]float64
	// pwOwn: the weighted phrases count in the own text only.
	pwOwn bool
	// b, when set, is bm25's length normalisation (else variantB).
	b float64
}

func (v variant) phraseWeight(p string) float64 {
	if w, ok := v.pw[p]; ok {
		return w
	}
	return 1
}

func (v variant) score(x *variantIndex, d *variantDoc, phrases []string) float64 {
	var s float64
	lenAll := float64(d.len[0] + d.len[1] + d.len[2] + d.len[3])
	b := variantB
	if v.b > 0 {
		b = v.b
	}
	norm := 1 - b + b*lenAll/x.avgAll
	for _, p := range phrases {
		if v.bm25f {
			var tf float64
			for f := range d.tf {
				if c := d.tf[f][p]; c > 0 {
					tf += v.phraseWeight(p) * v.w[f] * float64(c) / (1 - variantB + variantB*float64(d.len[f])/x.avg[f])
				}
			}
			if tf > 0 {
				s += x.idf(p) * tf * (variantK1 + 1) / (variantK1 + tf)
			}
			continue
		}
		var f float64
		for c := range d.tf {
			if _, ok := v.pw[p]; ok && v.pwOwn && c > 0 {
				continue
			}
			f += v.w[c] * float64(d.tf[c][p])
		}
		if f > 0 {
			s += v.phraseWeight(p) * x.idf(p) * f * (variantK1 + 1) / (f + variantK1*norm)
		}
	}
	if v.prox > 0 {
		// BM25TP (Rasolofo and Savoy): each pair of distinct query terms
		// within 5 positions in the own text adds 1/d², saturated like tf.
		for i := range phrases {
			for j := i + 1; j < len(phrases); j++ {
				a, b := d.pos[phrases[i]], d.pos[phrases[j]]
				if len(a) == 0 || len(b) == 0 || phrases[i] == phrases[j] {
					continue
				}
				var acc float64
				for _, pa := range a {
					for _, pb := range b {
						if dist := abs(pa - pb); dist > 0 && dist <= 5 {
							acc += 1 / float64(dist*dist)
						}
					}
				}
				if acc > 0 {
					s += v.prox * min(x.idf(phrases[i]), x.idf(phrases[j])) * acc * (variantK1 + 1) / (acc + variantK1*norm)
				}
			}
		}
	}
	return s
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// rank returns the indexes of the limit best documents matching phrases.
func (x *variantIndex) rank(v variant, phrases []string, limit int) []int {
	type hit struct {
		i int
		s float64
	}
	var cand []int
	for _, p := range phrases {
		cand = append(cand, x.post[p]...)
	}
	slices.Sort(cand)
	hits := make([]hit, 0, len(cand))
	for _, i := range slices.Compact(cand) {
		hits = append(hits, hit{i, v.score(x, &x.docs[i], phrases)})
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return cmp.Compare(b.s, a.s) })
	out := make([]int, 0, limit)
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, h.i)
	}
	return out
}

func variantPhrases(q string) []string {
	ph, _ := searchindex.CachePhrases(analyzer.QueryTerms(q))
	return ph
}

func TestRankingVariants(t *testing.T) {
	if raceEnabled {
		t.Skip("ranking variants skipped under -race (minutes there)")
	}
	testenv.SkipUnlessLong(t, "ranking variants over LoCoMo")
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(t, "LoCoMo dev set not found (set ENGRAM_LOCOMO or place it at ../shared/datasets/locomo-dev)")
	}
	l, err := eval.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	ctxW := [nFields]float64{1, 0.5, 0.25}
	variants := []variant{
		{name: "baseline (FTS5 bm25, context in the row)", w: ctxW},
		{name: "BM25F, context its own fields", w: ctxW, bm25f: true},
		{name: "BM25F, before 0.3 / after 0.15", w: [nFields]float64{1, 0.3, 0.15}, bm25f: true},
		{name: "BM25F, before 0.8 / after 0.4", w: [nFields]float64{1, 0.8, 0.4}, bm25f: true},
		{name: "baseline + proximity 0.5", w: ctxW, prox: 0.5},
		{name: "baseline + proximity 1", w: ctxW, prox: 1},
		{name: "BM25F + proximity 0.5", w: ctxW, bm25f: true, prox: 0.5},
	}
	ks := []int{5, 10, 25}
	type acc struct {
		n int
		r [][3]float64 // per variant
	}
	perCat := map[int]*acc{}
	for _, c := range l.Conversations {
		var docs []variantDoc
		var dia []string
		for _, s := range c.Sessions {
			for i, tr := range s.Turns {
				var texts [nFields]string
				texts[0] = tr.Text
				texts[1], texts[2] = turnContext(s.Turns, i, 1)
				docs = append(docs, newVariantDoc(texts))
				dia = append(dia, tr.DiaID)
			}
		}
		x := newVariantIndex(docs)
		for _, q := range c.Questions {
			ph := variantPhrases(q.Question)
			for _, cat := range []int{0, q.Category} {
				a := perCat[cat]
				if a == nil {
					a = &acc{r: make([][3]float64, len(variants))}
					perCat[cat] = a
				}
				a.n++
				for vi, v := range variants {
					var ranked []string
					for _, i := range x.rank(v, ph, 25) {
						ranked = append(ranked, dia[i])
					}
					for j, k := range ks {
						a.r[vi][j] += eval.EvidenceRecall(ranked, q.Evidence, k)
					}
				}
			}
		}
	}
	cats := slices.Sorted(func(yield func(int) bool) {
		for c := range perCat {
			if !yield(c) {
				return
			}
		}
	})
	for vi, v := range variants {
		t.Logf("LoCoMo dev, %s:", v.name)
		for _, c := range cats {
			a := perCat[c]
			name := "all"
			if c != 0 {
				name = eval.LoCoMoCategories[c]
			}
			t.Logf("  %-12s %4d  %.3f / %.3f / %.3f", name, a.n, a.r[vi][0]/float64(a.n), a.r[vi][1]/float64(a.n), a.r[vi][2]/float64(a.n))
		}
	}
	// The harness must be the text cache's ranking: its baseline gives the
	// recall TestLoCoMoEvidenceRecall measures through the store.
	if all := perCat[0]; all.r[0][1]/float64(all.n) < 0.74 || all.r[0][2]/float64(all.n) < 0.80 {
		t.Errorf("baseline R@10 %.3f, R@25 %.3f: not the text cache's ranking", all.r[0][1]/float64(all.n), all.r[0][2]/float64(all.n))
	}

	dir := eval.FindCranfield()
	if dir == "" {
		testenv.Missing(t, "Cranfield collection not found")
		return
	}
	cr, err := eval.LoadCranfield(dir)
	if err != nil {
		t.Fatal(err)
	}
	var docs []variantDoc
	for _, d := range cr.Docs {
		docs = append(docs, newVariantDoc([nFields]string{d.Title + "\n" + d.Body})) // as the store holds them
	}
	x := newVariantIndex(docs)
	for _, v := range variants {
		runs := map[string][]string{}
		for _, q := range cr.Queries {
			var ids []string
			for _, i := range x.rank(v, variantPhrases(q.Text), 100) {
				ids = append(ids, strconv.FormatInt(cr.Docs[i].ID, 10))
			}
			runs[strconv.FormatInt(q.ID, 10)] = ids
		}
		m := eval.Evaluate(runs, cr.Qrels)
		t.Logf("Cranfield, %s: nDCG@10 %.3f", v.name, m.NDCG10)
		if v.name == variants[0].name && m.NDCG10 < 0.549 {
			t.Errorf("baseline Cranfield nDCG@10 %.3f: not the text cache's ranking", m.NDCG10)
		}
	}
}
