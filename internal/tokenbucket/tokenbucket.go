// Package tokenbucket is the token bucket that paces engram serve's
// requests per token and a /sync connection's frames.
package tokenbucket

import "time"

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
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// Refund puts back a token taken for something that turned out not to
// count (engram serve reserves a failed-login token before a lookup and
// returns it when the credential is good), never past burst.
func (b *Bucket) Refund(burst float64) { b.tokens = min(burst, b.tokens+1) }
