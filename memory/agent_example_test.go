package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// An Agent handle names the acting agent once; block handles name the
// owner and label once. The same calls as in the package example, without
// the strings that could be swapped.
func ExampleAgent() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	entropy, chaos := store.Agent("entropy"), store.Agent("chaos")

	persona, _ := entropy.CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I break tasks down."})
	persona.Append(ctx, " Small steps.")
	text, _ := persona.Render(ctx)
	fmt.Println(text)

	// chaos cannot see it, as its own block or as a share...
	_, err := chaos.Shared("entropy", "persona").Render(ctx)
	fmt.Println(errors.Is(err, memory.ErrNotFound))

	// ...until it is shared, with the permission the share grants.
	persona.Share(ctx, "chaos", blocks.Append)
	shared := chaos.Shared("entropy", "persona")
	fmt.Println(shared.Append(ctx, " (noted by chaos)"))
	fmt.Println(errors.Is(shared.SetText(ctx, "mine now"), blocks.ErrPermission))
	text, _ = persona.Render(ctx)
	fmt.Println(text)

	// Archival memory, messages and search act as the agent too.
	entropy.Archival().Insert(ctx, memory.ArchivalEntry{Content: "The user's dog is called Biscuit."})
	entropy.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "Walk the dog at six.", BatchID: "b1"})
	res, _ := entropy.Search(ctx, "dog", search.NewOptions().Mode(search.FTS))
	for _, r := range res {
		fmt.Println(r.Type, r.Content)
	}
	res, _ = chaos.Search(ctx, "dog", search.NewOptions().Mode(search.FTS))
	fmt.Println(len(res))
	// Output:
	// I break tasks down. Small steps.
	// true
	// <nil>
	// true
	// I break tasks down. Small steps. (noted by chaos)
	// archival The user's dog is called Biscuit.
	// messages Walk the dog at six.
	// 0
}

// A block handle is a value: it reads nothing until a method runs, and
// each method finds the block afresh, so it can be kept and reused.
func ExampleBlock_Append() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	notes := store.Agent("ada").Block("notes")

	fmt.Println(errors.Is(notes.Append(ctx, "first"), memory.ErrNotFound))
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes"})
	notes.Append(ctx, "first")
	notes.Append(ctx, ", second")
	replaced, _ := notes.Replace(ctx, "second", "last")
	text, _ := notes.Render(ctx)
	fmt.Println(replaced, text)
	// Output:
	// true
	// true first, last
}
