package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// One token's open /sync connections are capped: the per-connection caps
// (documents, refused changes held per document, each refused edit's
// private copy of its document) would otherwise multiply without bound
// with a client that keeps opening connections. Beyond the cap: 503 with
// Retry-After; other tokens are not affected; a closed connection frees its
// place.
func TestSyncConnectionsPerToken(t *testing.T) {
	ctx := context.Background()
	store := openServeStoreAt(t, t.TempDir()+"/conns.db")
	if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "hello\n"}); err != nil {
		t.Fatal(err)
	}
	id, err := store.Agent("ada").Block("notes").DocumentID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	url := syncrepo.URL(id)
	f := startServe(t, store, &serve.Options{SyncMaxTokenConnections: 2})
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync?token="
	_, one := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, two := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: true})

	var open []*goPeer
	for range 2 {
		p := newGoPeer(t, ws+one, url)
		if !p.until(func(p *goPeer) bool { return p.text() == "hello\n" }) {
			t.Fatal("no sync")
		}
		open = append(open, p)
	}
	c, resp, err := dialSync(ctx, ws+one, nil)
	if c != nil {
		c.CloseNow()
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a connection over the token's cap: %v %v, want 503 with Retry-After", resp, err)
	}
	if p := newGoPeer(t, ws+two, url); !p.until(func(p *goPeer) bool { return p.text() == "hello\n" }) {
		t.Fatal("another token was refused")
	}
	open[0].c.CloseNow()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, resp, _ := dialSync(ctx, ws+one, nil)
		if c != nil {
			c.CloseNow()
		}
		if resp != nil && resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection did not free its place: %v", resp)
		}
	}
}
