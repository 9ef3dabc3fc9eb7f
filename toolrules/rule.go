package toolrules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind names a rule type; it is the JSON discriminator of a Rule.
type Kind string

// The rule kinds, in the order Render lists them.
const (
	KindStartConstraint    Kind = "start_constraint"
	KindExitLoop           Kind = "exit_loop"
	KindContinueLoop       Kind = "continue_loop"
	KindMaxCalls           Kind = "max_calls"
	KindRequiresPrior      Kind = "requires_prior"
	KindRequiresFollowing  Kind = "requires_following"
	KindRequiredBeforeExit Kind = "required_before_exit"
	KindExclusiveGroup     Kind = "exclusive_group"
	KindCooldown           Kind = "cooldown"
	KindRequiresConsent    Kind = "requires_consent"
)

// rank is the fixed position of a kind in rendered output and in the order in
// which the Engine checks rules; unknown kinds sort last.
func (k Kind) rank() int {
	switch k {
	case KindStartConstraint:
		return 0
	case KindExitLoop:
		return 1
	case KindContinueLoop:
		return 2
	case KindMaxCalls:
		return 3
	case KindRequiresPrior:
		return 4
	case KindRequiresFollowing:
		return 5
	case KindRequiredBeforeExit:
		return 6
	case KindExclusiveGroup:
		return 7
	case KindCooldown:
		return 8
	case KindRequiresConsent:
		return 9
	}
	return 10
}

func (k Kind) known() bool { return k.rank() < 10 }

// Rule is one tool rule. Which fields matter depends on Kind:
//
//   - Tool: the tool the rule is about (every kind but ExclusiveGroup, where
//     it is optional and counts as one more member).
//   - Tools: the prerequisites (RequiresPrior), the tools owed afterwards
//     (RequiresFollowing) or the group members (ExclusiveGroup).
//   - N: the call limit (MaxCalls).
//   - Duration: the minimum time between two calls (Cooldown).
//
// Rules are plain values; build them with the constructors (ExitLoop,
// MaxCalls, ...). They round-trip through JSON as
// {"kind":"max_calls","tool":"api_request","n":3}, with Duration written as a
// Go duration string ({"kind":"cooldown","tool":"web","duration":"30s"}).
type Rule struct {
	Kind     Kind
	Tool     string
	Tools    []string
	N        int
	Duration time.Duration
}

// StartConstraint: tool must be the first call of every turn.
func StartConstraint(tool string) Rule { return Rule{Kind: KindStartConstraint, Tool: tool} }

// ExitLoop: the turn ends after tool is called; no further call is allowed
// in the turn.
func ExitLoop(tool string) Rule { return Rule{Kind: KindExitLoop, Tool: tool} }

// ContinueLoop: the turn goes on after tool is called (Engine.Ends reports
// false); it may not be combined with ExitLoop on the same tool.
func ContinueLoop(tool string) Rule { return Rule{Kind: KindContinueLoop, Tool: tool} }

// MaxCalls: tool may be called at most n times per turn.
func MaxCalls(tool string, n int) Rule { return Rule{Kind: KindMaxCalls, Tool: tool, N: n} }

// RequiresPrior: tool may be called only after every one of prior has been
// called in the turn.
func RequiresPrior(tool string, prior ...string) Rule {
	return Rule{Kind: KindRequiresPrior, Tool: tool, Tools: slices.Clone(prior)}
}

// RequiresFollowing: after each call of tool, every one of following must be
// called (again) before the turn may end.
func RequiresFollowing(tool string, following ...string) Rule {
	return Rule{Kind: KindRequiresFollowing, Tool: tool, Tools: slices.Clone(following)}
}

// RequiredBeforeExit: tool must be called in the turn before the turn may end.
func RequiredBeforeExit(tool string) Rule { return Rule{Kind: KindRequiredBeforeExit, Tool: tool} }

// Cooldown: at least d must pass between two calls of tool. Unlike the other
// rules it spans turns: it is measured on the Engine's clock.
func Cooldown(tool string, d time.Duration) Rule {
	return Rule{Kind: KindCooldown, Tool: tool, Duration: d}
}

// ExclusiveGroup: at most one of tools may be used in a turn (that one may be
// called repeatedly, subject to other rules).
func ExclusiveGroup(tools ...string) Rule {
	return Rule{Kind: KindExclusiveGroup, Tools: slices.Clone(tools)}
}

// RequiresConsent: every call of tool must be approved by the Engine's
// Approver; without an Approver it is denied.
func RequiresConsent(tool string) Rule { return Rule{Kind: KindRequiresConsent, Tool: tool} }

