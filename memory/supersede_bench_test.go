package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// BenchmarkSupersedeInConversation supersedes one entry of a 2,000-entry
// conversation at a time ("session") or of entries naming none ("plain"):
// a supersession in a conversation re-indexes the entry and its live
// neighbours.
func BenchmarkSupersedeInConversation(b *testing.B) {
	for _, name := range []string{"plain", "session"} {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			c, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "m.db")), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			meta := func() map[string]any {
				if name == "session" {
					return map[string]any{"session": "s1"}
				}
				return map[string]any{"source": "chat"}
			}
			ar := c.Agent("a").Archival()
			var in []memory.ArchivalEntry
			for i := range 2000 {
				in = append(in, memory.ArchivalEntry{Content: fmt.Sprintf("turn %d says something about topic %d", i, i%37), Metadata: meta()})
			}
			out, err := ar.InsertBatch(ctx, in, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				id := out[i%len(out)].ID
				e, err := ar.Supersede(ctx, id, memory.ArchivalEntry{Content: fmt.Sprintf("revised turn %d", i), Metadata: meta()})
				if err != nil {
					b.Fatal(err)
				}
				out[i%len(out)].ID = e.ID
			}
		})
	}
}
