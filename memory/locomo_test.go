package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// TestLoCoMoEvidenceRecall measures turn-level evidence recall@5/10/25 of
// the default message search on the development half of LoCoMo (five long
// conversations, one message per dialogue turn), overall and per question
// category, and checks sanity floors a broken search would miss.
func TestLoCoMoEvidenceRecall(t *testing.T) {
	testenv.SkipUnlessLong(t, "LoCoMo evidence recall over the whole development set")
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(t, "LoCoMo dev set not found (set ENGRAM_LOCOMO or place it at ../shared/datasets/locomo-dev)")
	}
	data, err := eval.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data.Conversations) == 0 {
		t.Fatalf("%s holds no conversations", path)
	}

	ks := []int{5, 10, 25}
	type acc struct {
		n   int
		sum [3]float64
	}
	var overall acc
	perCat := map[int]*acc{}
	add := func(a *acc, r [3]float64) {
		a.n++
		for i := range r {
			a.sum[i] += r[i]
		}
	}
	ctx := context.Background()
	turns := 0

	for _, conv := range data.Conversations {
		store, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "x.db")), nil)
		if err != nil {
			t.Fatal(err)
		}
		agent := conv.ID
		diaOf := map[int64]string{}
		for _, sess := range conv.Sessions {
			if len(sess.Turns) == 0 {
				continue
			}
			msgs := make([]memory.Message, len(sess.Turns))
			for i, tr := range sess.Turns {
				// Each turn at its session's time, as a conversation's
				// messages are stored when they are said.
				msgs[i] = memory.Message{Role: memory.RoleUser, Content: tr.Text, BatchID: sess.Key, CreatedAt: sess.Time}
			}
			out, err := store.Agent(agent).Messages().AppendMany(ctx, msgs)
			if err != nil {
				t.Fatalf("%s %s: append: %v", agent, sess.Key, err)
			}
			for i, m := range out {
				diaOf[m.ID] = sess.Turns[i].DiaID
			}
			turns += len(sess.Turns)
		}

		for _, q := range conv.Questions {
			want := q.Evidence
			res, err := store.Agent(agent).Search(ctx, q.Question,
				search.NewOptions().ContentTypes(search.Messages).Limit(25))

			if err != nil {
				t.Fatalf("%s: search %q: %v", agent, q.Question, err)
			}
			var r [3]float64
			for i, k := range ks {
				hit := 0
				for j := 0; j < k && j < len(res); j++ {
					if want[diaOf[res[j].ID]] {
						hit++
					}
				}
				r[i] = float64(hit) / float64(len(want))
			}
			add(&overall, r)
			a := perCat[q.Category]
			if a == nil {
				a = &acc{}
				perCat[q.Category] = a
			}
			add(a, r)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}
	}

	names := eval.LoCoMoCategories
	row := func(label string, a *acc) string {
		if a.n == 0 {
			return fmt.Sprintf("%-16s %5d", label, 0)
		}
		return fmt.Sprintf("%-16s %5d  %.3f  %.3f  %.3f", label, a.n,
			a.sum[0]/float64(a.n), a.sum[1]/float64(a.n), a.sum[2]/float64(a.n))
	}
	t.Logf("LoCoMo dev: %d conversations, %d turns; %d malformed evidence ids skipped, %d questions left without valid evidence",
		len(data.Conversations), turns, data.Malformed, data.NoEvidence)
	t.Logf("%-16s %5s  %5s  %5s  %5s", "category", "n", "R@5", "R@10", "R@25")
	cats := make([]int, 0, len(perCat))
	for c := range perCat {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	for _, c := range cats {
		t.Logf("%s", row(fmt.Sprintf("%d %s", c, names[c]), perCat[c]))
	}
	t.Logf("%s", row("all", &overall))

	if overall.n < 900 {
		t.Errorf("only %d questions with valid evidence, want at least 900", overall.n)
	}
	if overall.n > 0 {
		r5, r10, r25 := overall.sum[0]/float64(overall.n), overall.sum[1]/float64(overall.n), overall.sum[2]/float64(overall.n)
		if !(r5 <= r10 && r10 <= r25) {
			t.Errorf("recall not monotone in k: R@5 %.3f, R@10 %.3f, R@25 %.3f", r5, r10, r25)
		}
		// Floors just below what the default reaches on this half with
		// messages indexed with two turns on each side and ranked with
		// their batches (docs/retrieval.md), so that losing the second
		// turn (R@10 .768 with one), the context columns (.63 without
		// them) or the sessions (.798 without) fails here.
		if r10 < 0.80 {
			t.Errorf("overall R@10 = %.3f, want at least 0.80", r10)
		}
		if r25 < 0.85 {
			t.Errorf("overall R@25 = %.3f, want at least 0.85", r25)
		}
	}
}

