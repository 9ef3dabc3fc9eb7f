package groupcommit

import (
	"context"
	"math/rand/v2"
	"time"
)

// Retries for the write lock wait pollMin plus up to pollSpread
// (jittered, so processes polling one file do not keep meeting), doubled
// after every pollDoubling tries up to pollMaxShift times: 50 to 250 µs
// for the first 32 tries (about 5 ms), up to 400 to 2,000 µs after 96
// (about 34 ms). A lock another process holds for a few milliseconds is
// taken within a poll of its release; one held for long costs the waiter
// a try (a failed BEGIN and a wake-up, about 80 µs of CPU) every 1.2 ms
// or so: 6% of a core.
const (
	pollMin      = 50 * time.Microsecond
	pollSpread   = 200 * time.Microsecond
	pollDoubling = 32
	pollMaxShift = 3
)

// backoff is how long a retry waits after attempt failed tries.
func backoff(attempt int) time.Duration {
	return (pollMin + rand.N(pollSpread)) << min(attempt/pollDoubling, pollMaxShift)
}

// threadSleepMax is the longest wait pause sleeps on its own thread:
// backoff's waits are all shorter.
const threadSleepMax = 2 * time.Millisecond

// pause waits d, or until ctx ends if that is sooner. The runtime's
// timers wake a process with nothing else to run a millisecond late or
// more on Linux (its poller waits whole milliseconds: a 50 µs sleep took
// 1.04 ms), which would make every retry a millisecond and the waiter
// take the lock a millisecond after its release; so a short wait is
// slept by the goroutine's thread itself (nanosleep, within about 0.1 ms
// of d), the context checked before it. The runtime hands the thread's
// other goroutines to another thread meanwhile, as in any system call.
func pause(ctx context.Context, d time.Duration) {
	if ctx.Err() != nil {
		return
	}
	if d <= threadSleepMax && sleepThread(d) {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
