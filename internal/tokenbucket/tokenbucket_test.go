package tokenbucket_test

import (
	"math"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/tokenbucket"
)

func TestBucket(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := tokenbucket.Full(2, t0)
	for i := range 2 {
		if b.Take(t0, 1, 2) != 0 {
			t.Fatalf("request %d of a burst of 2 refused", i+1)
		}
	}
	if wait := b.Take(t0, 1, 2); wait < 900*time.Millisecond || wait > time.Second {
		t.Fatalf("third at once: wait %v, want ~1s", wait)
	}
	if b.Take(t0.Add(time.Second), 1, 2) != 0 {
		t.Fatal("refill after 1s refused")
	}
	// Idle time refills only up to the burst.
	b.Take(t0.Add(time.Hour), 1, 2)
	b.Take(t0.Add(time.Hour), 1, 2)
	if b.Take(t0.Add(time.Hour), 1, 2) == 0 {
		t.Fatal("more than the burst after a long idle")
	}
}

func TestWaitAndCharge(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := tokenbucket.Full(2, t0)
	for i := range 3 {
		if b.Wait(t0, 1, 2) != 0 {
			t.Fatalf("wait %d refused a full bucket: Wait took a token", i)
		}
	}
	// Three charges on a burst of 2 leave a debt of one: a token is there
	// again only after 2 s.
	for range 3 {
		b.Charge(t0, 1, 2)
	}
	if w := b.Wait(t0.Add(time.Second), 1, 2); w < 900*time.Millisecond || w > time.Second {
		t.Fatalf("after 1 s with a debt of 1: wait %v, want ~1s", w)
	}
	if b.Wait(t0.Add(2*time.Second), 1, 2) != 0 {
		t.Fatal("after 2 s: still waiting")
	}
}

func TestTakeN(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := tokenbucket.Full(10, t0)
	if b.TakeN(t0, 7, 1, 10) != 0 {
		t.Fatal("7 of a full bucket of 10 refused")
	}
	// 3 left: 4 at once is refused whole, taking none.
	if w := b.TakeN(t0, 4, 1, 10); w < 900*time.Millisecond || w > time.Second {
		t.Fatalf("4 with 3 left: wait %v, want ~1s", w)
	}
	if b.TakeN(t0, 3, 1, 10) != 0 {
		t.Fatal("the 3 left refused: a refused TakeN took some")
	}
	if b.Take(t0, 1, 10) == 0 {
		t.Fatal("a token taken from an empty bucket")
	}
}

// A wait too long for a time.Duration is the longest one, never a
// negative one (which callers read as no wait).
func TestBucketWaitPastDuration(t *testing.T) {
	t0 := time.Unix(0, 0)
	for _, rate := range []float64{1e-9, 1e-300} {
		b := tokenbucket.Full(1, t0)
		if got := b.WaitFor(t0, 8<<20, rate, 16<<20); got != time.Duration(math.MaxInt64) {
			t.Fatalf("rate %g: WaitFor = %v, want the longest wait", rate, got)
		}
		if got := b.TakeN(t0, 8<<20, rate, 16<<20); got != time.Duration(math.MaxInt64) {
			t.Fatalf("rate %g: TakeN = %v, want the longest wait", rate, got)
		}
	}
}

// An infinite rate is no limit: a bucket refills to its burst at once,
// even within the same instant (where 0 s × ∞ is NaN).
func TestBucketInfiniteRate(t *testing.T) {
	t0 := time.Unix(0, 0)
	inf := math.Inf(1)
	b := tokenbucket.Full(4, t0)
	for i := range 10 {
		if wait := b.TakeN(t0, 3, inf, 4); wait != 0 {
			t.Fatalf("take %d at rate +Inf: wait %v", i, wait)
		}
	}
	b.ChargeN(t0, 100, inf, 4)
	if wait := b.WaitFor(t0, 4, inf, 4); wait != 0 {
		t.Fatalf("after a debt at rate +Inf: wait %v", wait)
	}
}
