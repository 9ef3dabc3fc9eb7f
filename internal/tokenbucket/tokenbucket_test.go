package tokenbucket_test

import (
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

func TestRefund(t *testing.T) {
	t0 := time.Unix(0, 0)
	b := tokenbucket.Full(1, t0)
	if b.Take(t0, 1, 1) != 0 {
		t.Fatal("first take refused")
	}
	b.Refund(1)
	if b.Take(t0, 1, 1) != 0 {
		t.Fatal("take after a refund refused")
	}
	// A refund never fills past the burst.
	b.Refund(1)
	b.Refund(1)
	b.Take(t0, 1, 1)
	if b.Take(t0, 1, 1) == 0 {
		t.Fatal("two refunds held more than the burst")
	}
}
