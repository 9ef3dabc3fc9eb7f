package toolrules

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Call is one tool call made by a model.
type Call struct {
	Agent     string          `json:"agent,omitempty"` // optional; passed to the Approver
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ConsentRequest is what an Approver is asked for a RequiresConsent tool.
type ConsentRequest struct {
	Agent     string          // the calling agent, if the Call named one
	Tool      string          // the tool to be called
	Arguments json.RawMessage // the call's arguments, as the model sent them
	Rule      Rule            // the RequiresConsent rule
}

// Approver decides whether a call of a RequiresConsent tool may proceed. It
// may block (for example on a human); the Engine does not hold its lock while
// asking. Returning an error denies the call.
type Approver interface {
	Approve(ctx context.Context, req ConsentRequest) (bool, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req ConsentRequest) (bool, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req ConsentRequest) (bool, error) {
	return f(ctx, req)
}

// EngineOptions configures an Engine. The zero value (or nil) uses time.Now
// and no Approver, which denies every RequiresConsent call.
type EngineOptions struct {
	Now      func() time.Time
	Approver Approver
}

// Engine enforces a rule set over the calls of a turn. It is safe for
// concurrent use.
//
// Two ways to drive it:
//
//   - Check before executing a call, Record after executing it. Check does not
//     change state; two concurrent Checks may both pass.
//   - Call, which checks and records atomically (reserving the call before it
//     is executed). Use it when tool calls run in parallel, so that limits such
//     as MaxCalls and ExclusiveGroup hold under concurrency.
//
// After a call, Ends says whether the turn is over; when the model stops
// calling tools, CanEnd and Pending say whether it may stop, and what it
// still owes. NewTurn starts the next turn.
type Engine struct {
	rules    []Rule
	now      func() time.Time
	approver Approver

	relevant   map[string][]int // tool -> indices of rules constraining a call of it
	start      int              // index of the StartConstraint rule, or -1
	exit       map[string]int   // tool -> its ExitLoop rule
	obligation []int            // RequiresFollowing and RequiredBeforeExit rules
	cooldown   map[string]bool  // tools with a Cooldown rule

	mu         sync.Mutex
	calls      []string             // this turn's calls, in order
	counts     map[string]int       // calls per tool this turn
	last       map[string]int       // 1-based position of each tool's latest call
	endedBy    string               // the ExitLoop tool that ended the turn
	lastCalled map[string]time.Time // Cooldown tools' latest call; spans turns
}

// NewEngine returns an Engine for rules, which it checks with Validate first:
// if Validate reports problems, the error is a *ValidationError wrapping
// ErrInvalidRules. opts may be nil.
func NewEngine(rules []Rule, opts *EngineOptions) (*Engine, error) {
	if probs := Validate(rules); len(probs) > 0 {
		return nil, &ValidationError{Problems: probs}
	}
	e := &Engine{
		rules:      canonical(rules),
		now:        time.Now,
		relevant:   map[string][]int{},
		start:      -1,
		exit:       map[string]int{},
		cooldown:   map[string]bool{},
		counts:     map[string]int{},
		last:       map[string]int{},
		lastCalled: map[string]time.Time{},
	}
	if opts != nil {
		if opts.Now != nil {
			e.now = opts.Now
		}
		e.approver = opts.Approver
	}
	for i, r := range e.rules {
		switch r.Kind {
		case KindExclusiveGroup:
			for _, m := range r.members() {
				e.relevant[m] = append(e.relevant[m], i)
			}
			continue
		case KindStartConstraint:
			e.start = i
		case KindExitLoop:
			e.exit[r.Tool] = i
		case KindRequiresFollowing, KindRequiredBeforeExit:
			e.obligation = append(e.obligation, i)
		case KindCooldown:
			e.cooldown[r.Tool] = true
		}
		e.relevant[r.Tool] = append(e.relevant[r.Tool], i)
	}
	return e, nil
}

// Rules returns the engine's rules in canonical (rendering) order.
func (e *Engine) Rules() []Rule {
	out := make([]Rule, len(e.rules))
	for i, r := range e.rules {
		r.Tools = slices.Clone(r.Tools)
		out[i] = r
	}
	return out
}

// Check reports whether call may be made now: nil, a *Violation (matching
// ErrViolation) naming the rule it breaks, or ErrInvalidCall for a call
// without a tool name. For a RequiresConsent tool that passes every other
// rule, Check asks the Approver. Check does not record the call.
func (e *Engine) Check(ctx context.Context, call Call) error {
	if call.Tool == "" {
		return ErrInvalidCall
	}
	e.mu.Lock()
	v := e.check(call.Tool, e.now())
	e.mu.Unlock()
	if v != nil {
		return v
	}
	return e.consent(ctx, call)
}

// Record records a call that was executed. It does not check it (a caller
// that recorded a denied call gets the state it asked for). A call that ends
// the turn (Ends) makes every later call of the turn a violation. Calls
// without a tool name are ignored.
func (e *Engine) Record(call Call) {
	if call.Tool == "" {
		return
	}
	e.mu.Lock()
	e.record(call.Tool, e.now())
	e.mu.Unlock()
}

// Call checks call like Check and, if it is allowed, records it like Record,
// atomically: a concurrent call cannot slip in between. Consent is asked
// without holding the lock, and the rules are checked again afterwards.
func (e *Engine) Call(ctx context.Context, call Call) error {
	if err := e.Check(ctx, call); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if v := e.check(call.Tool, now); v != nil {
		return v
	}
	e.record(call.Tool, now)
	return nil
}

// Allowed returns the tools among tools (in their order) that may be called
// next, so a caller can filter the tool list it sends to the model. At the
// start of a turn with a StartConstraint it is only that tool. Consent is not
// asked: RequiresConsent tools are listed if every other rule allows them.
func (e *Engine) Allowed(tools []string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	out := make([]string, 0, len(tools))
	for _, t := range tools {
		if t != "" && e.check(t, now) == nil {
			out = append(out, t)
		}
	}
	return out
}

// Ends reports whether the turn ends after call, that is whether its tool has
// an ExitLoop rule. Every other tool, ContinueLoop tools in particular, keeps
// the turn going: the loop should ask the model again. (A tool cannot have
// both rules: NewEngine rejects that as a conflict.) Ends depends on the rules
// only, not on the calls so far.
func (e *Engine) Ends(call Call) bool {
	_, ok := e.exit[call.Tool]
	return ok
}

// Pending returns, sorted and without repeats, the tools that must still be
// called before the turn may end: RequiredBeforeExit tools not called yet and
// RequiresFollowing tools not called since the call that required them.
func (e *Engine) Pending() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, p := range e.pending("") {
		out = append(out, p.tool)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CanEnd reports whether the turn may end now (Pending is empty).
func (e *Engine) CanEnd() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.pending("")) == 0
}

// Calls returns the tools called this turn, in order.
func (e *Engine) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.calls)
}

