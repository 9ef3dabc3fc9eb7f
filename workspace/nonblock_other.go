//go:build !unix

package workspace

// nonblock is 0 where opening a file cannot wait for a writer the way a
// Unix FIFO does.
const nonblock = 0
