//go:build race

package analyzer

// underRace: the race detector slows the transpiled SQLite tenfold or more.
const underRace = true
