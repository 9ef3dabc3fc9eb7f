package memory_test

import (
	"context"
	"fmt"
	"log"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// An operator's tool reads across agents through Admin, not SQL.
func ExampleAdmin() {
	ctx := context.Background()
	store, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Permission: blocks.Admin})
	store.Agent("ada").Block("notes").Append(ctx, "first\n")
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "board", Permission: blocks.Admin})
	store.Agent("bob").Block("board").Share(ctx, "cy", blocks.ReadWrite)

	admin := store.Admin()
	agents, _ := admin.Agents(ctx)
	fmt.Println("agents:", agents)
	n, _ := admin.Compact(ctx, &memory.CompactOptions{Owner: "ada"})
	fmt.Println("compacted:", n)
	st, err := admin.Stats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d blocks, %d shares, %d updates not yet in a snapshot\n",
		st.Backend, st.Counts.Blocks, st.Counts.Shares, st.Counts.BlockUpdates)
	// Output:
	// agents: [ada bob cy]
	// compacted: 1
	// sqlite: 2 blocks, 1 shares, 0 updates not yet in a snapshot
}
