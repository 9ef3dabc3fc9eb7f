package memory_test

import (
	"context"
	"errors"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// perturb returns a light variant of text of the given kind (0 case, 1
// punctuation, 2 white space, 3 a filler word, 4 two clauses swapped),
// or "" when the kind does not apply.
func perturb(text string, kind int, rng *rand.Rand) string {
	switch kind {
	case 0:
		if rng.Intn(2) == 0 {
			return strings.ToUpper(text)
		}
		return strings.ToLower(text)
	case 1:
		t := strings.TrimRightFunc(text, unicode.IsPunct)
		if t == text {
			return text + "!"
		}
		return t
	case 2:
		return "  " + strings.ReplaceAll(text, " ", "   ") + "\n"
	case 3:
		w := strings.Fields(text)
		if len(w) < 2 {
			return ""
		}
		filler := []string{"really", "actually", "basically", "honestly", "um"}[rng.Intn(5)]
		return strings.Join(append(append(w[:1:1], filler), w[1:]...), " ")
	case 4:
		for _, sep := range []string{", ", " and "} {
			if a, b, ok := strings.Cut(text, sep); ok && len(a) > 0 && len(b) > 0 {
				b = strings.TrimRightFunc(b, unicode.IsPunct)
				return b + sep + a
			}
		}
		return ""
	}
	return ""
}

type locomoItem struct {
	group    int // original turn (by its normalised text within the session)
	original bool
	text     string
	dia      string
}

// locomoStore inserts conv's turns (and, with copies, up to 3 light
// perturbations of each) into a fresh store as archival entries.
func locomoStore(t *testing.T, conv eval.LoCoMoConversation, copies bool, o *memory.Options) (*memory.Store, map[int64]locomoItem) {
	t.Helper()
	ctx := context.Background()
	s, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "l.db")), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rng := rand.New(rand.NewSource(7))
	groups := map[string]int{}
	var items []locomoItem
	var entries []memory.ArchivalEntry
	for _, sess := range conv.Sessions {
		for _, tr := range sess.Turns {
			gk := sess.Key + "\x00" + memory.NormalizeContent(tr.Text)
			g, ok := groups[gk]
			if !ok {
				g = len(groups)
				groups[gk] = g
			}
			meta := map[string]any{"conversation": sess.Key, "dia_id": tr.DiaID, "speaker": tr.Speaker}
			items = append(items, locomoItem{group: g, original: true, text: tr.Text, dia: tr.DiaID})
			entries = append(entries, memory.ArchivalEntry{Content: tr.Text, Metadata: meta})
			if !copies {
				continue
			}
			n := rng.Intn(4)
			for _, kind := range rng.Perm(5) {
				if n == 0 {
					break
				}
				v := perturb(tr.Text, kind, rng)
				if v == "" || v == tr.Text {
					continue
				}
				n--
				items = append(items, locomoItem{group: g, text: v, dia: tr.DiaID})
				entries = append(entries, memory.ArchivalEntry{Content: v, Metadata: meta})
			}
		}
	}
	out, err := s.Agent(conv.ID).Archival().InsertBatch(ctx, entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[int64]locomoItem{}
	for i, e := range out {
		if _, ok := byID[e.ID]; !ok {
			byID[e.ID] = items[i]
		}
	}
	return s, byID
}

func loadLoCoMo(t *testing.T) *eval.LoCoMo {
	t.Helper()
	testenv.SkipUnlessLong(t, "consolidation over the LoCoMo development set")
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(t, "LoCoMo dev set not found (set ENGRAM_LOCOMO or place it at ../shared/datasets/locomo-dev)")
	}
	data, err := eval.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestConsolidationDetectsLoCoMoDuplicates: every LoCoMo dev turn stored
