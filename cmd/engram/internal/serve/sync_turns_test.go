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

func joinFrame(t *testing.T) []byte {
	t.Helper()
	b, err := syncrepo.EncodeMessage(syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{syncrepo.ProtocolVersion}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A token's /sync frames take the turns its MCP requests take: while
// ada's call holds her only turn, her frame waits unanswered and bob's
// is answered; once the call ends, hers is.
func TestSyncFramesTakeTokenTurns(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	bob := d.token(t, accesstoken.Spec{Agent: "bob"})
	sid := d.session(t, ada)
	ac, _, err := dialSync(t.Context(), d.url, ada)
	if err != nil {
		t.Fatal(err)
	}
	defer ac.CloseNow()
	bc, _, err := dialSync(t.Context(), d.url, bob)
	if err != nil {
		t.Fatal(err)
	}
	defer bc.CloseNow()
	aIn, bIn := frames(ac), frames(bc)

	held := make(chan int, 1)
	go func() { st, _ := d.callStatus(t.Context(), t, ada, sid, holdCall); held <- st }()
	waitFor(t, "ada's call to hold her turn", func() bool { return d.hold.running.Load() == 1 })
	for _, c := range []*websocket.Conn{ac, bc} {
		if err := c.Write(t.Context(), websocket.MessageBinary, joinFrame(t)); err != nil {
			t.Fatal(err)
		}
	}
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
	c, _, err := dialSync(t.Context(), d.url, ada)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	in := frames(c)
	if err := c.Write(t.Context(), websocket.MessageBinary, joinFrame(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-in; !ok {
		t.Fatal("join not answered")
	}
	w, err := c.Writer(t.Context(), websocket.MessageBinary)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(bytes.Repeat([]byte{0xa0}, 64<<10)); err != nil { // a frame begun (past the client's buffer), never finished
		t.Fatal(err)
	}
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
