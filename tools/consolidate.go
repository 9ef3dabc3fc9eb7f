package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
)

const (
	// maxGroupText is how many characters of each member's text a
	// consolidation group shows.
	maxGroupText = 300
	// maxConsolidateOutput bounds the bytes of archival_consolidate's
	// result: groups past it are counted, not shown.
	maxConsolidateOutput = 16 << 10
)

type archivalConsolidateArgs struct {
	DryRun bool  `json:"dry_run" jsonschema_description:"true: only report the near-duplicate groups found; false: also propose merging each group."`
	After  int64 `json:"after,omitempty" jsonschema_description:"Continue after this entry id: the next value of an earlier call. Omit to start from the beginning."`
}

// clipText is s cut to maxGroupText characters, with a marker saying how
// many were left out.
func clipText(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= maxGroupText {
		return s
	}
	return string([]rune(s)[:maxGroupText]) + fmt.Sprintf("… [truncated: %d more characters]", n-maxGroupText)
}

// archivalConsolidate runs one consolidation round over the agent's own
// archival memory: merges are proposed (never applied) for the agent's
// approver to decide. The result shows each member's text cut to
// maxGroupText characters and at most maxConsolidateOutput bytes of
// groups; the rest are counted in omitted_groups.
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
		Omitted  int     `json:"omitted_groups,omitempty"`
		Note     string  `json:"note"`
	}{Examined: rep.Examined, Next: rep.Next, Groups: []group{}}
	size := 0
	for _, cl := range rep.Clusters {
		g := group{cl.Merge.Kind, cl.Merge.Similarity, cl.Merge.Sources, make([]string, len(cl.Texts)), cl.ProposalID}
		for i, t := range cl.Texts {
			g.Texts[i] = clipText(t)
		}
		b, _ := json.Marshal(g)
		if out.Omitted > 0 || size+len(b) > maxConsolidateOutput {
			out.Omitted++
			continue
		}
		size += len(b) + 1
		out.Groups = append(out.Groups, g)
	}
	out.Note = "Merges are proposals: each takes effect once approved."
	if a.DryRun {
		out.Note = "Dry run: nothing was proposed."
	}
	if out.Omitted > 0 {
		out.Note += fmt.Sprintf(" [truncated: %d more groups not shown (the result is capped at %d bytes)]", out.Omitted, maxConsolidateOutput)
	}
	if out.Next != 0 {
		out.Note += " More entries remain: call again with after set to next."
	}
	b, _ := json.Marshal(out)
	return Result{Content: string(b)}, nil
}
