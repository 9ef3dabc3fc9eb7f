//go:build !linux

package groupcommit

import "time"

// sleepThread is Linux's only (see pause): elsewhere the runtime's
// timers wait.
func sleepThread(time.Duration) bool { return false }