// NewTurn forgets the calls of the turn. Cooldown times are kept: they are
// measured on the clock, across turns.
func (e *Engine) NewTurn() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resetTurn()
}

func (e *Engine) resetTurn() {
	e.calls = nil
	e.counts = map[string]int{}
	e.last = map[string]int{}
	e.endedBy = ""
}

const stateVersion = 1

type stateJSON struct {
	Version    int                  `json:"version"`
	Calls      []string             `json:"calls"`
	EndedBy    string               `json:"ended_by,omitempty"`
	LastCalled map[string]time.Time `json:"last_called,omitempty"`
}

// State returns the engine's state as JSON: the turn's calls in order, the
// tool that ended the turn (if any) and the last call time of Cooldown tools.
// Rules are not included; Restore it into an Engine built from the same rules.
func (e *Engine) State() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := stateJSON{Version: stateVersion, Calls: slices.Clone(e.calls), EndedBy: e.endedBy}
	if s.Calls == nil {
		s.Calls = []string{}
	}
	if len(e.lastCalled) > 0 {
		s.LastCalled = make(map[string]time.Time, len(e.lastCalled))
		for t, at := range e.lastCalled {
			s.LastCalled[t] = at
		}
	}
	return json.Marshal(s)
}

// Restore replaces the engine's state with one saved by State. Malformed
// state is an error wrapping ErrInvalidState, and leaves the engine as it was.
func (e *Engine) Restore(data []byte) error {
	var s stateJSON
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidState, err)
	}
	if s.Version != stateVersion {
		return fmt.Errorf("%w: unsupported version %d", ErrInvalidState, s.Version)
	}
	for i, t := range s.Calls {
		if t == "" {
			return fmt.Errorf("%w: call %d has no tool name", ErrInvalidState, i)
		}
	}
	if s.EndedBy != "" && (len(s.Calls) == 0 || s.Calls[len(s.Calls)-1] != s.EndedBy) {
		return fmt.Errorf("%w: ended_by %q is not the last call", ErrInvalidState, s.EndedBy)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resetTurn()
	for i, t := range s.Calls {
		e.calls = append(e.calls, t)
		e.counts[t]++
		e.last[t] = i + 1
	}
	e.endedBy = s.EndedBy
	e.lastCalled = make(map[string]time.Time, len(s.LastCalled))
	for t, at := range s.LastCalled {
		e.lastCalled[t] = at
	}
	return nil
}

func (e *Engine) record(tool string, now time.Time) {
	e.calls = append(e.calls, tool)
	e.counts[tool]++
	e.last[tool] = len(e.calls)
	if e.cooldown[tool] {
		e.lastCalled[tool] = now
	}
	if _, ok := e.exit[tool]; ok {
		e.endedBy = tool
	}
}

