package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// benchMergeTargets are the databases the merge benchmarks run on.
func benchMergeTargets(b *testing.B) map[string]func(b *testing.B) string {
	return map[string]func(b *testing.B) string{
		"sqlite":   func(b *testing.B) string { return filepath.Join(b.TempDir(), "m.db") },
		"postgres": func(b *testing.B) string { return pgtest.Start(b).NewDatabase(b) },
	}
}

// benchPeer is a plain automerge copy of ada's block "notes" in c.
func benchPeer(b *testing.B, c *memory.Store) *automerge.Doc {
	doc, err := c.Agent("ada").Block("notes").Doc(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		b.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		b.Fatal(err)
	}
	return peer
}

// benchPeerChanges appends n changes of one line each to peer, without a
// commit message (as a JS peer makes them), and returns them.
func benchPeerChanges(b *testing.B, peer *automerge.Doc, n int) []byte {
	for i := range n {
		v, err := peer.Path("content").Get()
		if err != nil {
			b.Fatal(err)
		}
		if err := v.Text().Append(fmt.Sprintf("line %d\n", i)); err != nil {
			b.Fatal(err)
		}
		if _, err := peer.Commit(""); err != nil {
			b.Fatal(err)
		}
	}
	return peer.SaveIncremental()
}

// BenchmarkMergeChanges: one MergeChanges call of a JS peer's change (1)
// or of 100 changes at once, persisted and attributed to the merging
// agent.
func BenchmarkMergeChanges(b *testing.B) {
	ctx := context.Background()
	for name, target := range benchMergeTargets(b) {
		for _, n := range []int{1, 100} {
			b.Run(fmt.Sprintf("%s/changes=%d", name, n), func(b *testing.B) {
				c := openFile(b, target(b), &memory.Options{HistoryLimit: -1})
				if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n", CharLimit: 1 << 20}); err != nil {
					b.Fatal(err)
				}
				peer := benchPeer(b, c)
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					data := benchPeerChanges(b, peer, n)
					b.StartTimer()
					if err := c.Agent("ada").Shared("ada", "notes").Merge(ctx, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkHistoryOfMergedChanges: BlockHistory of a block of 1,000
// changes, every one merged from a peer (so every one attributed from the
// store's record), read by a store that has the block cached.
func BenchmarkHistoryOfMergedChanges(b *testing.B) {
	ctx := context.Background()
	for name, target := range benchMergeTargets(b) {
		b.Run(name, func(b *testing.B) {
			c := openFile(b, target(b), &memory.Options{HistoryLimit: -1})
			if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n", CharLimit: 1 << 20}); err != nil {
				b.Fatal(err)
			}
			peer := benchPeer(b, c)
			for range 10 {
				if err := c.Agent("ada").Shared("ada", "notes").Merge(ctx, benchPeerChanges(b, peer, 100)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				h, err := c.Agent("ada").Block("notes").History(ctx)
				if err != nil || len(h) < 1000 {
					b.Fatal(len(h), err)
				}
			}
		})
	}
}
