package eval_test

import (
	"math"
	"testing"

	"github.com/engram-go/engram/internal/eval"
)

func TestMetrics(t *testing.T) {
	rel := eval.Relevance{"a": 3, "b": 2, "c": 1}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	if got := eval.NDCG([]string{"a", "b", "c"}, rel, 10); !near(got, 1) {
		t.Errorf("ideal NDCG = %v", got)
	}
	if got := eval.NDCGLinear([]string{"a", "b", "c"}, rel, 10); !near(got, 1) {
		t.Errorf("ideal NDCGLinear = %v", got)
	}
	// c, x, a: linear DCG = 1/1 + 0 + 3/2; ideal = 3 + 2/log2(3) + 1/2.
	idcg := 3 + 2/math.Log2(3) + 0.5
	if got, want := eval.NDCGLinear([]string{"c", "x", "a"}, rel, 10), (1+1.5)/idcg; !near(got, want) {
		t.Errorf("NDCGLinear = %v, want %v", got, want)
	}
	// exponential: gains 7, 3, 1.
	eidcg := 7 + 3/math.Log2(3) + 0.5
	if got, want := eval.NDCG([]string{"c", "x", "a"}, rel, 10), (1+3.5)/eidcg; !near(got, want) {
		t.Errorf("NDCG = %v, want %v", got, want)
	}
	if got := eval.NDCG([]string{"c", "x", "a"}, rel, 1); !near(got, 1.0/7) {
		t.Errorf("NDCG@1 = %v", got)
	}
	if got := eval.NDCG([]string{"a", "a", "a"}, rel, 10); got >= 1 {
		t.Errorf("duplicates counted: %v", got)
	}
	if got := eval.ReciprocalRank([]string{"x", "y", "b"}, rel); !near(got, 1.0/3) {
		t.Errorf("RR = %v", got)
	}
	if got := eval.Recall([]string{"a", "x", "c", "b"}, rel, 3); !near(got, 2.0/3) {
		t.Errorf("Recall@3 = %v", got)
	}
	m := eval.Evaluate(map[string][]string{"q1": {"a", "b", "c"}}, map[string]eval.Relevance{
		"q1": rel, "q2": {"z": 1}, "q3": {},
	})
	if m.Queries != 2 || !near(m.NDCG10, 0.5) || !near(m.MRR, 0.5) || !near(m.Recall100, 0.5) {
		t.Errorf("Evaluate = %+v", m)
	}
}
