package memory_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// BenchmarkAppendAfterLockRelease: a small append that finds the SQLite
// write lock held by another connection (as another process's write
// holds it) for 4 ms more, and how long after the lock's release the
// append is done ("after-release-µs", p50 and p90): what a writer
// waiting its turn on a shared file loses to how it waits. Each
// iteration is one append.
func BenchmarkAppendAfterLockRelease(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "handoff.db")
	st := openFile(b, path, nil)
	blk, err := st.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes"})
	if err != nil {
		b.Fatal(err)
	}
	const hold = 4 * time.Millisecond
	var after []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%200 == 199 {
			if err := blk.SetText(ctx, ""); err != nil {
				b.Fatal(err)
			}
		}
		released := releaseLater(holdWriteLock(b, path), hold)
		if err := blk.Append(ctx, "a short line\n"); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		after = append(after, done.Sub(<-released))
	}
	slices.Sort(after)
	b.ReportMetric(float64(after[len(after)/2].Microseconds()), "after-release-p50-µs")
	b.ReportMetric(float64(after[len(after)*9/10].Microseconds()), "after-release-p90-µs")
}