// consent asks the Approver for a RequiresConsent tool; nil otherwise.
func (e *Engine) consent(ctx context.Context, call Call) error {
	for _, i := range e.relevant[call.Tool] {
		r := e.rules[i]
		if r.Kind != KindRequiresConsent {
			continue
		}
		if e.approver == nil {
			return &Violation{Rule: r, Tool: call.Tool, Reason: codeSpan(call.Tool) + " requires approval and no approver is configured"}
		}
		ok, err := e.approver.Approve(ctx, ConsentRequest{Agent: call.Agent, Tool: call.Tool, Arguments: call.Arguments, Rule: r})
		if err != nil {
			return &Violation{Rule: r, Tool: call.Tool, Reason: "approval for " + codeSpan(call.Tool) + " failed", Err: err}
		}
		if !ok {
			return &Violation{Rule: r, Tool: call.Tool, Reason: "approval for " + codeSpan(call.Tool) + " was denied"}
		}
		return nil
	}
	return nil
}

// check applies every rule but RequiresConsent to a call of tool made now.
// The caller holds e.mu.
func (e *Engine) check(tool string, now time.Time) *Violation {
	if e.endedBy != "" {
		r := ExitLoop(e.endedBy)
		if i, ok := e.exit[e.endedBy]; ok {
			r = e.rules[i]
		}
		return &Violation{Rule: r, Tool: tool, Reason: "the turn ended after calling " + codeSpan(e.endedBy) + "; no more calls are allowed in this turn"}
	}
	if e.start >= 0 && len(e.calls) == 0 && tool != e.rules[e.start].Tool {
		r := e.rules[e.start]
		return &Violation{Rule: r, Tool: tool, Reason: codeSpan(r.Tool) + " must be called first in the turn"}
	}
	for _, i := range e.relevant[tool] {
		r := e.rules[i]
		switch r.Kind {
		case KindMaxCalls:
			if e.counts[tool] >= r.N {
				return &Violation{Rule: r, Tool: tool, Reason: fmt.Sprintf("%s may be called at most %s per turn and has been called %s", codeSpan(tool), times(r.N), times(e.counts[tool]))}
			}
		case KindRequiresPrior:
			var missing []string
			for _, p := range r.Tools {
				if e.counts[p] == 0 {
					missing = append(missing, p)
				}
			}
			if len(missing) > 0 {
				return &Violation{Rule: r, Tool: tool, Reason: codeSpan(tool) + " requires " + codeList(missing, "and") + " to be called first in the turn"}
			}
		case KindRequiresFollowing:
			for _, f := range r.Tools {
				if f != tool && !e.callable(f, tool) {
					return &Violation{Rule: r, Tool: tool, Reason: "calling " + codeSpan(tool) + " requires " + codeSpan(f) + " afterwards, but " + codeSpan(f) + " cannot be called again in this turn"}
				}
			}
		case KindExclusiveGroup:
			for _, m := range r.members() {
				if m != tool && e.counts[m] > 0 {
					return &Violation{Rule: r, Tool: tool, Reason: codeSpan(m) + " was already used in this turn, and only one of " + codeList(r.members(), "or") + " may be used"}
				}
			}
		case KindCooldown:
			if at, ok := e.lastCalled[tool]; ok {
				if since := now.Sub(at); since < r.Duration {
					wait := (r.Duration - since).Round(time.Millisecond)
					return &Violation{Rule: r, Tool: tool, Reason: fmt.Sprintf("%s was called %s ago; wait another %s", codeSpan(tool), since.Round(time.Millisecond), wait)}
				}
			}
		}
	}
	if _, ok := e.exit[tool]; ok {
		if p := e.pending(tool); len(p) > 0 {
			return &Violation{Rule: e.rules[p[0].rule], Tool: tool, Reason: codeSpan(p[0].tool) + " must be called before the turn may end"}
		}
	}
	return nil
}

// callable reports whether f (not next) could still be called in this turn
// once next has been called, as far as MaxCalls and ExclusiveGroup tell. The
// caller holds e.mu.
func (e *Engine) callable(f, next string) bool {
	for _, i := range e.relevant[f] {
		r := e.rules[i]
		switch r.Kind {
		case KindMaxCalls:
			if e.counts[f] >= r.N {
				return false
			}
		case KindExclusiveGroup:
			for _, m := range r.members() {
				if m != f && (e.counts[m] > 0 || m == next) {
					return false
				}
			}
		}
	}
	return true
}

type pendingItem struct {
	tool string
	rule int
}

// pending lists the outstanding obligations, as if next had been called
// (next == "": as things are). The caller holds e.mu.
func (e *Engine) pending(next string) []pendingItem {
	pos := func(t string) int {
		if t == next {
			return len(e.calls) + 1
		}
		return e.last[t]
	}
	var out []pendingItem
	for _, i := range e.obligation {
		r := e.rules[i]
		switch r.Kind {
		case KindRequiresFollowing:
			at := pos(r.Tool)
			if at == 0 {
				continue
			}
			for _, f := range r.Tools {
				if f != r.Tool && pos(f) <= at {
					out = append(out, pendingItem{f, i})
				}
			}
		case KindRequiredBeforeExit:
			if pos(r.Tool) == 0 {
				out = append(out, pendingItem{r.Tool, i})
			}
		}
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}
