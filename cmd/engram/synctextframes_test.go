package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/syncrepo"
)

// Text WebSocket messages on /sync are frames like binary ones: each is
// answered with an error message and counts against the connection's
// frame rate, instead of being read and dropped for free (a client could
// otherwise make the server read frames of the maximum size without end).
func TestSyncTextFramesCountAgainstTheRate(t *testing.T) {
	ctx := context.Background()
	store := openServeStoreAt(t, t.TempDir()+"/text.db")
	f := startServe(t, store, &serve.Options{SyncRate: 10, SyncBurst: 10})
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync"
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	c, _, err := dialSync(ctx, ws+"?token="+secret, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for range 40 {
		if err := c.Write(ctx, websocket.MessageText, []byte(strings.Repeat("x", 1000))); err != nil {
			t.Fatal(err)
		}
	}
	answers := 0
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		_, b, err := c.Read(rctx)
		if err != nil {
			break
		}
		if m, err := syncrepo.DecodeMessage(b); err == nil && m.Type == syncrepo.TypeError {
			answers++
		}
	}
	// 10 at once, then 10 a second: 20 or so in the second, never 40.
	if answers == 0 || answers > 25 {
		t.Fatalf("%d of 40 text frames answered in a second at 10 frames/s, burst 10", answers)
	}
}
