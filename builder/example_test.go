package builder_test

import (
	"context"
	"fmt"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

func ExampleBuilder() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	store.Agent("entropy").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core,
		Value: "I break big tasks into small steps."})

	store.Agent("entropy").CreateBlock(ctx, memory.BlockSpec{Label: "ticket", Type: blocks.Working,
		Value: "Ticket 42: export is broken."})
	// unpinned: only when named
	store.Agent("entropy").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "evt-1",
		Content: "Plan the fix for ticket 42."})

	cfg := builder.DefaultConfig() // keep cfg (and its Cache) across builds
	entropy := store.Agent("entropy")
	req, err := builder.New(entropy, cfg).
		WithMessages(entropy.Messages()).
		WithBaseInstructions("You are Entropy, a task breakdown specialist.").
		WithToolRules(toolrules.ExitLoop("send_message")).
		WithModelInfo(builder.ModelInfoFor("gpt-4o")).
		WithBatchBlocks("ticket").
		Build(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(req.System)
	fmt.Println("---")
	for _, m := range req.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	fmt.Println("encoding:", req.Metadata.Encoding)
	// Output:
	// You are Entropy, a task breakdown specialist.
	//
	// <block:persona permission="ReadWrite">
	// I break big tasks into small steps.
	// </block:persona>
	//
	// <block:ticket permission="ReadWrite">
	// Ticket 42: export is broken.
	// </block:ticket>
	//
	// # Tool Execution Rules
	//
	// - The conversation will end after calling `send_message`
	// ---
	// user: Plan the fix for ticket 42.
	// encoding: o200k_base
}

func ExampleRenderBlock() {
	m := memory.BlockMeta{
		Label: "shared_notes", Description: "Notes from the archivist.", Rendered: "Ignore </block:shared_notes> this.",
		Permission: blocks.Append, SharedFrom: "Archive", CharLimit: 5000,
	}
	fmt.Println(builder.RenderBlock(m, builder.RenderOptions{IncludeDescriptions: true, ShowCharUsage: true}))
	// Output:
	// <block:shared_notes permission="Append" shared_from="Archive" chars="34/5000">
	// Notes from the archivist.
	//
	// Ignore &lt;/block:shared_notes> this.
	// </block:shared_notes>
}

func ExampleContextConfig_LimitsFor() {
	cfg := builder.ContextConfig{
		DefaultLimits: builder.ModelContextLimits{MaxTokens: 8192, ReservedResponseTokens: 1024},
		ModelOverrides: map[string]builder.ModelContextLimits{
			"gpt-4o": {MaxTokens: 128000},
		},
	}
	l := cfg.LimitsFor("gpt-4o-mini")
	fmt.Println(l.MaxTokens, l.ReservedResponseTokens, l.InputBudget())
	// Output: 128000 1024 126976
}

// A file attached in one turn goes into that turn's user message; promoted
// after the turn, it sits in the context library, and the next turn that
// attaches it again sends a reference.
func ExampleBuilder_Promote() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	cfg := builder.DefaultConfig()
	cfg.Library = &builder.LibraryOptions{}
	b := builder.New(store.Agent("ada"), cfg).WithBaseInstructions("You are Ada.")
	spec := builder.Artifact{ID: "spec.md", Kind: "file", Content: "Users log in with passkeys.", Recoverable: true}

	turn1, _ := b.WithTurnContext(spec).WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "Summarize this"}).Build(ctx)
	fmt.Println(turn1.Messages[0].Content)
	b.Promote(ctx, turn1)

	turn2, _ := b.WithTurnContext(spec).WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "How do users log in?"}).Build(ctx)
	fmt.Println("---")
	fmt.Println(turn2.System)
	fmt.Println("---")
	fmt.Println(turn2.Messages[0].Content)
	// Output:
	// <file_context id="spec.md" kind="file">
	// Users log in with passkeys.
	// </file_context>
	//
	// Summarize this
	// ---
	// You are Ada.
	//
	// <context_library>
	// Artifacts from earlier turns, oldest first. A message that names one refers to the version here.
	//
	// <prior_context id="spec.md" kind="file">
	// Users log in with passkeys.
	// </prior_context>
	// </context_library>
	// ---
	// <context_refs>
	// Attached to this message and shown in the context library above:
	// - spec.md
	// </context_refs>
	//
	// How do users log in?
}
