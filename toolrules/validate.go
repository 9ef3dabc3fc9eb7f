package toolrules

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Validate reports the problems of a rule set before it is used, in a
// deterministic order; nil means none. It finds:
//
//   - invalid arguments (ProblemInvalid): unknown kind, empty tool name,
//     negative MaxCalls, non-positive Cooldown, RequiresPrior or
//     RequiresFollowing without tools, ExclusiveGroup of fewer than two tools;
//   - contradictions (ProblemConflict): StartConstraint on two different
//     tools, ExitLoop and ContinueLoop on one tool;
//   - unreachable tools (ProblemUnreachable): MaxCalls 0; a RequiresPrior
//     cycle (including a tool requiring itself); a prerequisite that can never
//     be called or that ends the turn (ExitLoop); prerequisites, or a
//     prerequisite and the StartConstraint tool, in one ExclusiveGroup; a
//     StartConstraint tool that requires prior tools; every other tool when
//     the StartConstraint tool ends the turn; an ExitLoop tool that requires
//     following tools;
//   - a turn that can never end (ProblemCannotEnd): a RequiredBeforeExit
//     tool that can never be called, or that (with its prerequisites and the
//     tools owed after it) conflicts with the other required tools; a
//     RequiresFollowing cycle, which never settles; a tool whose call would
//     leave the turn unable to end (it owes a tool that can never be called,
//     or its obligations need two tools of one ExclusiveGroup, two tools that
//     end the turn, or a second call of a tool limited to one call).
//
// Validate is conservative: it reports only rule sets that certainly fail,
// not every run-time dead end (the Engine also refuses, at run time, a call
// whose RequiresFollowing obligation could no longer be met).
func Validate(rules []Rule) []Problem {
	var probs []Problem
	var valid []Rule
	for _, r := range canonical(rules) {
		if p, ok := checkArgs(r); !ok {
			probs = append(probs, p)
			continue
		}
		valid = append(valid, r)
	}
	a := newAnalysis(valid)
	a.run()
	return append(probs, a.probs...)
}

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// checkArgs checks one normalized rule on its own.
func checkArgs(r Rule) (Problem, bool) {
	bad := func(tool, format string, args ...any) (Problem, bool) {
		return Problem{Kind: ProblemInvalid, Rule: r, Tool: tool, Reason: fmt.Sprintf(format, args...)}, false
	}
	if !r.Kind.known() {
		return bad(r.subject(), "unknown rule kind %q", r.Kind)
	}
	if r.Kind == KindExclusiveGroup {
		ms := r.members()
		for _, m := range ms {
			if blank(m) {
				return bad(m, "empty tool name in exclusive group")
			}
		}
		if len(ms) < 2 {
			return bad(r.subject(), "an exclusive group needs at least two different tools")
		}
		return Problem{}, true
	}
	if blank(r.Tool) {
		return bad(r.Tool, "empty tool name")
	}
	switch r.Kind {
	case KindRequiresPrior, KindRequiresFollowing:
		if len(r.Tools) == 0 {
			return bad(r.Tool, "%s needs at least one tool", r.Kind)
		}
		for _, t := range r.Tools {
			if blank(t) {
				return bad(r.Tool, "empty tool name in %s", r.Kind)
			}
		}
	case KindMaxCalls:
		if r.N < 0 {
			return bad(r.Tool, "negative call limit %d", r.N)
		}
	case KindCooldown:
		if r.Duration <= 0 {
			return bad(r.Tool, "cooldown must be positive, got %s", r.Duration)
		}
	}
	return Problem{}, true
}

// analysis holds the rule graph of a set of valid, canonical rules.
type analysis struct {
	rules      []Rule
	tools      []string // every tool mentioned, sorted
	start      string   // the StartConstraint tool, "" if none or conflicting
	startRule  Rule
	exit       map[string]bool // ExitLoop without ContinueLoop
	maxCalls   map[string]int  // smallest MaxCalls limit
	maxRule    map[string]Rule
	prior      map[string][]string // sorted, unique
	follow     map[string][]string // sorted, unique
	groups     []Rule
	beforeExit []string // RequiredBeforeExit tools, sorted
	unreach    map[string]bool
	deadEnd    map[string]bool // in a RequiresFollowing cycle
	probs      []Problem
}

