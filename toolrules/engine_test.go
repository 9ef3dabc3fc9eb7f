package toolrules

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// snapshot is everything observable about an engine for a set of tools.
func snapshot(ctx context.Context, e *Engine, tools []string) string {
	s := fmt.Sprintf("calls=%v pending=%v canEnd=%v allowed=%v", e.Calls(), e.Pending(), e.CanEnd(), e.Allowed(tools))
	for _, t := range tools {
		s += fmt.Sprintf("\n%s: %v", t, e.Check(ctx, Call{Tool: t}))
	}
	return s
}

func TestStateRoundTrip(t *testing.T) {
	ctx := context.Background()
	tools := []string{"context", "search", "web", "read", "plan", "write", "execute", "save",
		"api_request", "fast_answer", "deep_research", "delete_file", "send_message"}
	opts := func(c *fakeClock) *EngineOptions { return &EngineOptions{Now: c.Now, Approver: yes()} }

	clock := newFakeClock()
	e1, err := NewEngine(mixedRules(), opts(clock))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"context", "web", "read", "plan", "api_request", "deep_research"} {
		clock.Advance(time.Second)
		if err := e1.Call(ctx, Call{Tool: tool}); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
	}
	saved, err := e1.State()
	if err != nil {
		t.Fatal(err)
	}

	e2, err := NewEngine(mixedRules(), opts(clock))
	if err != nil {
		t.Fatal(err)
	}
	e2.Record(Call{Tool: "context"}) // state to be replaced
	if err := e2.Restore(saved); err != nil {
		t.Fatal(err)
	}
	again, err := e2.State()
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(saved) {
		t.Fatalf("state after restore differs:\n%s\n%s", again, saved)
	}
	if a, b := snapshot(ctx, e1, tools), snapshot(ctx, e2, tools); a != b {
		t.Fatalf("restored engine differs:\n%s\n---\n%s", a, b)
	}
	// Continue both identically; they must agree on every call.
	for _, tool := range []string{"web", "fast_answer", "write", "execute", "send_message", "save", "api_request", "api_request", "api_request", "send_message", "search"} {
		clock.Advance(10 * time.Second)
		err1 := e1.Call(ctx, Call{Tool: tool})
		err2 := e2.Call(ctx, Call{Tool: tool})
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("%s: original %v, restored %v", tool, err1, err2)
		}
		if a, b := snapshot(ctx, e1, tools), snapshot(ctx, e2, tools); a != b {
			t.Fatalf("after %s:\n%s\n---\n%s", tool, a, b)
		}
	}
	// The sequence ended the turn with send_message.
	if err := e2.Check(ctx, Call{Tool: "search"}); !errors.Is(err, ErrViolation) {
		t.Fatalf("call after exit: %v", err)
	}
	ended, _ := e2.State()
	e3, _ := NewEngine(mixedRules(), opts(clock))
	if err := e3.Restore(ended); err != nil {
		t.Fatal(err)
	}
	var v *Violation
	if err := e3.Check(ctx, Call{Tool: "search"}); !errors.As(err, &v) || v.Rule.Kind != KindExitLoop {
		t.Fatalf("restored ended turn: %v", err)
	}
}

func TestStateKeepsCooldown(t *testing.T) {
	clock := newFakeClock()
	rules := []Rule{Cooldown("web", time.Minute)}
	e1, _ := NewEngine(rules, &EngineOptions{Now: clock.Now})
	e1.Record(Call{Tool: "web"})
	saved, err := e1.State()
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := NewEngine(rules, &EngineOptions{Now: clock.Now})
	if err := e2.Restore(saved); err != nil {
		t.Fatal(err)
	}
	e2.NewTurn()
	clock.Advance(30 * time.Second)
	if err := e2.Check(context.Background(), Call{Tool: "web"}); !errors.Is(err, ErrViolation) {
		t.Fatalf("cooldown lost in restore: %v", err)
	}
}

