package blocks

import "testing"

// fewestFitting finds where fitting starts from any guess, in few probes
// when the guess is right.
func TestFewestFitting(t *testing.T) {
	for lo := 0; lo < 4; lo++ {
		for hi := lo - 1; hi < 12; hi++ {
			for start := lo; start <= hi+1; start++ { // fits from start on; hi+1: none
				for guess := lo - 2; guess <= hi+2; guess++ {
					probes := 0
					got := fewestFitting(lo, hi, guess, func(k int) bool {
						probes++
						if k < lo || k > hi {
							t.Fatalf("probed %d outside [%d, %d]", k, lo, hi)
						}
						return k >= start
					})
					if got != start {
						t.Fatalf("lo %d hi %d start %d guess %d: got %d", lo, hi, start, guess, got)
					}
					if guess == start && start <= hi && probes > 2 {
						t.Errorf("lo %d hi %d: a right guess took %d probes", lo, hi, probes)
					}
				}
			}
		}
	}
}