// TestLoCoMoArchivalEvidenceRecall is TestLoCoMoEvidenceRecall with the
// conversation stored as archival entries, one per turn, through
// InsertArchivalBatch: with each entry's metadata naming its session by
// a string ({"session": "session_3"}), by a number as a transcript's
// import writes it ({"dia_id": "D3:1", "session": 3, "speaker": …,
// "date": …}), and without metadata (each turn alone), the default
// archival search. Entries naming their session, either way, must find
// what messages find.
func TestLoCoMoArchivalEvidenceRecall(t *testing.T) {
	testenv.SkipUnlessLong(t, "LoCoMo evidence recall over the whole development set")
	path := eval.FindLoCoMo()
	if path == "" {
		testenv.Missing(t, "LoCoMo dev set not found (set ENGRAM_LOCOMO or place it at ../shared/datasets/locomo-dev)")
	}
	data, err := eval.LoadLoCoMo(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ks := []int{5, 10, 25}
	type acc struct {
		n int
		r [4][3]float64 // [string session, numeric session, none, none noted as a stream][k]
	}
	perCat := map[int]*acc{0: {}}
	streamStart := time.Date(2023, 5, 8, 13, 0, 0, 0, time.UTC)
	for _, conv := range data.Conversations {
		for v := range 4 {
			store, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "x.db")), nil)
			if err != nil {
				t.Fatal(err)
			}
			diaOf := map[int64]string{}
			for si, sess := range conv.Sessions {
				if len(sess.Turns) == 0 {
					continue
				}
				entries := make([]memory.ArchivalEntry, len(sess.Turns))
				num, _ := strconv.Atoi(strings.TrimPrefix(sess.Key, "session_"))
				for i, tr := range sess.Turns {
					entries[i] = memory.ArchivalEntry{Content: tr.Text}
					switch v {
					case 0:
						entries[i].Metadata = map[string]any{"session": sess.Key}
					case 1:
						entries[i].Metadata = map[string]any{"dia_id": tr.DiaID, "session": num, "speaker": tr.Speaker, "date": sess.Date}
					case 3:
						// Noted as the conversation goes: a turn a minute,
						// sessions a day apart.
						entries[i].CreatedAt = streamStart.Add(time.Duration(si)*24*time.Hour + time.Duration(i)*time.Minute)
					}
				}
				out, err := store.Agent(conv.ID).Archival().InsertBatch(ctx, entries, nil)
				if err != nil {
					t.Fatalf("%s %s: insert: %v", conv.ID, sess.Key, err)
				}
				for i, e := range out {
					diaOf[e.ID] = sess.Turns[i].DiaID
				}
			}
			for _, q := range conv.Questions {
				res, err := store.Agent(conv.ID).Search(ctx, q.Question, search.NewOptions().ContentTypes(search.Archival).Limit(25))
				if err != nil {
					t.Fatalf("%s: search %q: %v", conv.ID, q.Question, err)
				}
				ranked := make([]string, len(res))
				for i, r := range res {
					ranked[i] = diaOf[r.ID]
				}
				for _, c := range []int{0, q.Category} {
					a := perCat[c]
					if a == nil {
						a = &acc{}
						perCat[c] = a
					}
					if v == 0 {
						a.n++
					}
					for j, k := range ks {
						a.r[v][j] += eval.EvidenceRecall(ranked, q.Evidence, k)
					}
				}
			}
			if err := store.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	cats := make([]int, 0, len(perCat))
	for c := range perCat {
		cats = append(cats, c)
	}
	sort.Ints(cats)
	t.Logf("%-16s %5s  %-19s  %-19s  %-19s  %-19s", "category", "n", "string R@5/10/25", "number R@5/10/25", "alone R@5/10/25", "stream R@5/10/25")
	for _, c := range cats {
		a := perCat[c]
		name := "all"
		if c != 0 {
			name = fmt.Sprintf("%d %s", c, eval.LoCoMoCategories[c])
		}
		f := func(v int) string {
			return fmt.Sprintf("%.3f/%.3f/%.3f", a.r[v][0]/float64(a.n), a.r[v][1]/float64(a.n), a.r[v][2]/float64(a.n))
		}
		t.Logf("%-16s %5d  %-19s  %-19s  %-19s  %-19s", name, a.n, f(0), f(1), f(2), f(3))
	}
	all := perCat[0]
	// Entries naming no conversation, noted a minute apart, are found by
	// their neighbours' words as a conversation's are.
	if stream, alone := all.r[3][1]/float64(all.n), all.r[2][1]/float64(all.n); stream < alone+0.05 {
		t.Errorf("entries naming no conversation noted as a stream: R@10 %.3f; want at least .05 over the same entries written at once (%.3f)", stream, alone)
	}
	// Entries naming their session, ranked with it, two entries before
	// and one after: R@10 .787 and .803, R@25 .848 and .864 (one entry
	// each side: .770 and .783). A session as a number is the form the
	// goal is set for.
	for v, floor := range []struct {
		how      string
		r10, r25 float64
	}{{"by a string", 0.78, 0.84}, {"by a number", 0.80, 0.86}} {
		if r10, r25 := all.r[v][1]/float64(all.n), all.r[v][2]/float64(all.n); r10 < floor.r10 || r25 < floor.r25 {
			t.Errorf("entries naming their session %s: R@10 %.3f, R@25 %.3f; want at least %.2f and %.2f", floor.how, r10, r25, floor.r10, floor.r25)
		}
	}
}
