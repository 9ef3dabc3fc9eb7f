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

	store.CreateBlock(ctx, "entropy", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I break tasks down."})
	store.AppendToBlock(ctx, "entropy", "persona", " Small steps.")
	text, _ := store.RenderedContent(ctx, "entropy", "persona")
	fmt.Println(text)

	// Another agent cannot see it...
	_, err := store.GetBlock(ctx, "chaos", "persona")
	fmt.Println(errors.Is(err, memory.ErrNotFound))

	// ...until it is shared, with the permission the share grants.
	store.ShareBlock(ctx, "entropy", "persona", "chaos", blocks.Append)
	err = store.ApplyEdit(ctx, "chaos", "entropy", "persona", memory.Edit{Op: blocks.OpAppendText, Text: " (noted by chaos)"})
	fmt.Println(err)
	text, _ = store.RenderedContent(ctx, "entropy", "persona")
	fmt.Println(text)
	// Output:
	// I break tasks down. Small steps.
	// true
	// <nil>
	// I break tasks down. Small steps. (noted by chaos)
}

func ExampleCache_SearchArchival() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	store.InsertArchival(ctx, "a", memory.ArchivalEntry{Content: "The user's dog is called Biscuit.", Tags: []string{"pets"}})
	store.InsertArchival(ctx, "a", memory.ArchivalEntry{Content: "The user works night shifts.", Tags: []string{"work"}})
	res, _ := store.SearchArchival(ctx, "a", "what is the name of the dog?", search.NewOptions().Mode(search.FTS))
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
func ExampleCache_Rebase() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	store.CreateBlock(ctx, "a", memory.BlockSpec{Label: "plan", Value: "step 1: draft"})
	store.UpdateBlockText(ctx, "a", "plan", "step 1: review")
	store.Rebase(ctx, "a", "plan")
	store.UpdateBlockText(ctx, "a", "plan", "step 1: ship")

	hist, _ := store.BlockHistory(ctx, "a", "", "plan")
	for _, ch := range hist {
		at, _ := store.BlockAt(ctx, "a", "", "plan", []string{ch.Hash})
		fmt.Printf("epoch %d %s: %q\n", ch.Epoch, ch.Op, at.Render())
	}
	// Output:
	// epoch 0 create: ""
	// epoch 0 set_value: "step 1: draft"
	// epoch 0 set_text: "step 1: review"
	// epoch 1 rebase: "step 1: review"
	// epoch 1 set_text: "step 1: ship"
}
