package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/memory"
)

// proposalJSON is a proposal as "proposals list --json" prints it.
type proposalJSON struct {
	memory.Proposal
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// DiffError says why the edit would not apply now.
	DiffError string `json:"diff_error,omitempty"`
	// Sources are a pending merge's source entries (with --diff).
	Sources []memory.ArchivalEntry `json:"sources,omitempty"`
}

func cmdProposalsList(fs *flag.FlagSet) runFunc {
	var owner string
	var all, diff bool
	fs.StringVar(&owner, "agent", "", "only proposals on this agent's blocks and archival memory (default: every agent)")
	fs.BoolVar(&all, "all", false, "include decided proposals (approved, rejected, withdrawn)")
	fs.BoolVar(&diff, "diff", false, "show what each pending proposal would change")
	return func(ctx context.Context, a *app, _ []string) error {
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		agents := []string{owner}
		if owner == "" {
			if agents, err = ui.Agents(ctx, s); err != nil {
				return err
			}
		}
		ps, err := ui.Proposals(ctx, s, agents, !all)
		if err != nil {
			return err
		}
		out := make([]proposalJSON, 0, len(ps))
		for _, p := range ps {
			pj := proposalJSON{Proposal: p}
			if diff && p.Status == "pending" && p.Merge != nil {
				for _, id := range p.Merge.Sources {
					e, err := s.Agent(p.Owner).Archival().Get(ctx, id)
					if err != nil {
						pj.DiffError = err.Error()
						break
					}
					pj.Sources = append(pj.Sources, e)
				}
			} else if diff && p.Status == "pending" {
				if pj.Before, pj.After, err = ui.ProposalDiff(ctx, s, p); err != nil {
					pj.DiffError = err.Error()
				}
			}
			out = append(out, pj)
		}
		return a.output(snakeJSON(out), func(w io.Writer) {
			if len(out) == 0 {
				if all {
					fmt.Fprintln(w, "no proposals")
				} else {
					fmt.Fprintln(w, "no pending proposals")
				}
				return
			}
			var rows [][]string
			for _, p := range out {
				on, edit := p.Owner+"/"+p.Label, editSummary(p.Edit)
				if p.Merge != nil {
					on, edit = p.Owner+" (archival)", fmt.Sprintf("%s %d entries (%s)", memory.OpMergeArchival, len(p.Merge.Sources), p.Merge.Kind)
				}
				rows = append(rows, []string{strconv.FormatInt(p.ID, 10), p.Status, on, p.Proposer,
					edit, p.CreatedAt.Local().Format(time.DateTime), oneLine(p.Reason, 50)})
			}
			a.table("ID\tSTATUS\tBLOCK\tPROPOSER\tEDIT\tCREATED\tREASON", rows)
			if diff {
				for _, p := range out {
					if p.Status != "pending" {
						continue
					}
					if p.Merge != nil {
						by := ""
						if p.Merge.Model != "" {
							by = ", model " + p.Merge.Model
						}
						fmt.Fprintf(w, "\n#%d %s (archival), similarity %.2f%s:\n", p.ID, p.Owner, p.Merge.Similarity, by)
					} else {
						fmt.Fprintf(w, "\n#%d %s/%s:\n", p.ID, p.Owner, p.Label)
					}
					if p.DiffError != "" {
						fmt.Fprintf(w, "  (%s)\n", p.DiffError)
						continue
					}
					if p.Merge != nil {
						for _, e := range p.Sources {
							fmt.Fprintf(w, "  - #%d %s\n", e.ID, oneLine(e.Content, 200))
						}
						fmt.Fprintf(w, "  + %s\n", oneLine(p.Merge.Content, 200))
						continue
					}
					fmt.Fprint(w, lineDiff(p.Before, p.After))
				}
			}
		})
	}
}

func editSummary(e memory.Edit) string {
	s := string(e.Op)
	if e.Section != "" {
		s += " " + e.Section
	}
	if e.Field != "" {
		s += "." + e.Field
	}
	return s
}

// lineDiff prints the lines that differ between before and after, "-"
// and "+", after the common leading and trailing lines.
func lineDiff(before, after string) string {
	a, b := strings.Split(before, "\n"), strings.Split(after, "\n")
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var sb strings.Builder
	for _, l := range a[pre : len(a)-suf] {
		sb.WriteString("  - " + l + "\n")
	}
	for _, l := range b[pre : len(b)-suf] {
		sb.WriteString("  + " + l + "\n")
	}
	if sb.Len() == 0 {
		sb.WriteString("  (no change to the rendered content)\n")
	}
	return sb.String()
}

// person is the approver name for a CLI decision: "human:" and --as, or
// the default of ui.PersonName.
func person(as string) string {
	return memory.HumanApprover + ui.PersonName(as)
}

func cmdProposalsDecide(approve bool) func(fs *flag.FlagSet) runFunc {
	name := "proposals reject"
	if approve {
		name = "proposals approve"
	}
	return func(fs *flag.FlagSet) runFunc {
		var as, reason string
		fs.StringVar(&as, "as", "", `your name, recorded as "human:NAME" (default $USER)`)
		if !approve {
			fs.StringVar(&reason, "reason", "", "why the edit is rejected (the proposer can read it)")
		}
		return func(ctx context.Context, a *app, pos []string) error {
			if len(pos) != 1 {
				return usageErrorf("%s: want one proposal ID, got %d argument(s)", name, len(pos))
			}
			id, err := strconv.ParseInt(strings.TrimPrefix(pos[0], "#"), 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a proposal ID", name, pos[0])
			}
			s, err := a.open(ctx)
			if err != nil {
				return err
			}
			defer a.close()
			who := person(as)
			status := "rejected"
			if approve {
				status = "approved"
				err = s.Agent(who).ApproveProposal(ctx, id)
			} else {
				err = s.Agent(who).RejectProposal(ctx, id, strings.TrimSpace(reason))
			}
			if err != nil {
				return err
			}
			return a.output(map[string]any{"id": id, "status": status, "by": who}, func(w io.Writer) {
				fmt.Fprintf(w, "proposal %d %s by %s\n", id, status, who)
			})
		}
	}
}
