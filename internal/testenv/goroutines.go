package testenv

import (
	"runtime"
	"time"
)

// SettleGoroutines waits up to d for the process's goroutines to number
// want or fewer, and returns the last count. Goroutines that a Close has
// ended (a pool's connection opener, a driver's interrupt watcher) leave
// when next scheduled, which on a busy machine can be a while; a fixed
// sleep before counting would fail such a test there.
func SettleGoroutines(want int, d time.Duration) int {
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if n := runtime.NumGoroutine(); n <= want || time.Now().After(end) {
			return n
		}
	}
}

// GoroutineDump is every goroutine's stack (up to 1 MiB of it), for the
// message of a test that found goroutines left behind.
func GoroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