func newAnalysis(rules []Rule) *analysis {
	a := &analysis{
		rules:    rules,
		exit:     map[string]bool{},
		maxCalls: map[string]int{},
		maxRule:  map[string]Rule{},
		prior:    map[string][]string{},
		follow:   map[string][]string{},
		unreach:  map[string]bool{},
		deadEnd:  map[string]bool{},
	}
	tools := map[string]bool{}
	for _, r := range rules {
		for _, t := range r.members() {
			tools[t] = true
		}
		switch r.Kind {
		case KindExitLoop:
			a.exit[r.Tool] = true
		case KindMaxCalls:
			if n, ok := a.maxCalls[r.Tool]; !ok || r.N < n {
				a.maxCalls[r.Tool] = r.N
				a.maxRule[r.Tool] = r
			}
		case KindRequiresPrior:
			a.prior[r.Tool] = append(a.prior[r.Tool], r.Tools...)
		case KindRequiresFollowing:
			a.follow[r.Tool] = append(a.follow[r.Tool], r.Tools...)
		case KindExclusiveGroup:
			a.groups = append(a.groups, r)
		case KindRequiredBeforeExit:
			a.beforeExit = append(a.beforeExit, r.Tool)
		}
	}
	for _, m := range []map[string][]string{a.prior, a.follow} {
		for t, ts := range m {
			slices.Sort(ts)
			m[t] = slices.Compact(ts)
		}
	}
	slices.Sort(a.beforeExit)
	a.beforeExit = slices.Compact(a.beforeExit)
	a.tools = slices.Sorted(maps.Keys(tools))
	return a
}

func (a *analysis) add(kind ProblemKind, r Rule, tool, format string, args ...any) {
	a.probs = append(a.probs, Problem{Kind: kind, Rule: r, Tool: tool, Reason: fmt.Sprintf(format, args...)})
}

// ruleFor returns the first rule of kind about tool whose Tools hold other
// (any, if other is "").
func (a *analysis) ruleFor(kind Kind, tool, other string) Rule {
	for _, r := range a.rules {
		if r.Kind == kind && r.Tool == tool && (other == "" || slices.Contains(r.Tools, other)) {
			return r
		}
	}
	return Rule{}
}

// ruleAbout returns the first rule that mentions tool.
func (a *analysis) ruleAbout(tool string) Rule {
	for _, r := range a.rules {
		if slices.Contains(r.members(), tool) {
			return r
		}
	}
	return Rule{}
}

func (a *analysis) run() {
	a.checkStart()
	a.checkLoop()
	a.checkReachable()
	a.checkFollowCycles()
	a.checkEnd()
}

func (a *analysis) checkStart() {
	var starts []Rule
	for _, r := range a.rules {
		if r.Kind == KindStartConstraint {
			starts = append(starts, r)
		}
	}
	for _, r := range starts[min(1, len(starts)):] {
		a.add(ProblemConflict, r, r.Tool, "%s and %s cannot both be called first", q(starts[0].Tool), q(r.Tool))
	}
	if len(starts) == 1 {
		a.start, a.startRule = starts[0].Tool, starts[0]
	}
}

func (a *analysis) checkLoop() {
	for _, r := range a.rules {
		if r.Kind == KindContinueLoop && a.exit[r.Tool] {
			a.add(ProblemConflict, r, r.Tool, "the tool both ends (ExitLoop) and continues (ContinueLoop) the conversation")
			delete(a.exit, r.Tool)
		}
	}
}

func (a *analysis) markUnreachable(t string, r Rule, format string, args ...any) {
	if a.unreach[t] {
		return
	}
	a.unreach[t] = true
	a.add(ProblemUnreachable, r, t, format, args...)
}

