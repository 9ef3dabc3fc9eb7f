package groupcommit

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestBackoffGrowsWithTries(t *testing.T) {
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 50 * time.Microsecond, 250 * time.Microsecond},
		{31, 50 * time.Microsecond, 250 * time.Microsecond},
		{32, 100 * time.Microsecond, 500 * time.Microsecond},
		{64, 200 * time.Microsecond, time.Millisecond},
		{96, 400 * time.Microsecond, 2 * time.Millisecond},
		{10_000, 400 * time.Microsecond, 2 * time.Millisecond},
	} {
		for range 200 {
			if d := backoff(tc.attempt); d < tc.min || d >= tc.max {
				t.Fatalf("backoff(%d) = %v, want in [%v, %v)", tc.attempt, d, tc.min, tc.max)
			}
		}
	}
}

// A pause of a lone write whose caller gave up returns at once, however
// long it was to be.
func TestPauseReturnsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{time.Millisecond, time.Hour} {
		t0 := time.Now()
		pause(ctx, d)
		if took := time.Since(t0); took > 50*time.Millisecond {
			t.Errorf("pause(cancelled, %v) took %v", d, took)
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	pause(ctx, time.Hour)
	if took := time.Since(t0); took > time.Second {
		t.Errorf("pause(5 ms deadline, 1 h) took %v", took)
	}
}

// A short pause is about as long as asked, not the runtime timers'
// millisecond (median of 41 pauses of 100 µs; they took 1.04 ms on
// Linux through time.Sleep).
func TestShortPauseIsShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the thread sleeps only on Linux: elsewhere the runtime's timers wait")
	}
	var took time.Duration
	for try := range 3 { // a machine loaded by other tests may delay a run
		ds := make([]time.Duration, 41)
		for i := range ds {
			t0 := time.Now()
			pause(context.Background(), 100*time.Microsecond)
			ds[i] = time.Since(t0)
		}
		slices.Sort(ds)
		if took = ds[len(ds)/2]; took < 600*time.Microsecond {
			return
		}
		t.Logf("try %d: median %v", try+1, took)
	}
	t.Errorf("a 100 µs pause took %v (median), want < 600 µs", took)
}