// String returns the rule's sentence as Render writes it (without the list
// marker). Rules of unknown kind return "".
func (r Rule) String() string {
	r = r.normalize()
	t := codeSpan(r.Tool)
	switch r.Kind {
	case KindStartConstraint:
		return "Call " + t + " first before any other tools"
	case KindExitLoop:
		return "The conversation will end after calling " + t
	case KindContinueLoop:
		return "The conversation will be continued after calling " + t
	case KindMaxCalls:
		if r.N == 0 {
			return "Never call " + t
		}
		return "Call " + t + " at most " + times(r.N)
	case KindRequiresPrior:
		return "Call " + t + " only after calling " + codeList(r.Tools, "and")
	case KindRequiresFollowing:
		return "After calling " + t + ", call " + codeList(r.Tools, "and") + " before the conversation ends"
	case KindRequiredBeforeExit:
		return "Call " + t + " before the conversation ends"
	case KindExclusiveGroup:
		return "Use only one of " + codeList(r.members(), "or")
	case KindCooldown:
		return "Wait at least " + formatDuration(r.Duration) + " between calls to " + t
	case KindRequiresConsent:
		return "Each call to " + t + " requires approval"
	}
	return ""
}

// members is the set of tools of an ExclusiveGroup: Tool (if set) then Tools.
func (r Rule) members() []string {
	if r.Tool == "" {
		return r.Tools
	}
	return append([]string{r.Tool}, r.Tools...)
}

// subject is the tool a rule sorts under: Tool, or a group's first member.
func (r Rule) subject() string {
	if r.Tool != "" {
		return r.Tool
	}
	if len(r.Tools) > 0 {
		return r.Tools[0]
	}
	return ""
}

// normalize returns a copy whose Tools have duplicates removed (first
// occurrence kept) and, for a group, no repeat of Tool.
func (r Rule) normalize() Rule {
	if len(r.Tools) == 0 {
		r.Tools = nil
		return r
	}
	seen := make(map[string]bool, len(r.Tools)+1)
	if r.Kind == KindExclusiveGroup && r.Tool != "" {
		seen[r.Tool] = true
	}
	out := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	r.Tools = out
	return r
}

// key identifies a normalized rule for de-duplication.
func (r Rule) key() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%d\x00%d", r.Kind, r.Tool, strings.Join(r.Tools, "\x00"), r.N, r.Duration)
}

// canonical normalizes rules, sorts them by kind rank, then subject tool,
// ties in input order, and drops exact duplicates.
func canonical(rules []Rule) []Rule {
	out := make([]Rule, 0, len(rules))
	seen := make(map[string]bool, len(rules))
	for _, r := range rules {
		r = r.normalize()
		k := r.key()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b Rule) int {
		if c := a.Kind.rank() - b.Kind.rank(); c != 0 {
			return c
		}
		return strings.Compare(a.subject(), b.subject())
	})
	return out
}

type ruleJSON struct {
	Kind     Kind            `json:"kind"`
	Tool     string          `json:"tool,omitempty"`
	Tools    []string        `json:"tools,omitempty"`
	N        *int            `json:"n,omitempty"`
	Duration json.RawMessage `json:"duration,omitempty"`
}

// MarshalJSON writes the rule with a "kind" discriminator; "n" is always
// present for max_calls, and Duration is a Go duration string.
func (r Rule) MarshalJSON() ([]byte, error) {
	j := ruleJSON{Kind: r.Kind, Tool: r.Tool, Tools: r.Tools}
	if r.Kind == KindMaxCalls || r.N != 0 {
		n := r.N
		j.N = &n
	}
	if r.Duration != 0 {
		d, err := json.Marshal(r.Duration.String())
		if err != nil {
			return nil, err
		}
		j.Duration = d
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes. Duration may also be a number
// of nanoseconds. An unknown kind is an error wrapping ErrInvalidRules.
func (r *Rule) UnmarshalJSON(data []byte) error {
	var j ruleJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	if !j.Kind.known() {
		return fmt.Errorf("%w: unknown rule kind %q", ErrInvalidRules, j.Kind)
	}
	out := Rule{Kind: j.Kind, Tool: j.Tool, Tools: j.Tools}
	if j.N != nil {
		out.N = *j.N
	}
	if d := bytes.TrimSpace(j.Duration); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if d[0] == '"' {
			var s string
			if err := json.Unmarshal(d, &s); err != nil {
				return err
			}
			v, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("toolrules: rule %s: %w", j.Kind, err)
			}
			out.Duration = v
		} else {
			var ns int64
			if err := json.Unmarshal(d, &ns); err != nil {
				return fmt.Errorf("toolrules: rule %s: duration: %w", j.Kind, err)
			}
			out.Duration = time.Duration(ns)
		}
	}
	*r = out
	return nil
}
