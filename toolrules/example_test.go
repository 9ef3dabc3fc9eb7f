package toolrules_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-go/engram/toolrules"
)

func ExampleRender() {
	fmt.Println(toolrules.Render([]toolrules.Rule{
		toolrules.MaxCalls("api_request", 3),
		toolrules.ExitLoop("send_message"),
		toolrules.ContinueLoop("search"),
		toolrules.StartConstraint("context"),
		toolrules.RequiresPrior("write", "read"),
	}))
	// Output:
	// # Tool Execution Rules
	//
	// - Call `context` first before any other tools
	// - The conversation will end after calling `send_message`
	// - The conversation will be continued after calling `search`
	// - Call `api_request` at most 3 times
	// - Call `write` only after calling `read`
}

func ExampleEngine() {
	rules := []toolrules.Rule{
		toolrules.StartConstraint("context"),
		toolrules.RequiresPrior("write", "read"),
		toolrules.RequiredBeforeExit("save"),
		toolrules.ExitLoop("send_message"),
	}
	eng, err := toolrules.NewEngine(rules, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	tools := []string{"context", "read", "write", "save", "send_message"}

	fmt.Println("offer:", eng.Allowed(tools))
	for _, tool := range []string{"context", "write", "read", "write", "send_message", "save", "send_message"} {
		call := toolrules.Call{Tool: tool}
		err := eng.Call(ctx, call) // check and record
		var v *toolrules.Violation
		switch {
		case errors.As(err, &v):
			fmt.Printf("%s: denied (%s): %s\n", tool, v.Rule.Kind, v.Reason)
		case err != nil:
			panic(err)
		default:
			fmt.Printf("%s: ok, pending %v, ends %v\n", tool, eng.Pending(), eng.Ends(call))
		}
	}
	eng.NewTurn()
	fmt.Println("next turn offer:", eng.Allowed(tools))
	// Output:
	// offer: [context]
	// context: ok, pending [save], ends false
	// write: denied (requires_prior): `write` requires `read` to be called first in the turn
	// read: ok, pending [save], ends false
	// write: ok, pending [save], ends false
	// send_message: denied (required_before_exit): `save` must be called before the turn may end
	// save: ok, pending [], ends false
	// send_message: ok, pending [], ends true
	// next turn offer: [context]
}

func ExampleValidate() {
	problems := toolrules.Validate([]toolrules.Rule{
		toolrules.RequiresPrior("deploy", "test"),
		toolrules.RequiresPrior("test", "deploy"),
		toolrules.RequiredBeforeExit("report"),
		toolrules.MaxCalls("report", 0),
	})
	for _, p := range problems {
		fmt.Println(p)
	}
	// Output:
	// unreachable: tool "report": it may be called at most 0 times
	// unreachable: tool "deploy": it is in a RequiresPrior cycle ("deploy", "test"): each needs another called before it
	// unreachable: tool "test": it is in a RequiresPrior cycle ("deploy", "test"): each needs another called before it
	// cannot_end: tool "report": the turn can never end: "report" must be called before it ends, but "report" can never be called
}
