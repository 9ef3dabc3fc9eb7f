package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

func Example() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()

	store.Agent("entropy").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I break tasks down."})
	store.Agent("entropy").Block("persona").Append(ctx, " Small steps.")
	text, _ := store.Agent("entropy").Block("persona").Render(ctx)
	fmt.Println(text)

	// Another agent cannot see it...
	_, err := store.Agent("chaos").Block("persona").Doc(ctx)
	fmt.Println(errors.Is(err, memory.ErrNotFound))

	// ...until it is shared, with the permission the share grants.
	store.Agent("entropy").Block("persona").Share(ctx, "chaos", blocks.Append)
	err = store.Agent("chaos").Shared("entropy", "persona").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " (noted by chaos)"})
	fmt.Println(err)
	text, _ = store.Agent("entropy").Block("persona").Render(ctx)
	fmt.Println(text)
	// Output:
	// I break tasks down. Small steps.
	// true
	// <nil>
	// I break tasks down. Small steps. (noted by chaos)
}

func ExampleArchival_Search() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	store.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "The user's dog is called Biscuit.", Tags: []string{"pets"}})
	store.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "The user works night shifts.", Tags: []string{"work"}})
	res, _ := store.Agent("a").Archival().Search(ctx, "what is the name of the dog?", search.NewOptions().Mode(search.FTS))
	for _, r := range res {
		fmt.Println(r.Content, r.Tags)
	}
	// Output:
	// The user's dog is called Biscuit. [pets]
}

// A block rewritten many times is rebased onto a new epoch (here forced
// with Rebase; compaction does it past Options.HistoryLimit): loads read
// only the current value, while the history and as-of views still reach
// the archived epoch.
func ExampleBlock_Rebase() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	store.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "plan", Value: "step 1: draft"})
	store.Agent("a").Block("plan").SetText(ctx, "step 1: review")
	store.Agent("a").Block("plan").Rebase(ctx)
	store.Agent("a").Block("plan").SetText(ctx, "step 1: ship")

	hist, _ := store.Agent("a").Block("plan").History(ctx)
	for _, ch := range hist {
		at, _ := store.Agent("a").Block("plan").At(ctx, []string{ch.Hash})
		fmt.Printf("epoch %d %s: %q\n", ch.Epoch, ch.Op, at.Render())
	}
	// Output:
	// epoch 0 create: ""
	// epoch 0 set_value: "step 1: draft"
	// epoch 0 set_text: "step 1: review"
	// epoch 1 rebase: "step 1: review"
	// epoch 1 set_text: "step 1: ship"
}
