//go:build race

package memory_test

// The race detector slows modernc's transpiled SQLite (FTS re-indexing of a
// growing 100 KB block on every update) about tenfold. Under -race the
// cross-process test runs at a fifth of its size; .ci/run also runs it at
// full size without -race.
const raceScale = 5

// raceDetector: timings measure the detector's cost, not the code's.
const raceDetector = true
