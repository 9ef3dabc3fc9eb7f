package syncrepo

import (
	"context"
	"testing"
	"time"
)

// A Budget's operations refill at its rate: past its burst, a spend waits;
// one larger than the burst waits for a full bucket and goes into debt;
// a cancelled context ends the wait.
func TestBudgetSpend(t *testing.T) {
	ctx := context.Background()
	b := NewBudget(10_000, 10_000, 0)
	start := time.Now()
	if err := b.spend(ctx, 8_000); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 300*time.Millisecond { // (a busy machine)
		t.Fatalf("a spend within the burst waited %v", d)
	}
	if err := b.spend(ctx, 8_000); err != nil { // 6,000 short: 0.6 s
		t.Fatal(err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("a spend past the burst waited only %v", d)
	}
	if err := b.spend(ctx, 50_000); err != nil { // bigger than the burst: a full bucket, then debt
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := b.spend(cctx, 1); err == nil {
		t.Fatal("a spend in debt did not wait")
	}
	if over := b.hold(DefaultMaxHeldBytes + 1); !over {
		t.Fatal("holding past the cap is not over")
	}
	if over := b.hold(-DefaultMaxHeldBytes - 1); over || b.Held() != 0 {
		t.Fatalf("held %d after giving back", b.Held())
	}
}
