package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
	"github.com/engram-go/engram/tools"
)

func Example() {
	ctx := context.Background()
	store, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		panic(err)
	}
	defer store.Close()
	_, _ = store.Agent("entropy").CreateBlock(ctx, memory.BlockSpec{Label: "human", Type: blocks.Core, Value: "Name: Sam"})

	ts, err := tools.New(store.Agent("entropy"), nil)
	if err != nil {
		panic(err)
	}
	// What a model would send, one call at a time.
	for _, c := range []struct{ name, args string }{
		{"block_append", `{"label":"human","text":"Likes: tea"}`},
		{"block_replace", `{"label":"human","old":"tea","new":"green tea"}`},
		{"block_replace", `{"label":"human","old":"coffee","new":"tea"}`},
		{"block_append", `{"label":"persona","text":"hi"}`},
	} {
		res, err := ts.Call(ctx, c.name, json.RawMessage(c.args))
		if err != nil {
			panic(err) // infrastructure only
		}
		fmt.Println(res.Content)
	}
	text, _ := store.Agent("entropy").Block("human").Render(ctx)
	fmt.Println(text)
	// Output:
	// Appended 10 characters to block "human". Block "human" now has 20 of 5000 characters.
	// Replaced "tea" with "green tea" in block "human". Block "human" now has 26 of 5000 characters.
	// Error: no match for "coffee" in block "human"; old must be copied exactly from the block's current content (whitespace, punctuation and case matter)
	// Error: block "persona" not found; your blocks: human
	// Name: Sam
	// Likes: green tea
}

func ExampleToolset_Allowed() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	rules, _ := toolrules.NewEngine([]toolrules.Rule{toolrules.MaxCalls("archival_insert", 1)}, nil)
	ts, _ := tools.New(store.Agent("entropy"), &tools.Options{
		Rules:   rules,
		Enabled: []string{"archival_insert", "archival_search"},
	})
	for _, args := range []string{`{"content":"Sam's birthday is May 4","tags":["sam"]}`, `{"content":"again"}`} {
		res, _ := ts.Call(ctx, "archival_insert", json.RawMessage(args))
		fmt.Println(res.Content)
	}
	for _, t := range ts.Allowed() {
		fmt.Println("allowed:", t.Name)
	}
	// Output:
	// Inserted archival entry #1 with tags sam.
	// Error: call refused by tool rule "Call `archival_insert` at most 1 time": `archival_insert` may be called at most 1 time per turn and has been called 1 time
	// allowed: archival_search
}
