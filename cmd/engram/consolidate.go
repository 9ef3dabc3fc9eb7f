package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// cmdConsolidate runs consolidation rounds over an agent's archival
// memory (memory.Store.Consolidate) until the last entry, or --rounds.
func cmdConsolidate(fs *flag.FlagSet) runFunc {
	var agent string
	var o memory.ConsolidateOptions
	var llm bool
	var rounds int
	fs.StringVar(&agent, "agent", "", "the agent whose archival memory to consolidate (required)")
	fs.BoolVar(&o.DryRun, "dry-run", false, "report the clusters; propose and apply nothing (the examined entries' signatures are recorded)")
	fs.BoolVar(&o.ApplyExact, "apply-exact", false, "apply exact merges (same normalised text) at once instead of proposing them; near-exact ones are still proposed")
	fs.Int64Var(&o.After, "after", 0, "resume after this entry id (a report's next)")
	fs.BoolVar(&o.Resume, "resume", false, "start past the last entry a round examined (recorded in the store); --after is then ignored")
	fs.IntVar(&o.MaxEntries, "max-entries", 0, "entries examined per round (default 10000)")
	fs.IntVar(&rounds, "rounds", 0, "stop after this many rounds (default: until the last entry)")
	fs.Float64Var(&o.Threshold, "threshold", 0, "Jaccard similarity of near-duplicates (default 0.8)")
	fs.BoolVar(&llm, "llm", false, "ask the OpenAI-compatible model configured as the summarizer (ENGRAM_SUMMARY_BASE_URL, ENGRAM_SUMMARY_MODEL, ENGRAM_SUMMARY_API_KEY or OPENAI_*) about near clusters and full blocks")
	return func(ctx context.Context, a *app, _ []string) error {
		if agent == "" {
			return usageErrorf("consolidate: --agent is required")
		}
		if llm {
			m, err := compress.NewOpenAIConsolidator(nil)
			if err != nil {
				return err
			}
			o.Model = m
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		var reps []*memory.ConsolidateReport
		for n := 0; rounds == 0 || n < rounds; n++ {
			rep, err := s.Agent(agent).Archival().Consolidate(ctx, &o)
			if rep != nil && (err == nil || rep.Examined > 0) {
				reps = append(reps, rep)
			}
			if err != nil {
				return err
			}
			if rep.Next == 0 {
				break
			}
			o.After = rep.Next
		}
		return a.output(reps, func(w io.Writer) { printConsolidation(w, reps, o.DryRun) })
	}
}

func printConsolidation(w io.Writer, reps []*memory.ConsolidateReport, dry bool) {
	var examined, clusters, proposals, applied, skipped int
	for _, r := range reps {
		examined += r.Examined
		clusters += len(r.Clusters)
		proposals += len(r.Proposals)
		applied += r.Applied
		skipped += len(r.Skipped)
		for _, cl := range r.Clusters {
			what := "proposal " + fmt.Sprint(cl.ProposalID)
			switch {
			case dry:
				what = "found"
			case cl.MergedID != 0:
				what = fmt.Sprintf("merged into %d", cl.MergedID)
			case cl.ProposalID == 0:
				what = "not proposed: " + cl.Reason
			}
			fmt.Fprintf(w, "%-10s sim %.2f  %v  %s\n", cl.Merge.Kind, cl.Merge.Similarity, cl.Merge.Sources, what)
			for i, t := range cl.Texts {
				fmt.Fprintf(w, "    %d: %s\n", cl.Merge.Sources[i], clip(t, 100))
			}
		}
		for _, e := range r.ModelErrors {
			fmt.Fprintf(w, "model: %s\n", e)
		}
	}
	fmt.Fprintf(w, "%d entries examined in %d rounds: %d clusters, %d proposed, %d merged, %d too large to merge\n",
		examined, len(reps), clusters, proposals, applied, skipped)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
