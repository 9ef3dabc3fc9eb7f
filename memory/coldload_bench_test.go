package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// coldLoadChars is the content the cold-load benchmarks build, the size
// of a block whose cold load was once slow.
const coldLoadChars = 140_000

// appendedStore writes a store file holding one Text block made of
// coldLoadChars characters appended in n write-through appends, and
// returns its path and the block's saved document.
func appendedStore(b *testing.B, n int) (string, []byte, blocks.Info) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), fmt.Sprintf("cold-%d.db", n))
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: blocks.MaxCharLimit}); err != nil {
		b.Fatal(err)
	}
	per := coldLoadChars / n
	words := strings.Repeat(" note", per/5+1)
	for i := range n {
		line := (fmt.Sprintf("%06d", i) + words)[:per-1] + "\n"
		if err := c.Agent("a").Block("notes").Append(ctx, line); err != nil {
			b.Fatal(err)
		}
	}
	doc, err := c.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		b.Fatal(err)
	}
	data, err := doc.Save()
	if err != nil {
		b.Fatal(err)
	}
	var pending int
	if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM block_updates`).Scan(&pending); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d appends: %d characters, %d update rows past the snapshot", n, doc.Size(), pending)
	return path, data, doc.Info()
}

// BenchmarkColdGetBlockAfterAppends times GetBlock in a fresh store of a
// block built by appends (its snapshot plus the update rows since), against
// blocks.Load of the same document saved whole: the store's load should
// cost about what the document's does, however many appends built it.
func BenchmarkColdGetBlockAfterAppends(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 20_000} {
		var (
			path string
			data []byte
			info blocks.Info
		)
		b.Run(fmt.Sprintf("appends=%dk/GetBlock", n/1000), func(b *testing.B) {
			path, data, info = appendedStore(b, n)
			for b.Loop() {
				b.StopTimer()
				c, err := memory.Open(ctx, fresh(path), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				doc, err := c.Agent("a").Block("notes").Doc(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if doc.Size() < coldLoadChars-n {
					b.Fatalf("loaded %d characters", doc.Size())
				}
				c.Close()
				b.StartTimer()
			}
		})
		b.Run(fmt.Sprintf("appends=%dk/blocks.Load", n/1000), func(b *testing.B) {
			if data == nil {
				b.Skip("needs the GetBlock sub-benchmark's store")
			}
			for b.Loop() {
				if _, err := blocks.Load(info, data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
