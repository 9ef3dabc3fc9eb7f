//go:build race

package search

// underRace: the race detector slows the transpiled SQLite tenfold or more.
const underRace = true
