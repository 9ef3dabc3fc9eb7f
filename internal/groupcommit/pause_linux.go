package groupcommit

import (
	"errors"
	"syscall"
	"time"
)

// sleepThread sleeps d on the calling thread (see pause); false if the
// system refused, and nothing was slept.
func sleepThread(d time.Duration) bool {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		err := syscall.Nanosleep(&ts, &ts)
		if err == nil {
			return true
		}
		if !errors.Is(err, syscall.EINTR) { // a signal: sleep the rest
			return false
		}
	}
}
