package syncrepo_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// followPeer joins p's session, requests document id and answers every
// sync message as an automerge peer; it returns the peer's text.
func followPeer(t *testing.T, p *pipe, id string) func() string {
	t.Helper()
	p.send(t, syncrepo.Message{Type: syncrepo.TypeJoin, SenderID: "peer", SupportedProtocolVersions: []string{"1"}})
	p.recv(t)
	doc := automerge.New()
	ss := automerge.NewSyncState(doc)
	var mu sync.Mutex
	msg, _ := ss.GenerateMessage()
	p.send(t, syncrepo.Message{Type: syncrepo.TypeRequest, SenderID: "peer", DocumentID: id, Data: msg.Bytes()})
	go func() {
		for b := range p.out {
			m, err := syncrepo.DecodeMessage(b)
			if err != nil || m.Type != syncrepo.TypeSync {
				continue
			}
			mu.Lock()
			ss.ReceiveMessage(m.Data)
			if out, ok := ss.GenerateMessage(); ok {
				o, _ := syncrepo.EncodeMessage(syncrepo.Message{Type: syncrepo.TypeSync, SenderID: "peer", DocumentID: m.DocumentID, Data: out.Bytes()})
				p.in <- o
			}
			mu.Unlock()
		}
	}()
	return func() string {
		mu.Lock()
		defer mu.Unlock()
		v, err := doc.Path("content").Get()
		if err != nil || v.Kind() != automerge.KindText {
			return ""
		}
		s, _ := v.Text().Get()
		return s
	}
}

func waitText(text func() string, want string, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if text() == want {
			return true
		}
	}
	return false
}

// unsignalled is a Notifier that never signals: the session can only poll.
type unsignalled struct{}

func (unsignalled) BlocksChanged() <-chan struct{} { return nil }

// A store that signals its changes (memory.Store.BlocksChanged) wakes the
// session at once: with an hour's poll period a change still reaches the
// peer; without the signal, only the poll would carry it.
func TestSessionWokenByStoreSignal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		signal  func(*memory.Store) syncrepo.Notifier
		reaches bool
	}{
		{"signalled", func(c *memory.Store) syncrepo.Notifier { return c }, true},
		{"poll only", func(*memory.Store) syncrepo.Notifier { return unsignalled{} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			id, _ := notesBlock(t, store, "ada")
			p, _ := serve(t, store, &syncrepo.Options{Poll: time.Hour, Notifier: tc.signal(store)})
			text := followPeer(t, p, id)
			if !waitText(text, "one\n", 3*time.Second) {
				t.Fatalf("first sync: %q", text())
			}
			for i, line := range []string{"two\n", "three\n"} {
				start := time.Now()
				if err := store.Agent("ada").Block("notes").Append(ctx, line); err != nil {
					t.Fatal(err)
				}
				want := "one\ntwo\n"
				if i == 1 {
					want += "three\n"
				}
				// With an hour's poll, arriving within seconds is the
				// signal's doing; 3 s leaves room for -race on a busy machine.
				got := waitText(text, want, 3*time.Second)
				if got != tc.reaches {
					t.Fatalf("append %d reached the peer: %v, want %v (%q)", i, got, tc.reaches, text())
				}
				if got {
					t.Logf("append %d reached the peer in %v", i, time.Since(start))
				} else {
					break
				}
			}
		})
	}
}

// countedStamps counts a session's stamp reads.
type countedStamps struct {
	*memory.Agent
	reads atomic.Int64
}

func (c *countedStamps) BlocksStamp(ctx context.Context) (memory.BlocksStamp, error) {
	c.reads.Add(1)
	return c.Agent.BlocksStamp(ctx)
}

// A burst of signals costs a connection one poll per SignalGap, not one
// per write, and the last write still reaches the peer.
func TestSessionCoalescesSignals(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	id, _ := notesBlock(t, store, "ada")
	counted := &countedStamps{Agent: store.Agent("ada")}
	const gap = 20 * time.Millisecond
	p := newPipe()
	sctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go syncrepo.Serve(sctx, p, counted, &syncrepo.Options{Poll: time.Hour, SignalGap: gap, Notifier: store})
	text := followPeer(t, p, id)
	if !waitText(text, "one\n", 3*time.Second) {
		t.Fatalf("first sync: %q", text())
	}
	before := counted.reads.Load()
	start := time.Now()
	want := "one\n"
	const n = 200
	for i := range n {
		line := fmt.Sprintf("%d\n", i)
		want += line
		if err := store.Agent("ada").Block("notes").Append(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	if !waitText(text, want, 3*time.Second) {
		t.Fatalf("the burst's last append did not reach the peer: %q", text()[max(0, len(text())-20):])
	}
	reads := counted.reads.Load() - before
	t.Logf("%d appends in %v: %d stamp reads", n, took, reads)
	if limit := int64(took/gap) + 3; reads > limit {
		t.Errorf("%d appends in %v: %d stamp reads, want ≤ %d (one per %v)", n, took, reads, limit, gap)
	}
}