// with up to 3 light perturbations (KeepDuplicates, so all are stored);
// one dry-run round finds the pairs of copies of one turn with recall ≥
// 0.95 and precision ≥ 0.99, and never clusters two original turns whose
// texts differ.
func TestConsolidationDetectsLoCoMoDuplicates(t *testing.T) {
	data := loadLoCoMo(t)
	ctx := context.Background()
	var known, found, right int
	for _, conv := range data.Conversations {
		s, items := locomoStore(t, conv, true, &memory.Options{KeepDuplicates: true})
		size := map[int]int{}
		for _, it := range items {
			size[it.group]++
		}
		for _, n := range size {
			known += n * (n - 1) / 2
		}
		rep, err := s.Agent(conv.ID).Archival().Consolidate(ctx, &memory.ConsolidateOptions{DryRun: true, MaxEntries: 100000})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d entries, %d clusters, %d skipped, %v", conv.ID, rep.Examined, len(rep.Clusters), len(rep.Skipped), rep.Elapsed)
		for _, cl := range append(rep.Clusters, rep.Skipped...) {
			src := cl.Merge.Sources
			for i := range src {
				for j := i + 1; j < len(src); j++ {
					a, b := items[src[i]], items[src[j]]
					found++
					if a.group == b.group {
						right++
					} else if len(src) < 8 {
						t.Logf("wrong pair: %q / %q", a.text, b.text)
					}
					if a.original && b.original && a.text != b.text {
						t.Errorf("two original turns clustered: %s %q / %s %q", a.dia, a.text, b.dia, b.text)
					}
				}
			}
		}
	}
	recall, precision := float64(right)/float64(known), float64(right)/float64(max(found, 1))
	t.Logf("near-duplicate pairs: %d known, %d found, %d right: recall %.4f, precision %.4f", known, found, right, recall, precision)
	if recall < 0.95 || precision < 0.99 {
		t.Fatalf("recall %.4f (want ≥ 0.95), precision %.4f (want ≥ 0.99)", recall, precision)
	}
}

// TestConsolidationRecoversRetrieval: evidence recall@10 of archival
// search on the duplicated store, before and after consolidation — exact
// merges applied by the round, the near-exact ones it proposes (the same
// words, in another order) approved by the owner, round after round until
// none is left — against the clean store's.
func TestConsolidationRecoversRetrieval(t *testing.T) {
	data := loadLoCoMo(t)
	ctx := context.Background()
	recall := func(s *memory.Store, agent string, qs []eval.LoCoMoQuestion) (float64, int) {
		var sum float64
		for _, q := range qs {
			res, err := s.Agent(agent).Archival().Search(ctx, q.Question, search.NewOptions().Limit(10))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, r := range res {
				if d, ok := r.Metadata["dia_id"].(string); ok {
					got[d] = true
				}
			}
			hit := 0
			for d := range q.Evidence {
				if got[d] {
					hit++
				}
			}
			sum += float64(hit) / float64(len(q.Evidence))
		}
		return sum, len(qs)
	}
	var clean, before, after float64
	var n int
	for _, conv := range data.Conversations {
		cs, _ := locomoStore(t, conv, false, nil)
		r, k := recall(cs, conv.ID, conv.Questions)
		clean += r
		n += k
		ds, _ := locomoStore(t, conv, true, &memory.Options{KeepDuplicates: true})
		r, _ = recall(ds, conv.ID, conv.Questions)
		before += r
		a := ds.Agent(conv.ID)
		applied, approved := 0, 0
		for round := 0; ; round++ {
			if round == 50 {
				t.Fatalf("%s: consolidation still proposes merges after %d rounds", conv.ID, round)
			}
			rep, err := a.Archival().Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true, MaxEntries: 100000})
			if err != nil {
				t.Fatal(err)
			}
			applied += rep.Applied
			proposed := 0
			for _, cl := range rep.Clusters {
				if cl.ProposalID == 0 || cl.Merge.Kind != memory.MergeNearExact {
					continue // near merges are left to a person's judgement
				}
				proposed++
				// A merge whose source an earlier approval superseded
				// is ErrNotFound and changes nothing.
				if err := a.ApproveProposal(ctx, cl.ProposalID); err != nil && !errors.Is(err, memory.ErrNotFound) {
					t.Fatal(err)
				} else if err == nil {
					approved++
				}
			}
			if proposed == 0 {
				break
			}
		}
		t.Logf("%s: %d merges applied, %d near-exact ones approved", conv.ID, applied, approved)
		r, _ = recall(ds, conv.ID, conv.Questions)
		after += r
	}
	clean, before, after = clean/float64(n), before/float64(n), after/float64(n)
	t.Logf("evidence R@10 over %d questions: clean %.4f, duplicated %.4f, consolidated %.4f", n, clean, before, after)
	// Measured −0.009 (docs/consolidation.md): a merged entry takes its
	// sources' place among their conversation's live entries.
	if d := after - clean; d < -0.01 || d > 0.01 {
		t.Fatalf("R@10 after consolidation %.4f, clean %.4f: differ by %.4f (want within 0.01)", after, clean, d)
	}
}
