package letta

import (
	"fmt"
	"slices"

	"github.com/engram-go/engram/toolrules"
)

// Letta's tool rule types.
const (
	ruleRunFirst           = "run_first"
	ruleExitLoop           = "exit_loop"
	ruleContinueLoop       = "continue_loop"
	ruleMaxCountPerStep    = "max_count_per_step"
	ruleChild              = "constrain_child_tools"
	ruleParentLast         = "parent_last_tool"
	ruleConditional        = "conditional"
	ruleRequiredBeforeExit = "required_before_exit"
	ruleRequiresApproval   = "requires_approval"
)

// ruleMapping is how one Letta rule became engram rules: the rules, and a
// note when they are an approximation. ok is false when no engram rule
// holds it (it is kept as metadata).
type ruleMapping struct {
	rules []toolrules.Rule
	note  string
	ok    bool
}

// mapRule maps one Letta tool rule onto engram's toolrules:
//
//	run_first              → StartConstraint
//	exit_loop              → ExitLoop
//	continue_loop          → ContinueLoop
//	max_count_per_step     → MaxCalls (per turn)
//	required_before_exit   → RequiredBeforeExit
//	requires_approval      → RequiresConsent
//	constrain_child_tools  → RequiresFollowing, when it names one child
//	parent_last_tool       → RequiresPrior(child, parent) for each child
//
// A child rule with several children ("the next call is one of these") and
// a conditional rule (the next tool depends on the output) have no engram
// counterpart; neither has an unknown type.
func mapRule(r ToolRule) ruleMapping {
	if r.ToolName == "" {
		return ruleMapping{note: "the rule names no tool"}
	}
	switch r.Type {
	case ruleRunFirst:
		return ruleMapping{rules: []toolrules.Rule{toolrules.StartConstraint(r.ToolName)}, ok: true}
	case ruleExitLoop:
		return ruleMapping{rules: []toolrules.Rule{toolrules.ExitLoop(r.ToolName)}, ok: true}
	case ruleContinueLoop:
		return ruleMapping{rules: []toolrules.Rule{toolrules.ContinueLoop(r.ToolName)}, ok: true}
	case ruleRequiredBeforeExit:
		return ruleMapping{rules: []toolrules.Rule{toolrules.RequiredBeforeExit(r.ToolName)}, ok: true}
	case ruleRequiresApproval:
		return ruleMapping{rules: []toolrules.Rule{toolrules.RequiresConsent(r.ToolName)}, ok: true}
	case ruleMaxCountPerStep:
		if r.MaxCountLimit == nil || *r.MaxCountLimit < 0 {
			return ruleMapping{note: "max_count_per_step without a max_count_limit"}
		}
		return ruleMapping{rules: []toolrules.Rule{toolrules.MaxCalls(r.ToolName, *r.MaxCountLimit)}, ok: true,
			note: "Letta counts per step, engram per turn"}
	case ruleChild:
		if len(r.Children) != 1 {
			return ruleMapping{note: fmt.Sprintf("the next call must be one of %d tools: engram's RequiresFollowing requires all of them", len(r.Children))}
		}
		return ruleMapping{rules: []toolrules.Rule{toolrules.RequiresFollowing(r.ToolName, r.Children[0])}, ok: true,
			note: "Letta requires the child as the next call, engram before the turn ends"}
	case ruleParentLast:
		if len(r.Children) == 0 {
			return ruleMapping{note: "parent_last_tool without children"}
		}
		var out []toolrules.Rule
		for _, c := range r.Children {
			out = append(out, toolrules.RequiresPrior(c, r.ToolName))
		}
		return ruleMapping{rules: out, ok: true, note: "Letta requires the parent as the last call, engram earlier in the turn"}
	case ruleConditional:
		return ruleMapping{note: "the next tool depends on the tool's output: engram has no output-dependent rule"}
	}
	return ruleMapping{note: fmt.Sprintf("rule type %q is not one engram knows", r.Type)}
}

// lettaRules maps engram rules back onto Letta's (the inverse of mapRule);
// rules with no Letta counterpart are returned in left with why.
func lettaRules(rules []toolrules.Rule) (out []ToolRule, left []toolrules.Rule, why []string) {
	parents := map[string]int{} // parent tool → index in out of its parent_last_tool rule
	for _, r := range rules {
		switch r.Kind {
		case toolrules.KindStartConstraint:
			out = append(out, ToolRule{Type: ruleRunFirst, ToolName: r.Tool})
		case toolrules.KindExitLoop:
			out = append(out, ToolRule{Type: ruleExitLoop, ToolName: r.Tool})
		case toolrules.KindContinueLoop:
			out = append(out, ToolRule{Type: ruleContinueLoop, ToolName: r.Tool})
		case toolrules.KindRequiredBeforeExit:
			out = append(out, ToolRule{Type: ruleRequiredBeforeExit, ToolName: r.Tool})
		case toolrules.KindRequiresConsent:
			out = append(out, ToolRule{Type: ruleRequiresApproval, ToolName: r.Tool})
		case toolrules.KindMaxCalls:
			n := r.N
			out = append(out, ToolRule{Type: ruleMaxCountPerStep, ToolName: r.Tool, MaxCountLimit: &n})
		case toolrules.KindRequiresFollowing:
			if len(r.Tools) != 1 {
				left, why = append(left, r), append(why, "Letta's child rule allows one of its children next; this rule requires all of them")
				continue
			}
			out = append(out, ToolRule{Type: ruleChild, ToolName: r.Tool, Children: slices.Clone(r.Tools)})
		case toolrules.KindRequiresPrior:
			if len(r.Tools) != 1 {
				left, why = append(left, r), append(why, "Letta's parent rule names one parent; this rule requires several prior tools")
				continue
			}
			p := r.Tools[0]
			if i, ok := parents[p]; ok {
				out[i].Children = append(out[i].Children, r.Tool)
				continue
			}
			parents[p] = len(out)
			out = append(out, ToolRule{Type: ruleParentLast, ToolName: p, Children: []string{r.Tool}})
		default:
			left, why = append(left, r), append(why, fmt.Sprintf("Letta has no %s rule", r.Kind))
		}
	}
	return out, left, why
}
