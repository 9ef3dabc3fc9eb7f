package compress_test

import (
	"context"
	"fmt"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

func ExampleTruncate() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	for _, b := range []string{"mon", "tue", "wed"} {
		store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: b, Content: "Hello on " + b})
		store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: b, Content: "Hi!"})
		store.Agent("ann").Messages().CompleteBatch(ctx, b)
	}
	store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "thu", Content: "And today?"})

	msgs, _ := store.Agent("ann").Messages().List(ctx, nil)
	batches, _ := store.Agent("ann").Messages().Batches(ctx)
	r, _ := compress.Truncate{KeepRecent: 4}.Compress(ctx, compress.Input{
		Agent: "ann", Messages: msgs, Batches: batches, ActiveBatch: "thu",
	})
	for _, m := range r.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	fmt.Println("dropped:", r.Dropped)
	// Output:
	// user: Hello on wed
	// assistant: Hi!
	// user: And today?
	// dropped: [1 2 3 4]
}

func ExampleRecursiveSummarization() {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	for _, b := range []string{"mon", "tue", "wed"} {
		store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: b, Content: "Plan for " + b + ". Details."})
		store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: b, Content: "Noted " + b + "."})
		store.Agent("ann").Messages().CompleteBatch(ctx, b)
	}
	store.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "thu", Content: "What did we plan?"})

	msgs, _ := store.Agent("ann").Messages().List(ctx, nil)
	batches, _ := store.Agent("ann").Messages().Batches(ctx)
	in := compress.Input{Agent: "ann", Messages: msgs, Batches: batches, ActiveBatch: "thu",
		MaxMessages: 4, Summaries: store.Agent("ann").Messages()}
	rs := compress.RecursiveSummarization{ChunkSize: 4} // offline extractive summaries
	r, _ := rs.Compress(ctx, in)
	for _, m := range r.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	again, _ := rs.Compress(ctx, in)
	fmt.Println("summarizer calls:", r.SummarizerCalls, "then", again.SummarizerCalls)
	// Output:
	// user: [Summary of the earlier conversation]
	// - user: Plan for mon.
	// - assistant: Noted mon.
	// - user: Plan for tue.
	// - assistant: Noted tue.
	// user: Plan for wed. Details.
	// assistant: Noted wed.
	// user: What did we plan?
	// summarizer calls: 1 then 0
}
