// Package testenv decides what a test does when something it needs from
// the machine is missing (a data set, a tool): it skips on a developer's
// machine and fails under CI=true, where a skipped check would pass without
// checking. The PostgreSQL, Chromium and node tests follow the same rule.
// It also says whether the long tests run (Long, ENGRAM_LONG_TESTS=1),
// and measures what a test bounds (the heap a call allocates, the
// goroutines a Close leaves).
package testenv

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

// CI reports whether the tests run in CI (CI=true), which provides
// everything the suite needs.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing skips tb, explaining what is missing, or fails it under CI=true.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		tb.Fatalf("%s: CI=true requires it (a skip would pass without checking)", msg)
	}
	tb.Skip(msg)
}

// LongEnv is the environment variable that turns on the long tests:
// soak runs, scale tests and long randomized runs at their full sizes.
// `go test ./...` leaves it unset and runs them short or not at all;
// .ci/run sets it, so CI runs every one of them in full.
const LongEnv = "ENGRAM_LONG_TESTS"

// Long reports whether the long tests run (ENGRAM_LONG_TESTS=1).
func Long() bool { return os.Getenv(LongEnv) == "1" }

// SkipUnlessLong skips tb unless the long tests run, saying why it is
// long and how to run it.
func SkipUnlessLong(tb testing.TB, why string) {
	tb.Helper()
	if !Long() {
		tb.Skipf("%s: a long test, run with %s=1 (CI does)", why, LongEnv)
	}
}

// Scale returns full when the long tests run and short otherwise: the
// size of a test whose short run still fails on the defect it guards.
func Scale(short, full int) int {
	if Long() {
		return full
	}
	return short
}

// SkipRaceUnlessLong skips tb under the race detector unless the long
// tests run. It is for single-goroutine checks of large inputs (a ranking
// compared query by query, every code point of a table): the detector
// slows the transpiled SQLite a hundredfold and finds nothing in them
// that their run without it does not, so `go test -race` of a package
// stays within its timeout. CI runs them at full size without the
// detector (its -race pass runs the README's command, short sizes).
func SkipRaceUnlessLong(tb testing.TB, why string) {
	tb.Helper()
	if Race && !Long() {
		tb.Skipf("%s: under -race only with %s=1; it runs without -race", why, LongEnv)
	}
}

// HeapAllocated is what f allocated on the heap, with the garbage
// collector off while it runs (a collection would empty the pools f
// reuses). Under the race detector a sync.Pool drops a quarter of what is
// put in it, so callers bounding a pool's allocations skip when Race.
func HeapAllocated(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}
