package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// BenchmarkAppendConcurrentWriteBack: BenchmarkAppendConcurrent
// in write-back mode (each edit holds its copy: holdCopy); ns/op is per
// append.
func BenchmarkAppendConcurrentWriteBack(b *testing.B) {
	ctx := context.Background()
	c, err := Open(ctx, filepath.Join(b.TempDir(), "c.db"), &Options{WriteBack: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var next atomic.Int64
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		label := fmt.Sprintf("w%d", next.Add(1))
		if _, err := c.Agent("a").CreateBlock(ctx, BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit}); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if err := c.Agent("a").Block(label).Append(ctx, "one more line of text\n"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
