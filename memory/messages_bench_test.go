package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// BenchmarkAppendMessage appends one message at a time to a conversation
// (each indexed with its neighbours, and its predecessor re-indexed).
func BenchmarkAppendMessage(b *testing.B) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "m.db")), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	h := c.Agent("a").Messages()
	b.ResetTimer()
	for i := range b.N {
		if _, err := h.Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: fmt.Sprint("s", i/20),
			Content: fmt.Sprintf("turn %d: we talked about the garden, the bees and the weather on the hill", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMessagesTurn appends a ten-message turn in one call.
func BenchmarkAppendMessagesTurn(b *testing.B) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "m.db")), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	h := c.Agent("a").Messages()
	turn := make([]memory.Message, 10)
	b.ResetTimer()
	for i := range b.N {
		for j := range turn {
			turn[j] = memory.Message{Role: memory.RoleUser, BatchID: fmt.Sprint("t", i),
				Content: fmt.Sprintf("turn %d message %d: the garden, the bees and the weather on the hill", i, j)}
		}
		if _, err := h.AppendMany(ctx, turn); err != nil {
			b.Fatal(err)
		}
	}
}
