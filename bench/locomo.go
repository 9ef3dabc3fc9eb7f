package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// benchLoCoMo: conversational memory on LoCoMo's development half
// (../shared/datasets/locomo-dev): turn-level evidence recall@5/10/25 per
// question category, engram's default message search (each session one
// batch of AppendMessages, every turn one message) against bleve BM25 over
// one document per turn (English analyzer). -smoke measures the first
// conversation only. Absent data is a skipped row, an error under CI=true.
func benchLoCoMo(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "locomo"
	path := eval.FindLoCoMo()
	if path == "" {
		if os.Getenv("CI") == "true" {
			return errors.New("LoCoMo dev set not found (ENGRAM_LOCOMO or ../shared/datasets/locomo-dev): CI=true requires it")
		}
		r.add(row{Section: sec, Comparison: "LoCoMo evidence recall", Note: "skipped: LoCoMo dev set not found (set ENGRAM_LOCOMO)"})
		return nil
	}
	l, err := eval.LoadLoCoMo(path)
	if err != nil {
		return err
	}
	convs := l.Conversations
	if cfg.name == "smoke" {
		convs = convs[:1]
	}
	ks := []int{5, 10, 25}
	type acc struct {
		n              int
		engram, bleveR [3]float64
	}
	perCat := map[int]*acc{0: {}} // 0: all
	turns := 0
	for ci, c := range convs {
		st, err := memory.Open(ctx, filepath.Join(tmp, fmt.Sprintf("locomo-%d.db", ci)), nil)
		if err != nil {
			return err
		}
		bidx, bdir, err := locomoBleve(tmp, ci)
		if err != nil {
			st.Close()
			return err
		}
		err = func() error {
			defer func() { bidx.Close(); os.RemoveAll(bdir) }()
			defer st.Close()
			dia := map[int64]string{}
			batch := bidx.NewBatch()
			for _, s := range c.Sessions {
				msgs := make([]memory.Message, len(s.Turns))
				for i, t := range s.Turns {
					msgs[i] = memory.Message{Role: memory.RoleUser, Content: t.Text, BatchID: s.Key, CreatedAt: s.Time}
					if err := batch.Index(t.DiaID, map[string]any{"text": t.Text}); err != nil {
						return fmt.Errorf("bleve: %w", err)
					}
				}
				out, err := st.Agent(c.ID).Messages().AppendMany(ctx, msgs)
				if err != nil {
					return fmt.Errorf("locomo %s %s: %w", c.ID, s.Key, err)
				}
				for i, m := range out {
					dia[m.ID] = s.Turns[i].DiaID
				}
				turns += len(s.Turns)
			}
			if err := bidx.Batch(batch); err != nil {
				return fmt.Errorf("bleve: %w", err)
			}
			for _, q := range c.Questions {
				res, err := st.Agent(c.ID).Search(ctx, q.Question, search.NewOptions().ContentTypes(search.Messages).Limit(25))
				if err != nil {
					return fmt.Errorf("locomo %s: search %q: %w", c.ID, q.Question, err)
				}
				eids := make([]string, len(res))
				for i, x := range res {
					eids[i] = dia[x.ID]
				}
				mq := bleve.NewMatchQuery(q.Question)
				mq.SetField("text")
				bres, err := bidx.SearchInContext(ctx, bleve.NewSearchRequestOptions(mq, 25, 0, false))
				if err != nil {
					return fmt.Errorf("bleve: %w", err)
				}
				bids := make([]string, len(bres.Hits))
				for i, h := range bres.Hits {
					bids[i] = h.ID
				}
				for _, cat := range []int{0, q.Category} {
					a := perCat[cat]
					if a == nil {
						a = &acc{}
						perCat[cat] = a
					}
					a.n++
					for i, k := range ks {
						a.engram[i] += eval.EvidenceRecall(eids, q.Evidence, k)
						a.bleveR[i] += eval.EvidenceRecall(bids, q.Evidence, k)
					}
				}
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	note := fmt.Sprintf("%d conversations, %d turns, %d questions (%d malformed evidence ids skipped); default options, messages only",
		len(convs), turns, perCat[0].n, l.Malformed)
	for _, cat := range []int{0, 1, 2, 3, 4, 5} {
		a := perCat[cat]
		if a == nil || a.n == 0 {
			continue
		}
		name := "all"
		if cat != 0 {
			name = fmt.Sprintf("%s (%d)", eval.LoCoMoCategories[cat], a.n)
		}
		for i, k := range ks {
			n := ""
			if cat == 0 && i == 0 {
				n = note
			}
			r.compare(sec, fmt.Sprintf("LoCoMo R@%d, %s, vs bleve BM25", k, name),
				a.engram[i]/float64(a.n), a.bleveR[i]/float64(a.n), unitScore, "higher", n)
		}
	}
	return nil
}

// locomoBleve makes an empty bleve index of one conversation's turns: one
// static English-analyzed text field, BM25 (as the Cranfield rows).
func locomoBleve(tmp string, n int) (bleve.Index, string, error) {
	textField := mapping.NewTextFieldMapping()
	textField.Analyzer = "en"
	textField.IncludeInAll = false
	textField.DocValues = false
	textField.Store = false
	docMapping := bleve.NewDocumentStaticMapping()
	docMapping.AddFieldMappingsAt("text", textField)
	im := bleve.NewIndexMapping()
	im.DefaultMapping = docMapping
	im.DefaultAnalyzer = "en"
	im.DefaultField = "text"
	im.ScoringModel = "bm25"
	dir := filepath.Join(tmp, fmt.Sprintf("locomo-bleve-%d", n))
	idx, err := bleve.New(dir, im)
	if err != nil {
		return nil, "", fmt.Errorf("bleve: %w", err)
	}
	return idx, dir, nil
}
