package memory_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// releaseLater calls release after hold, and sends when it did.
func releaseLater(release func(), hold time.Duration) <-chan time.Time {
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(hold)
		at := time.Now()
		release()
		released <- at
	}()
	return released
}

// handoffBlock is a block of a new store file, and the file's path (for
// holdWriteLock).
func handoffBlock(tb testing.TB) (string, *memory.Block) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "handoff.db")
	blk, err := openFile(tb, path, nil).Agent("a").CreateBlock(context.Background(), memory.BlockSpec{Label: "notes"})
	if err != nil {
		tb.Fatal(err)
	}
	return path, blk
}

// A write that finds SQLite's write lock held by another connection takes
// it soon after its release: within a fraction of a millisecond more than
// the write takes alone. Waiting in SQLite's busy handler, or in the
// runtime's timers, a waiter took it a millisecond or more after.
func TestWriteTakesTheLockSoonAfterItsRelease(t *testing.T) {
	if raceDetector {
		// Under the detector each retry's failed BEGIN and wake-up cost
		// more than the wait they follow, and decide the figure (0.7 to
		// 1.2 ms past the release in a loaded CI run).
		t.Skip("timed without the race detector")
	}
	ctx := context.Background()
	path, blk := handoffBlock(t)
	median := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	const n, slack = 31, 600 * time.Microsecond
	var alone, late time.Duration
	for try := range 3 { // a machine loaded by other tests may delay a run
		var quiet, after []time.Duration
		for range n {
			t0 := time.Now()
			if err := blk.Append(ctx, "a short line\n"); err != nil {
				t.Fatal(err)
			}
			quiet = append(quiet, time.Since(t0))
			released := releaseLater(holdWriteLock(t, path), 3*time.Millisecond)
			time.Sleep(200 * time.Microsecond) // the lock taken, the write waiting
			if err := blk.Append(ctx, "a short line\n"); err != nil {
				t.Fatal(err)
			}
			after = append(after, time.Since(<-released))
		}
		alone, late = median(quiet), median(after)
		if late-alone < slack {
			return
		}
		t.Logf("try %d: a write alone took %v, one waiting for the lock was done %v after its release", try+1, alone, late)
	}
	t.Errorf("a write waiting for the lock was done %v after its release (median of %d), one alone took %v: it waited %v past the release, want < %v",
		late, n, alone, late-alone, slack)
}

// BenchmarkAppendAfterLockRelease: a small append that finds the SQLite
// write lock held by another connection (as another process's write
// holds it) for 4 ms more, and how long after the lock's release the
// append is done ("after-release-µs", p50 and p90): what a writer
// waiting its turn on a shared file loses to how it waits. Each
// iteration is one append.
func BenchmarkAppendAfterLockRelease(b *testing.B) {
	ctx := context.Background()
	path, blk := handoffBlock(b)
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
