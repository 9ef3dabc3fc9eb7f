//go:build unix

package workspace

import "syscall"

// nonblock makes opening a FIFO return at once instead of waiting for a
// writer (see readFile); it changes nothing for a regular file.
const nonblock = syscall.O_NONBLOCK
