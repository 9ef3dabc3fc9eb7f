package syncrepo

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
)

// A document's copy is loaded outside the lock over all copies: while one
// document's load runs, another document's sessions acquire theirs; a
// second session of the loading document waits for that load and shares
// its copy (or gives up with its context); a failed load is not kept.
func TestMirrorsLoadHoldsUpNoOtherDocument(t *testing.T) {
	ms := NewMirrors()
	ctx := context.Background()
	started, finish := make(chan struct{}), make(chan struct{})
	type got struct {
		sh     *shared
		loaded bool
		err    error
	}
	slow := make(chan got, 1)
	go func() {
		sh, loaded, err := ms.acquire(ctx, "big", func() (*automerge.Doc, error) {
			close(started)
			<-finish
			return automerge.New(), nil
		})
		slow <- got{sh, loaded, err}
	}()
	<-started

	other := make(chan error, 1)
	go func() {
		_, loaded, err := ms.acquire(ctx, "small", func() (*automerge.Doc, error) { return automerge.New(), nil })
		if err == nil && !loaded {
			err = errors.New("not loaded by its first acquire")
		}
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("acquiring another document waited for a load in progress")
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := ms.acquire(cctx, "big", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait for the load in progress: err = %v", err)
	}
	second := make(chan got, 1)
	go func() {
		sh, loaded, err := ms.acquire(ctx, "big", func() (*automerge.Doc, error) { return nil, errors.New("loaded twice") })
		second <- got{sh, loaded, err}
	}()
	select {
	case g := <-second:
		t.Fatalf("a second session of the loading document did not wait for the load: %+v", g)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	a, b := <-slow, <-second
	if a.err != nil || b.err != nil || !a.loaded || b.loaded || a.sh != b.sh || a.sh.doc == nil {
		t.Fatalf("first %+v, second %+v: want one copy, loaded by the first", a, b)
	}
	ms.release(a.sh)
	ms.release(b.sh)
	if n := ms.Len(); n != 1 {
		t.Fatalf("%d copies held, want 1 (the small document's)", n)
	}

	boom := errors.New("boom")
	if _, _, err := ms.acquire(ctx, "bad", func() (*automerge.Doc, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed load: err = %v", err)
	}
	if ms.has("bad") {
		t.Fatal("a failed load is kept")
	}
	if _, loaded, err := ms.acquire(ctx, "bad", func() (*automerge.Doc, error) { return automerge.New(), nil }); err != nil || !loaded {
		t.Fatalf("the next acquire after a failed load: loaded %v, err %v", loaded, err)
	}
}

// Acquires and releases of a few keys from many goroutines, with loads
// that fail or are slow and waits that are cancelled, leave no copy held
// and never hand out a copy that is not ready.
func TestMirrorsConcurrentUse(t *testing.T) {
	ms := NewMirrors()
	keys := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 300 {
				key := keys[r.IntN(len(keys))]
				ctx, cancel := context.WithCancel(context.Background())
				if r.IntN(4) == 0 {
					d := time.Duration(r.IntN(200)) * time.Microsecond
					go func() { time.Sleep(d); cancel() }()
				}
				fail := r.IntN(3) == 0
				slow := time.Duration(r.IntN(300)) * time.Microsecond
				sh, _, err := ms.acquire(ctx, key, func() (*automerge.Doc, error) {
					time.Sleep(slow)
					if fail {
						return nil, errors.New("fail")
					}
					return automerge.New(), nil
				})
				cancel()
				if err != nil {
					continue
				}
				if sh.doc == nil {
					t.Error("a copy handed out before it was loaded")
				}
				sh.mu.Lock()
				_ = sh.doc.Heads()
				sh.mu.Unlock()
				ms.release(sh)
			}
		}()
	}
	wg.Wait()
	if n := ms.Len(); n != 0 {
		t.Fatalf("%d copies held after every use was released", n)
	}
}
