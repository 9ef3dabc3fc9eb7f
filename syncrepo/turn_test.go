package syncrepo_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/syncrepo"
)

// A session handles each frame in a turn (Options.Turn): nothing is
// answered while the turn is withheld, every turn taken is released, and
// a session waiting for one stops when its peer's connection ends.
func TestFramesHandledInTurns(t *testing.T) {
	store := openStore(t)
	grant := make(chan struct{})
	var taken, released atomic.Int64
	turn := func(ctx context.Context) (func(), error) {
		select {
		case <-grant:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		taken.Add(1)
		return func() { released.Add(1) }, nil
	}
	p, done := serve(t, store, &syncrepo.Options{Turn: turn})
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	select {
	case b := <-p.out:
		t.Fatalf("a frame was answered without a turn: %q", b)
	case <-time.After(200 * time.Millisecond):
	}
	close(grant) // every turn from now on is granted at once
	if m := p.recv(t); m.Type != syncrepo.TypePeer {
		t.Fatalf("join answered %q, want peer", m.Type)
	}
	// The release follows the answer's write.
	for deadline := time.Now().Add(5 * time.Second); released.Load() != taken.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d turns taken, %d released", taken.Load(), released.Load())
		}
	}
	if taken.Load() != 1 {
		t.Fatalf("%d turns taken for one frame, want 1", taken.Load())
	}

	// A session waiting for its turn ends with its connection.
	block := func(ctx context.Context) (func(), error) { <-ctx.Done(); return nil, ctx.Err() }
	p2, done2 := serve(t, store, &syncrepo.Options{Turn: block})
	p2.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	time.Sleep(50 * time.Millisecond)
	close(p2.in)
	select {
	case <-done2:
	case <-time.After(5 * time.Second):
		t.Fatal("a session waiting for a turn outlived its connection")
	}
	close(p.in)
	<-done
}
