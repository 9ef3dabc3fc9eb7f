//go:build !race

package memory_test

const raceScale = 1

const raceDetector = false
