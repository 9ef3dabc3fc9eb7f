package syncrepo

import (
	"context"
	"sync"
	"time"

	"github.com/engram-go/engram/internal/tokenbucket"
)

// Budget is the work the peers of one credential may make the server do,
// shared by all their connections (Options.Budget): automerge operations
// applied per second, and bytes held for them (refused changes, changes
// waiting for their dependencies, private copies of documents). Without a
// shared Budget each connection has its own, and a client that opens many
// connections multiplies it. A Budget is safe for concurrent use.
type Budget struct {
	rate, burst float64
	maxHeld     int64

	mu     sync.Mutex
	bucket *tokenbucket.Bucket
	held   int64
	// waiting are the operations of changes the credential's
	// connections keep waiting for their dependencies: one message, on
	// any of them, may complete them all.
	waiting int64
}

// Default budget of a credential's peers.
const (
	// DefaultOpsPerSecond is the automerge operations a credential's
	// peers may have applied per second, and DefaultOpsBurst how many at
	// once: a full rewrite of a block of the default 5,000-character limit
	// is about 10,000.
	DefaultOpsPerSecond = 50_000
	DefaultOpsBurst     = 100_000
	// DefaultMaxMessageOps is what the changes of one sync message may
	// apply at most (Options.MaxMessageOps): one burst.
	DefaultMaxMessageOps = DefaultOpsBurst
	// DefaultMaxHeldBytes is what the server holds for a credential's
	// peers at most (refused and unappliable changes, private copies).
	DefaultMaxHeldBytes = 16 << 20
)

// NewBudget returns a budget of opsPerSecond operations a second with a
// burst of opsBurst, holding at most maxHeldBytes; a value ≤ 0 means its
// default.
func NewBudget(opsPerSecond float64, opsBurst int, maxHeldBytes int64) *Budget {
	if opsPerSecond <= 0 {
		opsPerSecond = DefaultOpsPerSecond
	}
	if opsBurst <= 0 {
		opsBurst = DefaultOpsBurst
	}
	if maxHeldBytes <= 0 {
		maxHeldBytes = DefaultMaxHeldBytes
	}
	return &Budget{rate: opsPerSecond, burst: float64(opsBurst), maxHeld: maxHeldBytes,
		bucket: tokenbucket.Full(float64(opsBurst), time.Now())}
}

// spend takes ops operations from b, waiting until they are there or ctx
// ends. A spend larger than the burst (a copy of a large block, or a
// message under a MaxMessageOps above the burst) waits for a full bucket
// and leaves it in debt, so it still passes, one at a time.
func (b *Budget) spend(ctx context.Context, ops int64) error {
	for {
		b.mu.Lock()
		need := min(float64(ops), b.burst)
		wait := b.bucket.WaitFor(time.Now(), need, b.rate, b.burst)
		if wait == 0 {
			b.bucket.ChargeN(time.Now(), float64(ops), b.rate, b.burst)
			b.mu.Unlock()
			return nil
		}
		b.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// hold adds delta bytes to what b holds (a negative delta gives them back)
// and reports whether it is now over its cap.
func (b *Budget) hold(delta int64) (over bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held += delta
	return b.held > b.maxHeld
}

// addWaitingOps adds delta to the operations b's connections keep
// waiting.
func (b *Budget) addWaitingOps(delta int64) {
	if delta == 0 {
		return
	}
	b.mu.Lock()
	b.waiting += delta
	b.mu.Unlock()
}

// waitingOps is the operations b's connections keep waiting.
func (b *Budget) waitingOps() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// Held is the bytes b holds now (for tests and diagnostics).
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}
