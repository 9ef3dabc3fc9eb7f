// Package tokenbucket is the token bucket that paces engram serve's
// requests per token and a /sync connection's frames.
package tokenbucket

import (
	"math"
	"time"
)

// Bucket is a token bucket: rate per second refill up to burst. Callers
// serialize their use of one.
type Bucket struct {
	tokens float64
	at     time.Time
}

// Full returns a bucket holding burst tokens at now.
func Full(burst float64, now time.Time) *Bucket { return &Bucket{tokens: burst, at: now} }

// Take removes one token, or returns how long until one is there.
func (b *Bucket) Take(now time.Time, rate, burst float64) time.Duration {
	return b.TakeN(now, 1, rate, burst)
}

// TakeN removes n tokens at once, or none and returns how long until n
// are there (engram serve's JSON-RPC batch of n messages costs n
// requests, paid before any runs). An n beyond burst is never there: the
// caller caps it.
func (b *Bucket) TakeN(now time.Time, n, rate, burst float64) time.Duration {
	b.refill(now, rate, burst)
	if b.tokens >= n {
		b.tokens -= n
		return 0
	}
	return until(n-b.tokens, rate)
}

// Wait returns how long until a token is there, 0 if one is now, taking
// none.
func (b *Bucket) Wait(now time.Time, rate, burst float64) time.Duration {
	b.refill(now, rate, burst)
	if b.tokens >= 1 {
		return 0
	}
	return until(1-b.tokens, rate)
}

// Charge removes one token even when none is left: the debt delays later
// takes. engram serve checks a client's failed-login budget with Wait
// before a lookup and charges only a failure, so concurrent failures all
// count and successes cost nothing.
func (b *Bucket) Charge(now time.Time, rate, burst float64) {
	b.refill(now, rate, burst)
	b.tokens--
}

func (b *Bucket) refill(now time.Time, rate, burst float64) {
	if math.IsInf(rate, 1) { // no limit: 0 s × ∞ would be NaN
		b.tokens, b.at = burst, now
		return
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
}

// WaitFor returns how long until n tokens are there, 0 if they are now,
// taking none.
func (b *Bucket) WaitFor(now time.Time, n, rate, burst float64) time.Duration {
	b.refill(now, rate, burst)
	if b.tokens >= n {
		return 0
	}
	return until(n-b.tokens, rate)
}

// ChargeN removes n tokens even when fewer are left: the debt delays later
// takes.
func (b *Bucket) ChargeN(now time.Time, n, rate, burst float64) {
	b.refill(now, rate, burst)
	b.tokens -= n
}

// until is how long rate takes to refill short tokens, at most the
// longest time.Duration: a float past int64's range would convert to any
// value, a negative one (no wait) included.
func until(short, rate float64) time.Duration {
	d := short / rate * float64(time.Second)
	if !(d < math.MaxInt64) { // past the range, or NaN
		return math.MaxInt64
	}
	return time.Duration(d)
}
