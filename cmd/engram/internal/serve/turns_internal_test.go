package serve

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Turns come in arrival order; a waiter whose context ends leaves the
// queue (its place free for another); one whose turn came as its context
// ended hands the turn on; a line goes once nothing runs or waits.
func TestTurnsOrder(t *testing.T) {
	ctx := context.Background()
	tr := newTurns(1, 3)
	done, err := tr.take(ctx, 7, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	queued := make(chan struct{}, 3)
	gone, leave := context.WithCancel(ctx)
	for i := range 3 {
		c := ctx
		if i == 1 {
			c = gone
		}
		wg.Go(func() {
			d, err := tr.take(c, 7, 1, func() { queued <- struct{}{} })
			if err != nil {
				if i != 1 || !errors.Is(err, context.Canceled) {
					t.Errorf("waiter %d: %v", i, err)
				}
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			d()
		})
		select { // one at a time, so that arrival order is i's
		case <-queued:
		case <-time.After(5 * time.Second):
			t.Fatalf("waiter %d did not queue behind a running turn", i)
		}
	}
	if _, err := tr.take(ctx, 7, 1, nil); !errors.Is(err, errTokenBusy) {
		t.Fatalf("a fourth waiter with a queue of 3: %v, want errTokenBusy", err)
	}
	// Another token is not in this line.
	other, err := tr.take(ctx, 8, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	other()
	leave()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, waiting := tr.count(); waiting == 2 {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the waiter whose context ended is still queued")
		}
	}
	done()
	done() // a second call ends nothing more
	wg.Wait()
	if len(order) != 2 || order[0] != 0 || order[1] != 2 {
		t.Fatalf("turns went to %v, want [0 2]", order)
	}
	if n, _ := tr.count(); n != 0 {
		t.Fatalf("%d lines left", n)
	}
}

// A waiter whose context ends as its turn comes either takes the turn
// and ends it or hands it on: no turn is lost.
func TestTurnsCancelRacesHandOff(t *testing.T) {
	ctx := context.Background()
	tr := newTurns(1, 1)
	for range 2000 {
		done, err := tr.take(ctx, 1, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		c, cancel := context.WithCancel(ctx)
		waiting := make(chan struct{})
		result := make(chan error, 1)
		go func() {
			d, err := tr.take(c, 1, 1, func() { close(waiting) })
			if err == nil {
				d()
			}
			result <- err
		}()
		<-waiting
		go cancel()
		done()
		<-result
		if n, w := tr.count(); n != 0 || w != 0 {
			t.Fatalf("%d lines, %d waiting after both ended", n, w)
		}
	}
}

// Waiters canceled around the moment they are handed turns never break
// the limit, lose turns or leave a line behind.
func TestTurnsCancelRace(t *testing.T) {
	for _, limit := range []int{1, 2, 3} {
		tr := newTurns(limit, 8)
		var held [3]atomic.Int64
		var wg sync.WaitGroup
		for g := range 64 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), uint64(limit)))
				for range 300 {
					n := 1 + r.IntN(limit+1)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(50))*time.Microsecond)
					done, err := tr.take(ctx, int64(g%3), n, nil)
					cancel()
					if err != nil {
						continue
					}
					if h := held[g%3].Add(int64(min(n, limit))); h > int64(limit) {
						t.Errorf("%d turns of one token held, limit %d", h, limit)
					}
					time.Sleep(time.Duration(r.IntN(20)) * time.Microsecond)
					held[g%3].Add(-int64(min(n, limit)))
					done()
					done()
				}
			})
		}
		wg.Wait()
		if n, w := tr.count(); n != 0 || w != 0 {
			t.Fatalf("limit %d: %d lines, %d waiting left", limit, n, w)
		}
	}
}

// Frames wait in line without counting against the queue, whether they
// get their turn or give up waiting: after frames came and went, the
// queue still takes exactly its size of requests.
func TestTurnsFramesOutsideQueue(t *testing.T) {
	ctx := context.Background()
	tr := newTurns(1, 2)
	hold, err := tr.take(ctx, 7, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 8)
	onWait := func() { waiting <- struct{}{} }
	gone, leave := context.WithCancel(ctx)
	quit := make(chan error, 1)
	go func() { _, err := tr.frameTurn(gone, 7, onWait); quit <- err }() // gives up
	<-waiting
	served := make(chan func(), 3)
	for range 3 { // three frames, more than the queue
		go func() {
			d, err := tr.frameTurn(ctx, 7, onWait)
			if err != nil {
				t.Error(err)
				return
			}
			served <- d
		}()
		<-waiting
	}
	leave()
	if err := <-quit; !errors.Is(err, context.Canceled) {
		t.Fatalf("the frame that gave up: %v", err)
	}
	var calls []chan error
	for i := range 3 { // the queue's 2 wait, the third is refused
		c := make(chan error, 1)
		calls = append(calls, c)
		go func() {
			d, err := tr.take(ctx, 7, 1, onWait)
			if err == nil {
				d()
			}
			c <- err
		}()
		if i < 2 {
			<-waiting
		}
	}
	if err := <-calls[2]; !errors.Is(err, errTokenBusy) {
		t.Fatalf("a third request past a queue of 2 (frames waiting beside them): %v, want errTokenBusy", err)
	}
	hold()
	for range 3 { // the frames are served, each ending its turn
		(<-served)()
	}
	for _, c := range calls[:2] {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	if tokens, waiters := tr.count(); tokens != 0 || waiters != 0 {
		t.Fatalf("after everything ended: %d lines, %d waiting", tokens, waiters)
	}
	if l := tr.by[7]; l != nil {
		t.Fatalf("line left: %+v", l)
	}
}
