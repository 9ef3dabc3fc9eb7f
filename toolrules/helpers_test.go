package toolrules

import (
	"sync"
	"time"
)

// fakeClock is an injectable clock for Cooldown tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mixedRules uses every kind once or more, and validates cleanly.
func mixedRules() []Rule {
	return []Rule{
		RequiresConsent("delete_file"),
		Cooldown("web", 30*time.Second),
		ExclusiveGroup("fast_answer", "deep_research"),
		RequiredBeforeExit("save"),
		RequiresFollowing("plan", "execute"),
		RequiresPrior("write", "read", "plan"),
		MaxCalls("api_request", 3),
		ContinueLoop("search"),
		ExitLoop("send_message"),
		StartConstraint("context"),
	}
}
