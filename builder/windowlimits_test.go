package builder

import "testing"

// A window of fewer than four tokens has a quarter of 0 tokens: a zero
// field inherits the 8k defaults, so the reply reserve and the memory
// budget were far larger than the window they were to fit in.
func TestWindowLimitsTiny(t *testing.T) {
	for _, n := range []int{1, 3, 4, 100, 4 * DefaultReservedResponseTokens} {
		c := ContextConfig{ModelOverrides: map[string]ModelContextLimits{"local": WindowLimits(n)}}.withDefaults()
		l := c.LimitsFor("local")
		if l.MaxTokens != n || l.ReservedResponseTokens > n || l.MemoryTokens > n {
			t.Errorf("window %d: limits %+v exceed it", n, l)
		}
	}
	// No window (0) keeps the defaults.
	if l := WindowLimits(0); l != (ModelContextLimits{}) {
		t.Errorf("window 0: %+v, want the zero limits (defaults)", l)
	}
}
