package toolrules

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func yes() Approver {
	return ApproverFunc(func(context.Context, ConsentRequest) (bool, error) { return true, nil })
}

// TestRuleKinds checks, for every kind, its sentence and its enforcement: a
// sequence of calls that is allowed, and one whose last call is denied by
// exactly that rule.
func TestRuleKinds(t *testing.T) {
	cases := []struct {
		name     string
		rules    []Rule // rules[0] is the rule under test
		sentence string
		allowed  []string
		denied   []string // all calls but the last pass; the last breaks rules[0]
		wait     time.Duration
		deniedW  time.Duration // wait between calls of the denied sequence
		approver Approver      // for the allowed sequence; the denied one has none
		ends     map[string]bool
		canEnd   bool // CanEnd after the allowed sequence
	}{
		{
			name:     "StartConstraint",
			rules:    []Rule{StartConstraint("context")},
			sentence: "Call `context` first before any other tools",
			allowed:  []string{"context", "search", "context"},
			denied:   []string{"search"},
			canEnd:   true,
		},
		{
			name:     "ExitLoop",
			rules:    []Rule{ExitLoop("send_message")},
			sentence: "The conversation will end after calling `send_message`",
			allowed:  []string{"search", "search", "send_message"},
			denied:   []string{"send_message", "search"},
			ends:     map[string]bool{"send_message": true, "search": false},
			canEnd:   true,
		},
		{
			name:     "ContinueLoop",
			rules:    []Rule{ContinueLoop("search"), ExitLoop("send_message")},
			sentence: "The conversation will be continued after calling `search`",
			allowed:  []string{"search", "search", "send_message"},
			// ContinueLoop forbids no call; it is enforced through Ends.
			ends:   map[string]bool{"search": false, "send_message": true},
			canEnd: true,
		},
		{
			name:     "MaxCalls",
			rules:    []Rule{MaxCalls("api_request", 3)},
			sentence: "Call `api_request` at most 3 times",
			allowed:  []string{"api_request", "other", "api_request", "api_request"},
			denied:   []string{"api_request", "api_request", "api_request", "api_request"},
			canEnd:   true,
		},
		{
			name:     "RequiresPrior",
			rules:    []Rule{RequiresPrior("write", "read", "plan")},
			sentence: "Call `write` only after calling `read` and `plan`",
			allowed:  []string{"plan", "read", "write", "write"},
			denied:   []string{"read", "write"},
			canEnd:   true,
		},
		{
			name:     "RequiresFollowing",
			rules:    []Rule{RequiresFollowing("plan", "execute"), ExitLoop("done")},
			sentence: "After calling `plan`, call `execute` before the conversation ends",
			allowed:  []string{"plan", "execute", "done"},
			denied:   []string{"execute", "plan", "done"},
			canEnd:   true,
		},
		{
			name:     "RequiredBeforeExit",
			rules:    []Rule{RequiredBeforeExit("save"), ExitLoop("done")},
			sentence: "Call `save` before the conversation ends",
			allowed:  []string{"search", "save", "done"},
			denied:   []string{"search", "done"},
			canEnd:   true,
		},
		{
			name:     "ExclusiveGroup",
			rules:    []Rule{ExclusiveGroup("fast_answer", "deep_research", "ask_user")},
			sentence: "Use only one of `fast_answer`, `deep_research` or `ask_user`",
			allowed:  []string{"deep_research", "other", "deep_research"},
			denied:   []string{"fast_answer", "ask_user"},
			canEnd:   true,
		},
		{
			name:     "Cooldown",
			rules:    []Rule{Cooldown("web", 30*time.Second)},
			sentence: "Wait at least 30s between calls to `web`",
			allowed:  []string{"web", "web", "web"},
			wait:     30 * time.Second,
			denied:   []string{"web", "web"},
			deniedW:  29 * time.Second,
			canEnd:   true,
		},
		{
			name:     "RequiresConsent",
			rules:    []Rule{RequiresConsent("delete_file")},
			sentence: "Each call to `delete_file` requires approval",
			allowed:  []string{"delete_file", "delete_file"},
			approver: yes(),
			denied:   []string{"other", "delete_file"},
			canEnd:   true,
		},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := Heading + "\n\n- " + tc.sentence
			if got := Render(tc.rules[:1]); got != want {
				t.Errorf("Render = %q, want %q", got, want)
			}
			if got := tc.rules[0].String(); got != tc.sentence {
				t.Errorf("String = %q, want %q", got, tc.sentence)
			}

			clock := newFakeClock()
			e, err := NewEngine(tc.rules, &EngineOptions{Now: clock.Now, Approver: tc.approver})
			if err != nil {
				t.Fatal(err)
			}
			for i, tool := range tc.allowed {
				if i > 0 {
					clock.Advance(tc.wait)
				}
				if tc.rules[0].Kind != KindRequiresConsent || tc.approver != nil {
					if got := e.Allowed([]string{tool}); len(got) != 1 {
						t.Fatalf("allowed seq: Allowed(%q) before call %d = %v", tool, i, got)
					}
				}
				if err := e.Call(ctx, Call{Tool: tool}); err != nil {
					t.Fatalf("allowed seq: call %d (%s): %v", i, tool, err)
				}
			}
			if got := e.CanEnd(); got != tc.canEnd {
				t.Errorf("CanEnd after allowed seq = %v, want %v (pending %v)", got, tc.canEnd, e.Pending())
			}
			for tool, want := range tc.ends {
				if got := e.Ends(Call{Tool: tool}); got != want {
					t.Errorf("Ends(%s) = %v, want %v", tool, got, want)
				}
			}

			if tc.denied == nil {
				return
			}
			clock2 := newFakeClock()
			e2, err := NewEngine(tc.rules, &EngineOptions{Now: clock2.Now})
			if err != nil {
				t.Fatal(err)
			}
			last := len(tc.denied) - 1
			for i, tool := range tc.denied[:last] {
				if i > 0 {
					clock2.Advance(tc.deniedW)
				}
				if err := e2.Call(ctx, Call{Tool: tool}); err != nil {
					t.Fatalf("denied seq: call %d (%s) should pass: %v", i, tool, err)
				}
			}
			clock2.Advance(tc.deniedW)
			tool := tc.denied[last]
			// Allowed agrees with the denial (consent is asked only at call time).
			wantAllowed := []string{"unrelated_tool"}
			switch tc.rules[0].Kind {
			case KindStartConstraint, KindExitLoop:
				wantAllowed = []string{} // nothing but the start tool / nothing at all
			case KindRequiresConsent:
				wantAllowed = []string{tool, "unrelated_tool"}
			}
			if got := e2.Allowed([]string{tool, "unrelated_tool"}); !reflect.DeepEqual(got, wantAllowed) {
				t.Errorf("Allowed before denied call = %v, want %v", got, wantAllowed)
			}
			err = e2.Call(ctx, Call{Tool: tool})
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("denied seq: last call (%s) err = %v, want a violation", tool, err)
			}
			var v *Violation
			if !errors.As(err, &v) {
				t.Fatalf("err %T is not a *Violation", err)
			}
			if !reflect.DeepEqual(v.Rule, tc.rules[0]) {
				t.Errorf("violated rule = %#v, want %#v", v.Rule, tc.rules[0])
			}
			if v.Tool != tool || v.Reason == "" {
				t.Errorf("violation tool %q reason %q", v.Tool, v.Reason)
			}
			if got := e2.Calls(); len(got) != last {
				t.Errorf("denied call was recorded: calls %v", got)
			}
			if err := e2.Check(ctx, Call{Tool: tool}); !errors.Is(err, ErrViolation) {
				t.Errorf("Check after denial = %v, want violation", err)
			}
		})
	}
}