func TestRestoreInvalid(t *testing.T) {
	e, _ := NewEngine([]Rule{MaxCalls("a", 1)}, nil)
	e.Record(Call{Tool: "a"})
	before, _ := e.State()
	for _, bad := range []string{
		`not json`,
		`{"version":2,"calls":[]}`,
		`{"calls":[]}`,
		`{"version":1,"calls":["a",""]}`,
		`{"version":1,"calls":["a","b"],"ended_by":"a"}`,
		`{"version":1,"calls":[],"ended_by":"a"}`,
	} {
		if err := e.Restore([]byte(bad)); !errors.Is(err, ErrInvalidState) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
	after, _ := e.State()
	if string(before) != string(after) {
		t.Fatalf("failed restore changed state: %s -> %s", before, after)
	}
	if err := e.Restore([]byte(`{"version":1,"calls":[]}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.Check(context.Background(), Call{Tool: "a"}); err != nil {
		t.Fatalf("after restoring empty state: %v", err)
	}
}

func TestNewEngineInvalid(t *testing.T) {
	_, err := NewEngine([]Rule{MaxCalls("a", -1), RequiresPrior("b", "b")}, nil)
	if !errors.Is(err, ErrInvalidRules) {
		t.Fatalf("err = %v", err)
	}
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 2 {
		t.Fatalf("problems: %#v", ve)
	}
	if _, err := NewEngine(nil, nil); err != nil {
		t.Fatalf("no rules: %v", err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	e, err := NewEngine(append(mixedRules(), MaxCalls("worker", 10)), &EngineOptions{Approver: yes()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.Call(ctx, Call{Tool: "context"}); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if e.Call(ctx, Call{Tool: "worker"}) == nil {
				ok.Add(1)
			}
		})
		wg.Go(func() {
			_ = e.Allowed([]string{"worker", "write", "web"})
			_ = e.Pending()
			_ = e.CanEnd()
			_ = e.Check(ctx, Call{Tool: "delete_file"})
			if _, err := e.State(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := ok.Load(); n != 10 {
		t.Fatalf("%d worker calls admitted, want 10", n)
	}

	// ExclusiveGroup under parallel calls: one winner per turn.
	for round := range 50 {
		e.NewTurn()
		e.Record(Call{Tool: "context"})
		var wins atomic.Int32
		for _, tool := range []string{"fast_answer", "deep_research", "fast_answer", "deep_research"} {
			wg.Go(func() {
				if e.Call(ctx, Call{Tool: tool}) == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		calls := e.Calls()[1:]
		for _, c := range calls {
			if c != calls[0] {
				t.Fatalf("round %d: both group members called: %v", round, calls)
			}
		}
		if int(wins.Load()) != len(calls) || len(calls) == 0 {
			t.Fatalf("round %d: %d wins, calls %v", round, wins.Load(), calls)
		}
	}
}

func TestNewTurnResets(t *testing.T) {
	e, _ := NewEngine([]Rule{MaxCalls("a", 1), ExitLoop("done")}, nil)
	ctx := context.Background()
	for _, tool := range []string{"a", "done"} {
		if err := e.Call(ctx, Call{Tool: tool}); err != nil {
			t.Fatal(err)
		}
	}
	e.NewTurn()
	if got := e.Calls(); len(got) != 0 {
		t.Fatalf("calls after NewTurn: %v", got)
	}
	if got := e.Allowed([]string{"a", "done"}); !reflect.DeepEqual(got, []string{"a", "done"}) {
		t.Fatalf("Allowed after NewTurn: %v", got)
	}
}

func BenchmarkCheck(b *testing.B) {
	e, err := NewEngine(mixedRules(), &EngineOptions{Approver: yes()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tool := range []string{"context", "read", "plan", "execute", "api_request"} {
		if err := e.Call(ctx, Call{Tool: tool}); err != nil {
			b.Fatal(err)
		}
	}
	allowed := Call{Tool: "write"}
	denied := Call{Tool: "send_message"} // save still required
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Check(ctx, allowed); err != nil {
			b.Fatal(err)
		}
		if err := e.Check(ctx, denied); err == nil {
			b.Fatal("send_message allowed")
		}
	}
}

func BenchmarkCheckAllowed(b *testing.B) {
	e, err := NewEngine(mixedRules(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, tool := range []string{"context", "read", "plan", "execute", "api_request"} {
		if err := e.Call(ctx, Call{Tool: tool}); err != nil {
			b.Fatal(err)
		}
	}
	call := Call{Tool: "write"}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.Check(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
