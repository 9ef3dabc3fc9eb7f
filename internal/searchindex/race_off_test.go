//go:build !race

package searchindex_test

const raceEnabled = false