func TestAllowedStartConstraint(t *testing.T) {
	e, err := NewEngine(mixedRules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := []string{"search", "context", "write", "send_message", "api_request"}
	if got := e.Allowed(tools); !reflect.DeepEqual(got, []string{"context"}) {
		t.Fatalf("Allowed at turn start = %v, want [context]", got)
	}
	e.Record(Call{Tool: "context"})
	// write needs read and plan; send_message needs save first.
	if got := e.Allowed(tools); !reflect.DeepEqual(got, []string{"search", "context", "api_request"}) {
		t.Fatalf("Allowed after context = %v", got)
	}
	e.NewTurn()
	if got := e.Allowed(tools); !reflect.DeepEqual(got, []string{"context"}) {
		t.Fatalf("Allowed after NewTurn = %v, want [context]", got)
	}
}

func TestPendingAndCanEnd(t *testing.T) {
	e, err := NewEngine([]Rule{
		RequiresFollowing("plan", "review", "execute"),
		RequiredBeforeExit("save"),
		ExitLoop("done"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		call    string
		pending []string
	}{
		{"", []string{"save"}},
		{"plan", []string{"execute", "review", "save"}},
		{"execute", []string{"review", "save"}},
		{"plan", []string{"execute", "review", "save"}},
		{"review", []string{"execute", "save"}},
		{"save", []string{"execute"}},
		{"execute", nil},
	}
	for _, s := range steps {
		if s.call != "" {
			if err := e.Call(context.Background(), Call{Tool: s.call}); err != nil {
				t.Fatalf("%s: %v", s.call, err)
			}
		}
		if got := e.Pending(); !reflect.DeepEqual(got, s.pending) {
			t.Fatalf("after %q: Pending = %v, want %v", s.call, got, s.pending)
		}
		if got := e.CanEnd(); got != (len(s.pending) == 0) {
			t.Fatalf("after %q: CanEnd = %v", s.call, got)
		}
		if ok := len(e.Allowed([]string{"done"})) == 1; ok != (len(s.pending) == 0) {
			t.Fatalf("after %q: done allowed = %v with pending %v", s.call, ok, s.pending)
		}
	}
	if err := e.Call(context.Background(), Call{Tool: "done"}); err != nil {
		t.Fatal(err)
	}
	if !e.CanEnd() {
		t.Fatal("CanEnd false after exit")
	}
	// Pending is reset by NewTurn.
	e.NewTurn()
	if got := e.Pending(); !reflect.DeepEqual(got, []string{"save"}) {
		t.Fatalf("after NewTurn Pending = %v", got)
	}
}

func TestExitToolSatisfiesItsOwnRequirement(t *testing.T) {
	e, err := NewEngine([]Rule{RequiredBeforeExit("send_message"), ExitLoop("send_message")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Call(context.Background(), Call{Tool: "send_message"}); err != nil {
		t.Fatal(err)
	}
	if !e.CanEnd() || !e.Ends(Call{Tool: "send_message"}) {
		t.Fatal("send_message should end the turn")
	}
}

func TestFollowingDeadEndRefused(t *testing.T) {
	e, err := NewEngine([]Rule{RequiresFollowing("plan", "execute"), MaxCalls("execute", 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tool := range []string{"plan", "execute"} {
		if err := e.Call(ctx, Call{Tool: tool}); err != nil {
			t.Fatal(err)
		}
	}
	var v *Violation
	if err := e.Call(ctx, Call{Tool: "plan"}); !errors.As(err, &v) || v.Rule.Kind != KindRequiresFollowing {
		t.Fatalf("second plan: err = %v, want RequiresFollowing violation", err)
	}
	if !e.CanEnd() {
		t.Fatal("refused call must not leave an obligation")
	}

	g, err := NewEngine([]Rule{RequiresFollowing("plan", "execute"), ExclusiveGroup("execute", "skip")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Record(Call{Tool: "skip"})
	if err := g.Check(ctx, Call{Tool: "plan"}); !errors.As(err, &v) || v.Rule.Kind != KindRequiresFollowing {
		t.Fatalf("plan after skip: err = %v, want RequiresFollowing violation", err)
	}
}

func TestCooldownSurvivesNewTurn(t *testing.T) {
	clock := newFakeClock()
	e, err := NewEngine([]Rule{Cooldown("web", time.Minute)}, &EngineOptions{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Call(ctx, Call{Tool: "web"}); err != nil {
		t.Fatal(err)
	}
	e.NewTurn()
	clock.Advance(59 * time.Second)
	err = e.Check(ctx, Call{Tool: "web"})
	var v *Violation
	if !errors.As(err, &v) || v.Rule.Kind != KindCooldown {
		t.Fatalf("err = %v, want cooldown violation", err)
	}
	if !strings.Contains(v.Reason, "wait another 1s") {
		t.Errorf("reason %q", v.Reason)
	}
	if got := e.Allowed([]string{"web"}); len(got) != 0 {
		t.Errorf("Allowed = %v during cooldown", got)
	}
	clock.Advance(time.Second)
	if err := e.Check(ctx, Call{Tool: "web"}); err != nil {
		t.Fatalf("after cooldown: %v", err)
	}
}

type recordingApprover struct {
	reqs   []ConsentRequest
	answer bool
	err    error
}

func (a *recordingApprover) Approve(_ context.Context, req ConsentRequest) (bool, error) {
	a.reqs = append(a.reqs, req)
	return a.answer, a.err
}

func TestConsent(t *testing.T) {
	ctx := context.Background()
	rules := []Rule{RequiresConsent("delete_file"), MaxCalls("delete_file", 1)}
	call := Call{Agent: "entropy", Tool: "delete_file", Arguments: json.RawMessage(`{"path":"/tmp/x"}`)}

	// No approver: denied by default.
	e, err := NewEngine(rules, nil)
	if err != nil {
		t.Fatal(err)
	}
	var v *Violation
	if err := e.Call(ctx, call); !errors.As(err, &v) || v.Rule.Kind != KindRequiresConsent {
		t.Fatalf("no approver: err = %v", err)
	}
	if n := len(e.Calls()); n != 0 {
		t.Fatalf("denied call recorded")
	}

	// Denied by the approver.
	a := &recordingApprover{}
	e, _ = NewEngine(rules, &EngineOptions{Approver: a})
	if err := e.Call(ctx, call); !errors.As(err, &v) || v.Rule.Kind != KindRequiresConsent {
		t.Fatalf("denied: err = %v", err)
	}
	want := ConsentRequest{Agent: "entropy", Tool: "delete_file", Arguments: call.Arguments, Rule: RequiresConsent("delete_file")}
	if len(a.reqs) != 1 || !reflect.DeepEqual(a.reqs[0], want) {
		t.Fatalf("approver got %#v, want %#v", a.reqs, want)
	}

	// Approver error: a violation that also wraps the cause.
	boom := errors.New("approval service down")
	e, _ = NewEngine(rules, &EngineOptions{Approver: &recordingApprover{answer: true, err: boom}})
	err = e.Call(ctx, call)
	if !errors.Is(err, ErrViolation) || !errors.Is(err, boom) {
		t.Fatalf("approver error: err = %v", err)
	}

	// Approved: Check does not record, Call does; the approver is not asked
	// for a call another rule forbids.
	a = &recordingApprover{answer: true}
	e, _ = NewEngine(rules, &EngineOptions{Approver: a})
	if err := e.Check(ctx, call); err != nil {
		t.Fatal(err)
	}
	if len(e.Calls()) != 0 {
		t.Fatal("Check recorded the call")
	}
	if err := e.Call(ctx, call); err != nil {
		t.Fatal(err)
	}
	asked := len(a.reqs)
	if err := e.Call(ctx, call); !errors.As(err, &v) || v.Rule.Kind != KindMaxCalls {
		t.Fatalf("second call: err = %v, want MaxCalls", err)
	}
	if len(a.reqs) != asked {
		t.Fatal("approver asked for a call MaxCalls forbids")
	}
}

func TestViolationError(t *testing.T) {
	e, err := NewEngine([]Rule{RequiresPrior("write", "read")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = e.Check(context.Background(), Call{Tool: "write"})
	want := "toolrules: call to \"write\" denied: `write` requires `read` to be called first in the turn (rule: Call `write` only after calling `read`)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if err := e.Check(context.Background(), Call{}); !errors.Is(err, ErrInvalidCall) {
		t.Fatalf("empty call: %v", err)
	}
	e.Record(Call{}) // ignored
	if len(e.Calls()) != 0 {
		t.Fatal("empty call recorded")
	}
}

func TestRulesAccessor(t *testing.T) {
	e, err := NewEngine(mixedRules(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := e.Rules()
	if Render(rs) != Render(mixedRules()) {
		t.Fatal("Rules renders differently")
	}
	if rs[0].Kind != KindStartConstraint {
		t.Fatalf("Rules not in canonical order: %v", rs[0])
	}
	rs[len(rs)-1].Tool = "mutated"
	if e.Rules()[len(rs)-1].Tool == "mutated" {
		t.Fatal("Rules exposes internal state")
	}
}

// TestCallRechecksAfterConsent: Call asks the Approver without holding the
// lock, so it must check the rules again before recording.
func TestCallRechecksAfterConsent(t *testing.T) {
	var e *Engine
	approver := ApproverFunc(func(context.Context, ConsentRequest) (bool, error) {
		e.Record(Call{Tool: "delete_file"}) // a concurrent call lands meanwhile
		return true, nil
	})
	e, err := NewEngine([]Rule{RequiresConsent("delete_file"), MaxCalls("delete_file", 1)}, &EngineOptions{Approver: approver})
	if err != nil {
		t.Fatal(err)
	}
	var v *Violation
	if err := e.Call(context.Background(), Call{Tool: "delete_file"}); !errors.As(err, &v) || v.Rule.Kind != KindMaxCalls {
		t.Fatalf("err = %v, want MaxCalls violation", err)
	}
	if got := e.Calls(); len(got) != 1 {
		t.Fatalf("calls = %v, want only the concurrent one", got)
	}
}
