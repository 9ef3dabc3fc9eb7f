package serve_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/syncrepo"
)

// frames reads c's frames into a channel until c fails (then closed):
// reading with a context that ends would close c.
func frames(c *websocket.Conn) <-chan []byte {
	ch := make(chan []byte, 16)
	go func() {
		defer close(ch)
		for {
			_, b, err := c.Read(context.Background())
			if err != nil {
				return
			}
			ch <- b
		}
	}()
	return ch
}

// syncPeer opens a /sync connection of tok, closed when the test ends,
// and returns it with its frames (nil when reading is false: a peer that
// reads nothing, and so answers no close).
func (d *door) syncPeer(t *testing.T, tok string, reading bool) (*websocket.Conn, <-chan []byte) {
	t.Helper()
	c, _, err := dialSync(t.Context(), d.url, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	if !reading {
		return c, nil
	}
	return c, frames(c)
}

// sendJoin sends c a join message.
func sendJoin(t *testing.T, c *websocket.Conn) {
	t.Helper()
	b, err := syncrepo.EncodeMessage(syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{syncrepo.ProtocolVersion}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(t.Context(), websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
}

// joinedPeer is syncPeer's reading peer, joined.
func (d *door) joinedPeer(t *testing.T, tok string) (*websocket.Conn, <-chan []byte) {
	t.Helper()
	c, in := d.syncPeer(t, tok, true)
	sendJoin(t, c)
	if _, ok := <-in; !ok {
		t.Fatal("join not answered")
	}
	return c, in
}

// beginFrame sends the start of a frame it never finishes: past the
// client's write buffer, so the server has its header.
func beginFrame(t *testing.T, c *websocket.Conn) {
	t.Helper()
	w, err := c.Writer(t.Context(), websocket.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte{0xa0}, 64<<10)); err != nil {
		t.Fatal(err)
	}
}

// holdTurn starts the hold tool on session sid of tok and waits until it
// runs, holding the token's turn (at TokenConcurrency 1) until
// d.hold.release is closed; the call's status comes on the channel.
func (d *door) holdTurn(t *testing.T, tok, sid string) <-chan int {
	t.Helper()
	held := make(chan int, 1)
	go func() { st, _ := d.callStatus(t.Context(), t, tok, sid, holdCall); held <- st }()
	waitFor(t, "the held call to hold its token's turn", func() bool { return d.hold.running.Load() == 1 })
	return held
}

// A token's /sync frames take the turns its MCP requests take: while
// ada's call holds her only turn, her frame waits unanswered and bob's
// is answered; once the call ends, hers is.
func TestSyncFramesTakeTokenTurns(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	bob := d.token(t, accesstoken.Spec{Agent: "bob"})
	sid := d.session(t, ada)
	ac, aIn := d.syncPeer(t, ada, true)
	bc, bIn := d.syncPeer(t, bob, true)

	held := d.holdTurn(t, ada, sid)
	sendJoin(t, ac)
	sendJoin(t, bc)
	select {
	case <-bIn:
	case <-time.After(5 * time.Second):
		t.Fatal("bob's join waited for ada's turn")
	}
	select {
	case b := <-aIn:
		t.Fatalf("ada's join was answered while her call held her turn: %q", b)
	case <-time.After(300 * time.Millisecond):
	}
	close(d.hold.release)
	if st := <-held; st != 200 {
		t.Fatalf("the held call: status %d", st)
	}
	select {
	case b, ok := <-aIn:
		if m, err := syncrepo.DecodeMessage(b); !ok || err != nil || m.Type != syncrepo.TypePeer {
			t.Fatalf("ada's join answered %q (%v)", b, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ada's join was not answered once her turn was free")
	}
}

// A frame whose body stops arriving once it has its turn has
// FrameReadTimeout to finish: then the connection is closed and the
// token's turn is free again.
func TestSyncFrameBodyTimeout(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1})
	serve.SetFrameReadTimeout(d.h, 300*time.Millisecond)
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	c, in := d.joinedPeer(t, ada)
	beginFrame(t, c)
	start := time.Now()
	select {
	case _, ok := <-in:
		if ok {
			t.Fatal("a frame begun and never finished was answered")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a frame stalled in its turn kept its connection open")
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("the stalled frame's connection closed after %v, before its timeout", took)
	}
	if st, ok := d.callStatus(t.Context(), t, ada, sid, echoCall(1)); st != 200 || !ok {
		t.Fatalf("ada's call after the stalled frame: status %d, ok %v", st, ok)
	}
}

// /sync frames waiting for a turn wait in line but not against the
// queue: a token whose peers have TokenQueue frames waiting still has its
// MCP call wait for its turn, not refused 429.
func TestSyncFramesOutsideMCPQueue(t *testing.T) {
	const queue = 2
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: queue})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	s1, s2 := d.session(t, ada), d.session(t, ada)
	held := d.holdTurn(t, ada, s1)
	for range queue {
		c, _ := d.syncPeer(t, ada, true)
		sendJoin(t, c)
	}
	waitFor(t, "the frames to wait for ada's turn", func() bool { _, w := serve.Turns(d.h); return w == queue })

	got := make(chan int, 1)
	go func() { st, _ := d.callStatus(t.Context(), t, ada, s2, echoCall(1)); got <- st }()
	select {
	case st := <-got:
		t.Fatalf("ada's MCP call, with no other MCP call of hers waiting but %d sync frames: status %d at once (want it to wait its turn)", queue, st)
	case <-time.After(500 * time.Millisecond):
	}
	close(d.hold.release)
	<-held
	if st := <-got; st != 200 {
		t.Fatalf("ada's MCP call: status %d", st)
	}
}

// A connection whose frame waits for its turn reads nothing, so a peer
// gone meanwhile is noticed only when the wait ends: it ends after
// FrameReadTimeout, however long the token's other work holds the turn,
// and the connection (counted against SyncMaxTokenConnections) closes.
func TestSyncTurnWaitBounded(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1})
	serve.SetFrameReadTimeout(d.h, 300*time.Millisecond)
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	c, _ := d.joinedPeer(t, ada)
	held := d.holdTurn(t, ada, sid)
	beginFrame(t, c)
	waitFor(t, "the frame to wait for a turn", func() bool { _, n := serve.Turns(d.h); return n == 1 })
	c.CloseNow() // the peer goes away
	deadline := time.Now().Add(3 * time.Second)
	for d.h.SyncConnections() != 0 {
		if time.Now().After(deadline) {
			_, n := serve.Turns(d.h)
			t.Fatalf("3 s after its peer went away, the connection is still open (%d open, %d waiting for ada's turn)", d.h.SyncConnections(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(d.hold.release)
	<-held
}

// A frame's body is read in its token's turn. While ada's call holds her
// turn, a frame over the read limit is not read (the connection stays
// open); once the call ends, it is, and the connection closes 1009,
// leaving no turn.
func TestSyncFrameBodyReadInTurn(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, SyncMaxMessageBytes: 4 << 10})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	c, in := d.syncPeer(t, ada, true)
	held := d.holdTurn(t, ada, sid)
	if err := c.Write(t.Context(), websocket.MessageBinary, bytes.Repeat([]byte{0xa0}, 8<<10)); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-in:
		t.Fatalf("a frame over the limit was read while its token's turn was held (answer %v)", ok)
	case <-time.After(300 * time.Millisecond):
	}
	close(d.hold.release)
	<-held
	select {
	case _, ok := <-in:
		if ok {
			t.Fatal("answered an over-limit frame")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("over-limit frame not read once the turn was free")
	}
	waitFor(t, "no turn, no connection", func() bool { n, _ := serve.Turns(d.h); return n == 0 && d.h.SyncConnections() == 0 })
}

// A frame over the read limit (1009), a text frame, a fragmented frame
// and a quiet spell longer than FrameReadTimeout between complete frames
// leave no turn taken and close no healthy connection.
func TestSyncFrameEdges(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, SyncMaxMessageBytes: 4 << 10})
	serve.SetFrameReadTimeout(d.h, 200*time.Millisecond)
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	c, in := d.joinedPeer(t, ada)
	time.Sleep(500 * time.Millisecond) // past the timeout, between frames
	if err := c.Write(t.Context(), websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-in:
		if !ok {
			t.Fatal("a text frame after a quiet spell closed the connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("text frame not answered")
	}
	// fragmented: two fragments, 100 ms apart (within the timeout)
	w, err := c.Writer(t.Context(), websocket.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte{0xa0}, 3000))
	time.Sleep(100 * time.Millisecond)
	w.Write([]byte{1})
	w.Close()
	select {
	case _, ok := <-in:
		if !ok {
			t.Fatal("a fragmented frame closed the connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("fragmented frame not answered")
	}
	waitFor(t, "no turn left", func() bool { n, _ := serve.Turns(d.h); return n == 0 })
	// over the limit: 1009, and no turn left
	c.Write(t.Context(), websocket.MessageBinary, bytes.Repeat([]byte{0xa0}, 8<<10))
	for range in {
	}
	waitFor(t, "no turn left after 1009", func() bool { n, _ := serve.Turns(d.h); return n == 0 && d.h.SyncConnections() == 0 })
	if st, ok := d.callStatus(t.Context(), t, ada, sid, echoCall(1)); st != 200 || !ok {
		t.Fatalf("ada's call after: %d %v", st, ok)
	}
}

// stallInTurn opens a /sync connection of tok, joins, and begins a frame
// it never finishes, so that its body read holds tok's turn; reading
// tells whether the client reads (answers a close) meanwhile.
func stallInTurn(t *testing.T, d *door, tok string, reading bool) {
	t.Helper()
	c, in := d.syncPeer(t, tok, reading)
	sendJoin(t, c)
	if reading {
		<-in
	} else {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		// reading with a context that ends would close c: read the one answer.
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	beginFrame(t, c)
	waitFor(t, "the stalled frame to hold the turn", func() bool { n, _ := serve.Turns(d.h); return n == 1 })
}

// A revoked token's stalled frame gives its turn back soon (not after
// FrameReadTimeout).
func TestSyncRevokedWhileFrameInTurn(t *testing.T) {
	for _, reading := range []bool{true, false} {
		t.Run(map[bool]string{true: "reading", false: "deaf"}[reading], func(t *testing.T) {
			d := newDoor(t, &serve.Options{TokenConcurrency: 1, SyncTokenCheck: 50 * time.Millisecond})
			tk, ada, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
			if err != nil {
				t.Fatal(err)
			}
			stallInTurn(t, d, ada, reading)
			if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			waitFor(t, "the turn to be given back", func() bool { n, _ := serve.Turns(d.h); return n == 0 && d.h.SyncConnections() == 0 })
			t.Logf("turn back %v after revocation", time.Since(start))
		})
	}
}

// Shutdown while a frame holds a turn, and while another waits for one.
func TestSyncShutdownWhileFramesWait(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	stallInTurn(t, d, ada, true)
	c2, _ := d.syncPeer(t, ada, true)
	sendJoin(t, c2)
	waitFor(t, "the second frame to wait", func() bool { _, w := serve.Turns(d.h); return w == 1 })
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the turns to be given back", func() bool { n, _ := serve.Turns(d.h); return n == 0 && d.h.SyncConnections() == 0 })
	t.Logf("turns back %v after Shutdown", time.Since(start))
}
