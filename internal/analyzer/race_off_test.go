//go:build !race

package analyzer

const underRace = false
