package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/engram-go/engram/memory"
)

type archivalConsolidateArgs struct {
	DryRun bool  `json:"dry_run" jsonschema_description:"true: only report the near-duplicate groups found; false: also propose merging each group."`
	After  int64 `json:"after,omitempty" jsonschema_description:"Continue after this entry id: the next value of an earlier call. Omit to start from the beginning."`
}

// archivalConsolidate runs one consolidation round over the agent's own
// archival memory: merges are proposed (never applied) for the agent's
// approver to decide.
func archivalConsolidate(ctx context.Context, ts *Toolset, a *archivalConsolidateArgs) (Result, error) {
	rep, err := ts.mem.Archival().Consolidate(ctx, &memory.ConsolidateOptions{DryRun: a.DryRun, After: a.After, MaxEntries: 2000})
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return okResult("Your archival memory is empty: nothing to consolidate."), nil
	case err != nil:
		return Result{}, err
	}
	type group struct {
		Kind       string   `json:"kind"`
		Similarity float64  `json:"similarity"`
		Sources    []int64  `json:"sources"`
		Texts      []string `json:"texts"`
		Proposal   int64    `json:"proposal,omitempty"`
	}
	out := struct {
		Examined int     `json:"examined"`
		Next     int64   `json:"next,omitempty"`
		Groups   []group `json:"groups"`
		Note     string  `json:"note"`
	}{Examined: rep.Examined, Next: rep.Next, Groups: []group{}}
	for _, cl := range rep.Clusters {
		out.Groups = append(out.Groups, group{cl.Merge.Kind, cl.Merge.Similarity, cl.Merge.Sources, cl.Texts, cl.ProposalID})
	}
	out.Note = "Merges are proposals: each takes effect once approved."
	if a.DryRun {
		out.Note = "Dry run: nothing was proposed."
	}
	if out.Next != 0 {
		out.Note += " More entries remain: call again with after set to next."
	}
	b, _ := json.Marshal(out)
	return Result{Content: string(b)}, nil
}
