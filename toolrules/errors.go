package toolrules

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrViolation is matched (errors.Is) by every *Violation: a call that a
	// rule forbids at this point of the turn.
	ErrViolation = errors.New("toolrules: rule violated")
	// ErrInvalidRules is wrapped by NewEngine's error when Validate reports
	// problems, and by Rule.UnmarshalJSON for an unknown rule kind.
	ErrInvalidRules = errors.New("toolrules: invalid rules")
	// ErrInvalidCall is returned for a call without a tool name.
	ErrInvalidCall = errors.New("toolrules: invalid call")
	// ErrInvalidState is wrapped by Restore when the saved state is malformed
	// or of an unknown version.
	ErrInvalidState = errors.New("toolrules: invalid state")
)

// Violation is the error returned when a call breaks a rule. Rule is the
// violated rule, Tool the tool that was called, Reason a sentence that can be
// handed back to the model as the tool result. Err, when set, is the cause
// (for example the error an Approver returned).
type Violation struct {
	Rule   Rule
	Tool   string
	Reason string
	Err    error
}

func (v *Violation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolrules: call to %q denied: %s", v.Tool, v.Reason)
	if s := v.Rule.String(); s != "" {
		fmt.Fprintf(&b, " (rule: %s)", s)
	}
	if v.Err != nil {
		fmt.Fprintf(&b, ": %v", v.Err)
	}
	return b.String()
}

// Is reports whether target is ErrViolation.
func (v *Violation) Is(target error) bool { return target == ErrViolation }

// Unwrap returns the cause, if any.
func (v *Violation) Unwrap() error { return v.Err }

// ProblemKind classifies a Problem found by Validate.
type ProblemKind string

// The problem kinds.
const (
	// ProblemInvalid: a rule with bad arguments (unknown kind, empty tool
	// name, negative count, non-positive cooldown, group of fewer than two
	// tools, RequiresPrior/RequiresFollowing without tools).
	ProblemInvalid ProblemKind = "invalid"
	// ProblemConflict: rules that contradict each other (two different
	// StartConstraint tools; ExitLoop and ContinueLoop on one tool).
	ProblemConflict ProblemKind = "conflict"
	// ProblemUnreachable: a tool that can never be called.
	ProblemUnreachable ProblemKind = "unreachable"
	// ProblemCannotEnd: the turn can never end, or can never end once the
	// tool has been called.
	ProblemCannotEnd ProblemKind = "cannot_end"
)

// Problem is one defect in a rule set, found before use by Validate.
type Problem struct {
	Kind   ProblemKind
	Rule   Rule   // the rule at fault (the most specific one)
	Tool   string // the tool affected
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s: tool %q: %s", p.Kind, p.Tool, p.Reason)
}

// ValidationError is NewEngine's error for a rule set with problems. It
// matches ErrInvalidRules with errors.Is; use errors.As to get the problems.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "toolrules: invalid rules: " + strings.Join(parts, "; ")
}

// Unwrap returns ErrInvalidRules.
func (e *ValidationError) Unwrap() error { return ErrInvalidRules }