func (a *analysis) checkReachable() {
	s := a.start
	for _, t := range a.tools {
		switch {
		case a.hasMax(t, 0):
			a.markUnreachable(t, a.maxRule[t], "it may be called at most 0 times")
		case slices.Contains(a.prior[t], t):
			a.markUnreachable(t, a.ruleFor(KindRequiresPrior, t, t), "it requires itself to be called before it")
		case a.exit[t] && len(a.follow[t]) > 0:
			a.markUnreachable(t, a.ruleFor(KindRequiresFollowing, t, ""), "the turn ends after it, so %s can never follow it", qlist(a.follow[t]))
		case s != "" && t == s && len(a.prior[t]) > 0:
			a.markUnreachable(t, a.ruleFor(KindRequiresPrior, t, ""), "it must be called first in the turn but requires %s before it", qlist(a.prior[t]))
		case s != "" && t != s && a.exit[s]:
			a.markUnreachable(t, a.startRule, "the turn ends after the first call, %s, so no other tool can be called", q(s))
		default:
			for _, p := range a.prior[t] {
				if a.exit[p] {
					a.markUnreachable(t, a.ruleFor(KindRequiresPrior, t, p), "it requires %s before it, but the turn ends after %s", q(p), q(p))
					break
				}
			}
		}
	}
	for _, scc := range sccs(a.tools, a.prior) {
		if len(scc) < 2 {
			continue
		}
		for _, t := range scc {
			for _, p := range a.prior[t] {
				if slices.Contains(scc, p) {
					a.markUnreachable(t, a.ruleFor(KindRequiresPrior, t, p), "it is in a RequiresPrior cycle (%s): each needs another called before it", qlist(scc))
					break
				}
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, t := range a.tools {
			if a.unreach[t] {
				continue
			}
			if s != "" && t != s && a.unreach[s] {
				a.markUnreachable(t, a.startRule, "the first call must be %s, which can never be called", q(s))
				changed = true
				continue
			}
			for _, p := range a.prior[t] {
				if a.unreach[p] {
					a.markUnreachable(t, a.ruleFor(KindRequiresPrior, t, p), "it requires %s before it, which can never be called", q(p))
					changed = true
					break
				}
			}
		}
		if changed {
			continue
		}
		for _, t := range a.tools {
			if a.unreach[t] {
				continue
			}
			set := a.closure([]string{t}, false)
			if s != "" {
				set[s] = true
			}
			if g, x, y, ok := a.groupClash(set); ok {
				a.markUnreachable(t, g, "calling it needs both %s and %s called in the turn (as prerequisites or the first call), but they are in an exclusive group", q(x), q(y))
				changed = true
			}
		}
	}
}

func (a *analysis) hasMax(t string, n int) bool {
	m, ok := a.maxCalls[t]
	return ok && m <= n
}

func (a *analysis) checkFollowCycles() {
	for _, scc := range sccs(a.tools, a.follow) {
		if len(scc) == 1 && !slices.Contains(a.follow[scc[0]], scc[0]) {
			continue
		}
		reachable := false
		for _, t := range scc {
			a.deadEnd[t] = true
			reachable = reachable || !a.unreach[t]
		}
		if !reachable {
			continue
		}
		t := scc[0]
		if len(scc) == 1 {
			a.add(ProblemCannotEnd, a.ruleFor(KindRequiresFollowing, t, t), t, "it requires itself to be called after it, which never settles")
			continue
		}
		var next string
		for _, f := range a.follow[t] {
			if slices.Contains(scc, f) {
				next = f
				break
			}
		}
		a.add(ProblemCannotEnd, a.ruleFor(KindRequiresFollowing, t, next), t, "it is in a RequiresFollowing cycle (%s) that never settles: each requires another after it", qlist(scc))
	}
}

// closure returns seed with everything that must be called along with it:
// prerequisites, and, if withFollow, the tools owed afterwards; plus the
// StartConstraint tool when withFollow is set and seed is not empty.
func (a *analysis) closure(seed []string, withFollow bool) map[string]bool {
	set := map[string]bool{}
	stack := slices.Clone(seed)
	if withFollow && len(seed) > 0 && a.start != "" {
		stack = append(stack, a.start)
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if set[t] {
			continue
		}
		set[t] = true
		stack = append(stack, a.prior[t]...)
		if withFollow {
			stack = append(stack, a.follow[t]...)
		}
	}
	return set
}

// groupClash finds two tools of set in one exclusive group.
func (a *analysis) groupClash(set map[string]bool) (Rule, string, string, bool) {
	for _, g := range a.groups {
		var in []string
		for _, m := range g.members() {
			if set[m] {
				in = append(in, m)
			}
		}
		if len(in) >= 2 {
			slices.Sort(in)
			return g, in[0], in[1], true
		}
	}
	return Rule{}, "", "", false
}

// issue explains why the tools of set cannot all be called in one turn that
// ends; ok is false when they can (as far as Validate can tell).
func (a *analysis) issue(set map[string]bool) (r Rule, reason string, ok bool) {
	tools := slices.Sorted(maps.Keys(set))
	for _, t := range tools {
		if a.unreach[t] {
			return Rule{}, q(t) + " can never be called", true
		}
	}
	for _, t := range tools {
		if a.deadEnd[t] {
			return a.ruleFor(KindRequiresFollowing, t, ""), q(t) + " starts a RequiresFollowing cycle that never settles", true
		}
	}
	if g, x, y, clash := a.groupClash(set); clash {
		return g, fmt.Sprintf("%s and %s would both have to be called, but they are in an exclusive group", q(x), q(y)), true
	}
	var exits []string
	for _, t := range tools {
		if a.exit[t] {
			exits = append(exits, t)
		}
	}
	if len(exits) >= 2 {
		return a.ruleFor(KindExitLoop, exits[1], ""), fmt.Sprintf("%s and %s would both have to be called, but each ends the turn", q(exits[0]), q(exits[1])), true
	}
	for _, t := range tools {
		before := a.closure([]string{t}, false)
		for _, f := range a.follow[t] {
			if f != t && before[f] && a.hasMax(f, 1) {
				return a.ruleFor(KindRequiresFollowing, t, f), fmt.Sprintf("%s must be called both before and after %s, but may be called at most 1 time", q(f), q(t)), true
			}
		}
	}
	return Rule{}, "", false
}

func (a *analysis) checkEnd() {
	broken := false
	for _, t := range a.beforeExit {
		rbe := a.ruleFor(KindRequiredBeforeExit, t, "")
		if r, reason, bad := a.issue(a.closure([]string{t}, true)); bad {
			if r.Kind == "" {
				r = rbe
			}
			a.add(ProblemCannotEnd, r, t, "the turn can never end: %s must be called before it ends, but %s", q(t), reason)
			broken = true
		}
	}
	if broken {
		return
	}
	must := a.closure(a.beforeExit, true)
	if len(a.beforeExit) > 0 {
		if r, reason, bad := a.issue(must); bad {
			t := a.beforeExit[0]
			if r.Kind == "" {
				r = a.ruleFor(KindRequiredBeforeExit, t, "")
			}
			a.add(ProblemCannotEnd, r, t, "the turn can never end: the tools required before it ends cannot all be called: %s", reason)
			return
		}
	}
	for _, t := range a.tools {
		if a.unreach[t] || a.deadEnd[t] || must[t] {
			continue
		}
		set := a.closure([]string{t}, true)
		maps.Copy(set, must)
		if r, reason, bad := a.issue(set); bad {
			if r.Kind == "" {
				r = a.ruleAbout(t)
			}
			a.add(ProblemCannotEnd, r, t, "calling it leaves the turn unable to end: %s", reason)
		}
	}
}

func q(t string) string { return fmt.Sprintf("%q", t) }

func qlist(ts []string) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = q(t)
	}
	return strings.Join(parts, ", ")
}

// sccs returns the strongly connected components of the graph (Tarjan), each
// sorted, in a deterministic order.
func sccs(nodes []string, edges map[string][]string) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var out [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v] = len(index)
		low[v] = index[v]
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range edges[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			slices.Sort(scc)
			out = append(out, scc)
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}
