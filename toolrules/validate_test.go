package toolrules

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	type want struct {
		kind ProblemKind
		tool string
		rule Kind // kind of the rule at fault
	}
	cases := []struct {
		name  string
		rules []Rule
		want  []want
		says  string // a phrase the first problem's reason contains
	}{
		{name: "clean mixed set", rules: mixedRules()},
		{name: "no rules"},
		{name: "identical duplicates", rules: []Rule{MaxCalls("a", 2), MaxCalls("a", 2), ExitLoop("b"), ExitLoop("b")}},

		// invalid arguments
		{name: "empty tool", rules: []Rule{ExitLoop("")},
			want: []want{{ProblemInvalid, "", KindExitLoop}}, says: "empty tool name"},
		{name: "blank tool", rules: []Rule{MaxCalls("  ", 1)},
			want: []want{{ProblemInvalid, "  ", KindMaxCalls}}, says: "empty tool name"},
		{name: "empty prior", rules: []Rule{RequiresPrior("w", "r", "")},
			want: []want{{ProblemInvalid, "w", KindRequiresPrior}}, says: "empty tool name"},
		{name: "no prior tools", rules: []Rule{RequiresPrior("w")},
			want: []want{{ProblemInvalid, "w", KindRequiresPrior}}, says: "at least one tool"},
		{name: "no following tools", rules: []Rule{RequiresFollowing("w")},
			want: []want{{ProblemInvalid, "w", KindRequiresFollowing}}},
		{name: "negative n", rules: []Rule{MaxCalls("a", -1)},
			want: []want{{ProblemInvalid, "a", KindMaxCalls}}, says: "negative"},
		{name: "zero cooldown", rules: []Rule{Cooldown("a", 0)},
			want: []want{{ProblemInvalid, "a", KindCooldown}}, says: "positive"},
		{name: "negative cooldown", rules: []Rule{Cooldown("a", -time.Second)},
			want: []want{{ProblemInvalid, "a", KindCooldown}}},
		{name: "unknown kind", rules: []Rule{{Kind: "teleport", Tool: "a"}},
			want: []want{{ProblemInvalid, "a", "teleport"}}, says: "unknown rule kind"},
		{name: "group of one", rules: []Rule{ExclusiveGroup("a", "a")},
			want: []want{{ProblemInvalid, "a", KindExclusiveGroup}}, says: "two different tools"},
		{name: "group with empty name", rules: []Rule{ExclusiveGroup("a", "")},
			want: []want{{ProblemInvalid, "", KindExclusiveGroup}}},

		// contradictions
		{name: "two start tools", rules: []Rule{StartConstraint("a"), StartConstraint("b")},
			want: []want{{ProblemConflict, "b", KindStartConstraint}}, says: "cannot both be called first"},
		{name: "exit and continue", rules: []Rule{ExitLoop("a"), ContinueLoop("a")},
			want: []want{{ProblemConflict, "a", KindContinueLoop}}},

		// unreachable tools
		{name: "max calls zero", rules: []Rule{MaxCalls("a", 0)},
			want: []want{{ProblemUnreachable, "a", KindMaxCalls}}},
		{name: "smallest max calls counts", rules: []Rule{MaxCalls("a", 3), MaxCalls("a", 0)},
			want: []want{{ProblemUnreachable, "a", KindMaxCalls}}},
		{name: "requires itself", rules: []Rule{RequiresPrior("a", "a")},
			want: []want{{ProblemUnreachable, "a", KindRequiresPrior}}, says: "itself"},
		{name: "prior cycle", rules: []Rule{RequiresPrior("a", "b"), RequiresPrior("b", "c"), RequiresPrior("c", "a"), RequiresPrior("d", "c")},
			want: []want{
				{ProblemUnreachable, "a", KindRequiresPrior},
				{ProblemUnreachable, "b", KindRequiresPrior},
				{ProblemUnreachable, "c", KindRequiresPrior},
				{ProblemUnreachable, "d", KindRequiresPrior},
			}, says: "cycle"},
		{name: "prior unreachable", rules: []Rule{RequiresPrior("c", "b"), RequiresPrior("b", "a"), MaxCalls("a", 0)},
			want: []want{
				{ProblemUnreachable, "a", KindMaxCalls},
				{ProblemUnreachable, "b", KindRequiresPrior},
				{ProblemUnreachable, "c", KindRequiresPrior},
			}},
		{name: "prior in same group", rules: []Rule{RequiresPrior("b", "a"), ExclusiveGroup("a", "b")},
			want: []want{{ProblemUnreachable, "b", KindExclusiveGroup}}, says: "exclusive group"},
		{name: "two priors in one group", rules: []Rule{RequiresPrior("c", "a", "b"), ExclusiveGroup("a", "b")},
			want: []want{{ProblemUnreachable, "c", KindExclusiveGroup}}},
		{name: "transitive priors in one group", rules: []Rule{RequiresPrior("c", "x"), RequiresPrior("x", "a"), RequiresPrior("c", "b"), ExclusiveGroup("a", "b")},
			want: []want{{ProblemUnreachable, "c", KindExclusiveGroup}}},
		{name: "start tool in group", rules: []Rule{StartConstraint("s"), ExclusiveGroup("s", "x")},
			want: []want{{ProblemUnreachable, "x", KindExclusiveGroup}}},
		{name: "start tool requires prior", rules: []Rule{StartConstraint("s"), RequiresPrior("s", "a")},
			want: []want{
				{ProblemUnreachable, "s", KindRequiresPrior},
				{ProblemUnreachable, "a", KindStartConstraint},
			}, says: "first"},
		{name: "start tool ends turn", rules: []Rule{StartConstraint("s"), ExitLoop("s"), MaxCalls("x", 2)},
			want: []want{{ProblemUnreachable, "x", KindStartConstraint}}, says: "turn ends after the first call"},
		{name: "prior ends turn", rules: []Rule{ExitLoop("send"), RequiresPrior("x", "send")},
			want: []want{{ProblemUnreachable, "x", KindRequiresPrior}}, says: "turn ends after"},
		{name: "exit tool owes following", rules: []Rule{ExitLoop("send"), RequiresFollowing("send", "log")},
			want: []want{{ProblemUnreachable, "send", KindRequiresFollowing}}},

		// turns that cannot end
		{name: "required tool unreachable", rules: []Rule{RequiredBeforeExit("save"), MaxCalls("save", 0)},
			want: []want{
				{ProblemUnreachable, "save", KindMaxCalls},
				{ProblemCannotEnd, "save", KindRequiredBeforeExit},
			}, says: "may be called at most 0 times"},
		{name: "following cycle", rules: []Rule{RequiresFollowing("a", "b"), RequiresFollowing("b", "a")},
			want: []want{{ProblemCannotEnd, "a", KindRequiresFollowing}}, says: "never settles"},
		{name: "following itself", rules: []Rule{RequiresFollowing("a", "a")},
			want: []want{{ProblemCannotEnd, "a", KindRequiresFollowing}}, says: "itself"},
		{name: "following into a cycle", rules: []Rule{RequiresFollowing("a", "b"), RequiresFollowing("b", "c"), RequiresFollowing("c", "b")},
			want: []want{
				{ProblemCannotEnd, "b", KindRequiresFollowing},
				{ProblemCannotEnd, "a", KindRequiresFollowing},
			}},
		{name: "following unreachable", rules: []Rule{RequiresFollowing("plan", "execute"), MaxCalls("execute", 0)},
			want: []want{
				{ProblemUnreachable, "execute", KindMaxCalls},
				{ProblemCannotEnd, "plan", KindRequiresFollowing},
			}, says: "at most 0 times"},
		{name: "required pair in group", rules: []Rule{RequiredBeforeExit("a"), RequiredBeforeExit("b"), ExclusiveGroup("a", "b")},
			want: []want{{ProblemCannotEnd, "a", KindExclusiveGroup}}, says: "exclusive group"},
		{name: "required tool excludes another", rules: []Rule{RequiredBeforeExit("save"), ExclusiveGroup("save", "discard")},
			want: []want{{ProblemCannotEnd, "discard", KindExclusiveGroup}}, says: "calling it leaves the turn unable to end"},
		{name: "two required exits", rules: []Rule{RequiredBeforeExit("a"), RequiredBeforeExit("b"), ExitLoop("a"), ExitLoop("b")},
			want: []want{{ProblemCannotEnd, "a", KindExitLoop}}, says: "each ends the turn"},
		{name: "owes two exits", rules: []Rule{RequiresFollowing("x", "a", "b"), ExitLoop("a"), ExitLoop("b")},
			want: []want{{ProblemCannotEnd, "x", KindExitLoop}}},
		{name: "needs a second call of a one-call tool", rules: []Rule{RequiresPrior("a", "b"), RequiresFollowing("a", "b"), MaxCalls("b", 1)},
			want: []want{{ProblemCannotEnd, "a", KindRequiresFollowing}}, says: "both before and after"},
		{name: "one-call tool twice is fine with two calls", rules: []Rule{RequiresPrior("a", "b"), RequiresFollowing("a", "b"), MaxCalls("b", 2)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			probs := Validate(tc.rules)
			var got, exp []string
			for _, p := range probs {
				got = append(got, fmt.Sprintf("%s/%s/%s", p.Kind, p.Tool, p.Rule.Kind))
			}
			for _, w := range tc.want {
				exp = append(exp, fmt.Sprintf("%s/%s/%s", w.kind, w.tool, w.rule))
			}
			if strings.Join(got, " ") != strings.Join(exp, " ") {
				t.Fatalf("problems\n got %v\nwant %v\n%v", got, exp, probs)
			}
			if tc.says != "" && !strings.Contains(probs[0].Reason, tc.says) {
				t.Errorf("reason %q does not say %q", probs[0].Reason, tc.says)
			}
			_, err := NewEngine(tc.rules, nil)
			if (err != nil) != (len(tc.want) > 0) {
				t.Errorf("NewEngine err = %v", err)
			}
		})
	}
}

func TestValidateProblemString(t *testing.T) {
	p := Validate([]Rule{MaxCalls("a", 0)})[0]
	want := `unreachable: tool "a": it may be called at most 0 times`
	if p.String() != want {
		t.Fatalf("got %q want %q", p.String(), want)
	}
	err := (&ValidationError{Problems: []Problem{p, p}}).Error()
	if err != "toolrules: invalid rules: "+want+"; "+want {
		t.Fatalf("ValidationError = %q", err)
	}
}
