//go:build race

package serve

// raceEnabled: the race detector makes sync.Pool drop a quarter of what
// is put in it, so a pool is never warm and allocations are not the
// server's alone.
const raceEnabled = true
