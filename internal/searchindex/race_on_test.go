//go:build race

package searchindex_test

// raceEnabled: the race detector slows the transpiled SQLite tenfold or
// more, so the long quality test skips under -race.
const raceEnabled = true
