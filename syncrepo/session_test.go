package syncrepo_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// pipe is a Conn whose frames a test writes and reads.
type pipe struct {
	in, out chan []byte
}

func newPipe() *pipe { return &pipe{in: make(chan []byte, 64), out: make(chan []byte, 64)} }

func (p *pipe) Read(ctx context.Context) ([]byte, error) {
	select {
	case b, ok := <-p.in:
		if !ok {
			return nil, io.EOF
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipe) Write(_ context.Context, b []byte) error {
	p.out <- b
	return nil
}

func (p *pipe) send(t *testing.T, m syncrepo.Message) {
	t.Helper()
	b, err := syncrepo.EncodeMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	p.in <- b
}

func (p *pipe) recv(t *testing.T) syncrepo.Message {
	t.Helper()
	select {
	case b := <-p.out:
		m, err := syncrepo.DecodeMessage(b)
		if err != nil {
			t.Fatal(err)
		}
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
		return syncrepo.Message{}
	}
}

func serve(t *testing.T, store syncrepo.Store, opts *syncrepo.Options) (*pipe, chan error) {
	p := newPipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- syncrepo.Serve(ctx, p, store, "ada", opts) }()
	return p, done
}

func openStore(t *testing.T) *memory.Cache {
	c, err := memory.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func request(t *testing.T, p *pipe, id string) {
	t.Helper()
	msg, _ := automerge.NewSyncState(automerge.New()).GenerateMessage()
	p.send(t, syncrepo.Message{Type: syncrepo.TypeRequest, SenderID: "peer", DocumentID: id, Data: msg.Bytes()})
}

// The peer must join first, with protocol "1"; a frame that is not a
// message gets an error message and the session goes on.
func TestSessionProtocol(t *testing.T) {
	store := openStore(t)
	for _, tc := range []struct {
		name  string
		first syncrepo.Message
	}{
		{"sync before join", syncrepo.Message{Type: syncrepo.TypeSync, DocumentID: "x"}},
		{"no common version", syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"2"}}},
	} {
		p, done := serve(t, store, nil)
		p.send(t, tc.first)
		if m := p.recv(t); m.Type != syncrepo.TypeError {
			t.Errorf("%s: answered %+v", tc.name, m)
		}
		if err := <-done; !errors.Is(err, syncrepo.ErrProtocol) {
			t.Errorf("%s: Serve returned %v", tc.name, err)
		}
	}
	p, _ := serve(t, store, nil)
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"0", "1"}})
	if m := p.recv(t); m.Type != syncrepo.TypePeer || m.SelectedProtocolVersion != "1" || m.TargetID != "peer" {
		t.Fatalf("join answered %+v", m)
	}
	p.in <- []byte{0xff, 0x00}
	if m := p.recv(t); m.Type != syncrepo.TypeError {
		t.Fatalf("garbage answered %+v", m)
	}
	request(t, p, "not-an-id")
	if m := p.recv(t); m.Type != syncrepo.TypeDocUnavailable || m.DocumentID != "not-an-id" {
		t.Fatalf("a bad id answered %+v", m)
	}
}

// MaxDocuments: the document beyond the cap is unavailable; the rate
// limit spaces the peer's frames.
func TestSessionLimits(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	var urls []string
	for _, l := range []string{"a", "b"} {
		if _, err := store.CreateBlock(ctx, "ada", memory.BlockSpec{Label: l, Value: l}); err != nil {
			t.Fatal(err)
		}
		id, err := store.DocumentID(ctx, "ada", "", l)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, syncrepo.EncodeDocumentID(id))
	}
	p, _ := serve(t, store, &syncrepo.Options{MaxDocuments: 1, Rate: 20, Burst: 1})
	start := time.Now()
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	p.recv(t)
	request(t, p, urls[0])
	if m := p.recv(t); m.Type != syncrepo.TypeSync || m.DocumentID != urls[0] {
		t.Fatalf("first document: %+v", m)
	}
	request(t, p, urls[1])
	if m := p.recv(t); m.Type != syncrepo.TypeDocUnavailable || m.DocumentID != urls[1] {
		t.Fatalf("second document over the cap: %+v", m)
	}
	for range 8 {
		p.in <- []byte{0xff}
		p.recv(t)
	}
	// 11 frames at 20 a second with a burst of 1: at least 0.5 s.
	if took := time.Since(start); took < 450*time.Millisecond {
		t.Errorf("11 frames at 20/s took %v", took)
	}
}
