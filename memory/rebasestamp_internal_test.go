package memory

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Stamps read without Flush while switches land late: every write moves
// the stamp, no stamp comes back, and the switches that land between two
// reads with no write between are counted (a move the conformance test's
// Flush hides).
func TestStampWithLateSwitches(t *testing.T) {
	ctx := context.Background()
	s := rebasingStore(t, filepath.Join(t.TempDir(), "r.db"))
	s.rebaseBuilt = func(*entry) { time.Sleep(5 * time.Millisecond) } // builds land late
	stamp := func() BlocksStamp {
		st, err := s.Agent("ann").BlocksStamp(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	seen := map[BlocksStamp]int{}
	cur := stamp()
	seen[cur] = 0
	spurious := 0
	for i := 1; i <= 150; i++ {
		if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(i)); err != nil {
			t.Fatal(err)
		}
		next := stamp()
		if next == cur {
			t.Fatalf("write %d: stamp unchanged %+v", i, next)
		}
		if w, ok := seen[next]; ok {
			t.Fatalf("write %d: stamp %+v repeats the one after write %d", i, next, w)
		}
		seen[next], cur = i, next
		if i%5 == 0 {
			time.Sleep(15 * time.Millisecond)
			if again := stamp(); again != cur {
				spurious++
				if w, ok := seen[again]; ok {
					t.Fatalf("after write %d: stamp %+v repeats the one after write %d", i, again, w)
				}
				seen[again], cur = i, again
			}
		}
	}
	ep, _ := epochNow(t, s)
	t.Logf("%d epochs; the stamp moved %d times with no call between (a switch landing after its write returned)", ep, spurious)
}
