//go:build race

package testenv

// Race reports whether the tests were built with the race detector.
const Race = true
