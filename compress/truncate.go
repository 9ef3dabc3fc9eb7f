package compress

import (
	"context"
	"fmt"
)

// Truncate keeps the most recent complete batches, whole, while they fit
// KeepRecent messages (with the active batch counted first) and the token
// budget, and drops the older ones. It stops at the first batch that does
// not fit, so the kept history is a contiguous recent stretch.
type Truncate struct {
	// KeepRecent caps the kept messages; 0 means no cap beyond
	// Input.MaxMessages and the token budget.
	KeepRecent int
}

// Compress implements MessageCompressor.
func (t Truncate) Compress(ctx context.Context, in Input) (Result, error) {
	if t.KeepRecent < 0 {
		return Result{}, fmt.Errorf("%w: Truncate.KeepRecent %d is negative", ErrInvalid, t.KeepRecent)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	a := analyze(in)
	s := newSelection(in, a)
	lim := limits{budget: in.TokenBudget, maxMsgs: minPositive(t.KeepRecent, in.MaxMessages)}
	for _, u := range a.units {
		if u.state == stateActive {
			lim.add(u)
		}
	}
	for i := len(a.units) - 1; i >= 0; i-- {
		u := a.units[i]
		if u.state != stateComplete {
			continue
		}
		if !lim.fits(u) {
			break
		}
		lim.add(u)
		s.mark(u, outKept)
	}
	return s.result(nil, in.TokenBudget, in.MaxMessages), nil
}
