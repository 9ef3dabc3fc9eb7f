package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/coder/websocket"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/syncrepo"
)

// goPeer is an automerge-repo peer written with automerge-go: enough of
// the protocol to sync one document, for the tests that need no Node.
type goPeer struct {
	t       testing.TB
	c       *websocket.Conn
	mu      sync.Mutex
	doc     *automerge.Doc
	ss      *automerge.SyncState
	docID   string
	state   string // "", "synced", "unavailable"
	bytesIn int
	closed  error
	changed chan struct{}
}

func dialSync(ctx context.Context, wsURL string, h http.Header) (*websocket.Conn, *http.Response, error) {
	return websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
}

func (p *goPeer) send(m syncrepo.Message) error {
	m.SenderID = "go-peer"
	b, err := syncrepo.EncodeMessage(m)
	if err != nil {
		return err
	}
	return p.c.Write(context.Background(), websocket.MessageBinary, b)
}

// newGoPeer joins and requests doc url.
func newGoPeer(t testing.TB, wsURL, url string) *goPeer {
	t.Helper()
	ctx := context.Background()
	c, _, err := dialSync(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	p := &goPeer{t: t, c: c, doc: automerge.New(), changed: make(chan struct{}, 1)}
	p.ss = automerge.NewSyncState(p.doc)
	t.Cleanup(func() { c.CloseNow() })
	if err := p.send(syncrepo.Message{Type: syncrepo.TypeJoin, SupportedProtocolVersions: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := syncrepo.DecodeMessage(b); err != nil || m.Type != syncrepo.TypePeer || m.SelectedProtocolVersion != "1" {
		t.Fatalf("answer to join: %+v %v", m, err)
	}
	id, _ := strings.CutPrefix(url, syncrepo.URLPrefix)
	p.docID = id
	msg, _ := p.ss.GenerateMessage()
	if err := p.send(syncrepo.Message{Type: syncrepo.TypeRequest, DocumentID: id, Data: msg.Bytes()}); err != nil {
		t.Fatal(err)
	}
	go p.loop()
	return p
}

func (p *goPeer) loop() {
	for {
		_, b, err := p.c.Read(context.Background())
		p.mu.Lock()
		if err != nil {
			p.closed = err
			p.mu.Unlock()
			p.notify()
			return
		}
		p.bytesIn += len(b)
		m, err := syncrepo.DecodeMessage(b)
		if err != nil {
			p.mu.Unlock()
			continue
		}
		switch m.Type {
		case syncrepo.TypeDocUnavailable:
			p.state = "unavailable"
		case syncrepo.TypeSync:
			p.ss.ReceiveMessage(m.Data)
			p.state = "synced"
			if out, ok := p.ss.GenerateMessage(); ok {
				p.send(syncrepo.Message{Type: syncrepo.TypeSync, DocumentID: p.docID, Data: out.Bytes()})
			}
		}
		p.mu.Unlock()
		p.notify()
	}
}

func (p *goPeer) notify() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// until waits (5 s at most) for f to hold under the peer's lock.
func (p *goPeer) until(f func(p *goPeer) bool) bool {
	deadline := time.After(5 * time.Second)
	for {
		p.mu.Lock()
		ok := f(p)
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-p.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return false
		}
	}
}

func (p *goPeer) text() string {
	v, err := p.doc.Path("content").Get()
	if err != nil || v.Kind() != automerge.KindText {
		return ""
	}
	s, _ := v.Text().Get()
	return s
}

// edit appends to the peer's text and syncs.
func (p *goPeer) edit(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, err := p.doc.Path("content").Get()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := v.Text().Append(s); err != nil {
		p.t.Fatal(err)
	}
	p.doc.Commit("go peer")
	if out, ok := p.ss.GenerateMessage(); ok {
		p.send(syncrepo.Message{Type: syncrepo.TypeSync, DocumentID: p.docID, Data: out.Bytes()})
	}
}

// /sync's door: 401 without a valid token, 403 for a human's, a Bearer
// header accepted; a revoked token's connection closes (1008); a frame
// over the cap closes it (1009); another process's write reaches a peer.
func TestSyncDoor(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/door.db"
	store := openServeStoreAt(t, path)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "hello\n"})
	id, _ := store.Agent("ada").Block("notes").DocumentID(ctx)
	url := syncrepo.URL(id)
	f := startServe(t, store, &serve.Options{SyncTokenCheck: 50 * time.Millisecond, SyncMaxMessageBytes: 1 << 16})
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync"
	tok, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, human := newToken(t, store, accesstoken.Spec{Human: "alice"})

	for _, tc := range []struct {
		name   string
		url    string
		header http.Header
		status int
	}{
		{"no token", ws, nil, http.StatusUnauthorized},
		{"bad token", ws + "?token=engram_nope", nil, http.StatusUnauthorized},
		{"human token", ws + "?token=" + human, nil, http.StatusForbidden},
		{"bearer", ws, http.Header{"Authorization": {"Bearer " + secret}}, http.StatusSwitchingProtocols},
	} {
		c, resp, err := dialSync(ctx, tc.url, tc.header)
		if c != nil {
			c.CloseNow()
		}
		if resp == nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %v %v, want %d", tc.name, resp, err, tc.status)
		}
	}

	p := newGoPeer(t, ws+"?token="+secret, url)
	if !p.until(func(p *goPeer) bool { return p.text() == "hello\n" }) {
		t.Fatalf("first sync: %q", p.text())
	}
	// Another process on the same file writes: the peer sees it.
	other := openServeStoreAt(t, path)
	if err := other.Agent("ada").Block("notes").Append(ctx, "from another process\n"); err != nil {
		t.Fatal(err)
	}
	if !p.until(func(p *goPeer) bool { return strings.Contains(p.text(), "another process") }) {
		t.Errorf("another process's write did not reach the peer: %q", p.text())
	}

	// A rebase makes a new document: the old one is unavailable to the
	// peer, and the new URL syncs.
	if err := store.Agent("ada").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.until(func(p *goPeer) bool { return p.state == "unavailable" }) {
		t.Errorf("after a rebase the peer's document is %q", p.state)
	}
	id2, err := store.Agent("ada").Block("notes").DocumentID(ctx)
	if err != nil || id2 == id {
		t.Fatalf("id after the rebase: %x %v", id2, err)
	}
	url = syncrepo.URL(id2)
	if q := newGoPeer(t, ws+"?token="+secret, url); !q.until(func(p *goPeer) bool { return strings.Contains(p.text(), "another process") }) {
		t.Errorf("the rebased block's new URL: %q", q.text())
	}

	// A frame over the cap closes the connection.
	big := newGoPeer(t, ws+"?token="+secret, url)
	big.send(syncrepo.Message{Type: syncrepo.TypeSync, DocumentID: big.docID, Data: make([]byte, 1<<17)})
	if !big.until(func(p *goPeer) bool { return p.closed != nil }) || websocket.CloseStatus(big.closed) != websocket.StatusMessageTooBig {
		t.Errorf("an oversized frame: %v", big.closed)
	}

	// Revocation closes the connection.
	if err := accesstoken.Of(store).Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if !p.until(func(p *goPeer) bool { return p.closed != nil }) || websocket.CloseStatus(p.closed) != websocket.StatusPolicyViolation {
		t.Errorf("after revocation: %v", p.closed)
	}
	// Shutdown closes a connection with 1001.
	_, secret2 := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	last := newGoPeer(t, ws+"?token="+secret2, url)
	if !last.until(func(p *goPeer) bool { return p.text() != "" }) {
		t.Fatal("no sync")
	}
	time.Sleep(200 * time.Millisecond) // the sync exchange is over
	if err := f.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !last.until(func(p *goPeer) bool { return p.closed != nil }) || websocket.CloseStatus(last.closed) != websocket.StatusGoingAway {
		t.Errorf("at shutdown: %v", last.closed)
	}
	for deadline := time.Now().Add(5 * time.Second); f.h.SyncConnections() != 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.h.SyncConnections(); n != 0 {
		t.Errorf("%d sync connections left open", n)
	}
}

// Two serve processes on one PostgreSQL: a peer on each and a Go writer on
// each append to one block at once; all converge with nothing lost.
func TestSyncTwoServesOnPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	s1, s2 := openServeStoreAt(t, dsn), openServeStoreAt(t, dsn)
	if _, err := s1.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
		t.Fatal(err)
	}
	id, _ := s1.Agent("ada").Block("notes").DocumentID(ctx)
	_, secret := newToken(t, s1, accesstoken.Spec{Agent: "ada"})
	var peers []*goPeer
	stores := []*memory.Store{s1, s2}
	for _, s := range stores {
		f := startServe(t, s, nil)
		peers = append(peers, newGoPeer(t, "ws"+strings.TrimPrefix(f.url, "http")+"/sync?token="+secret, syncrepo.URL(id)))
	}
	for _, p := range peers {
		if !p.until(func(p *goPeer) bool { return p.text() == "start\n" }) {
			t.Fatalf("first sync: %q", p.text())
		}
	}
	const n = 10
	var want []string
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for k := range n {
				if err := s.Agent("ada").Block("notes").Append(ctx, fmt.Sprintf("go%d-%d\n", i, k)); err != nil {
					t.Error(err)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for k := range n {
				peers[i].edit(fmt.Sprintf("peer%d-%d\n", i, k))
				time.Sleep(5 * time.Millisecond)
			}
		}()
		for k := range n {
			want = append(want, fmt.Sprintf("go%d-%d\n", i, k), fmt.Sprintf("peer%d-%d\n", i, k))
		}
	}
	wg.Wait()
	all := func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	var r1, r2 string
	for time.Now().Before(deadline) {
		r1, _ = s1.Agent("ada").Block("notes").Render(ctx)
		r2, _ = s2.Agent("ada").Block("notes").Render(ctx)
		if all(r1) && r1 == r2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !all(r1) || r1 != r2 {
		t.Fatalf("stores did not converge with every line:\n%q\n%q", r1, r2)
	}
	for i, p := range peers {
		if !p.until(func(p *goPeer) bool { return p.text() == r1 }) {
			t.Errorf("peer %d: %q, store %q", i, p.text(), r1)
		}
	}
}

// Measured figures for docs/sync.md: bytes of a first sync of a
// 10k-character block (automerge-go speaks sync format v1), and what N
// idle peers, each syncing one block, cost a serve process.
func TestSyncMeasure(t *testing.T) {
	testenv.SkipUnlessLong(t, "200 peers syncing one block: a measurement")
	ctx := context.Background()
	store := openServeStore(t)
	text := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ. ", 160)[:10000]
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "big", Value: text, CharLimit: 20000})
	id, _ := store.Agent("ada").Block("big").DocumentID(ctx)
	// 200 peers on one token: above the default per-token cap.
	f := startServe(t, store, &serve.Options{Rate: 1e6, Burst: 1e6, SyncMaxTokenConnections: 1000})
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	ws := "ws" + strings.TrimPrefix(f.url, "http") + "/sync?token=" + secret
	p := newGoPeer(t, ws, syncrepo.URL(id))
	if !p.until(func(p *goPeer) bool { return p.text() == text }) {
		t.Fatal("no first sync")
	}
	time.Sleep(200 * time.Millisecond)
	p.mu.Lock()
	first := p.bytesIn
	saved := p.doc.Save()
	p.mu.Unlock()
	t.Logf("first sync of a 10000-character block: %d bytes received (document Save: %d bytes)", first, len(saved))

	peers := 200 / syncMeasureScale
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()
	rss0 := rssKiB()
	start := time.Now()
	var ps []*goPeer
	for range peers {
		ps = append(ps, newGoPeer(t, ws, syncrepo.URL(id)))
	}
	for _, q := range ps {
		if !q.until(func(p *goPeer) bool { return p.text() == text }) {
			t.Fatal("a peer did not sync")
		}
	}
	took := time.Since(start)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	rss1 := rssKiB()
	t.Logf("%d peers (client and server in one process) synced a 10000-character block in %v; RSS +%d KiB (%d KiB per peer, both ends, automerge's C heap included), Go heap +%d KiB, goroutines +%d",
		peers, took, rss1-rss0, (rss1-rss0)/int64(peers), (after.HeapAlloc-before.HeapAlloc)/1024, runtime.NumGoroutine()-g0)
	// What they cost idle: each connection's poll (the stamp shared per
	// agent).
	time.Sleep(500 * time.Millisecond) // the first syncs' exchanges are over
	cpu0 := cpuTime()
	time.Sleep(2 * time.Second)
	t.Logf("%d idle peers: CPU %v per second (client and server)", peers, (cpuTime()-cpu0)/2)
	// Go appends reach all of them: each append's signal wakes every
	// connection, which reads the agent's stamp (one read shared by all)
	// and syncs.
	var lat []time.Duration
	cpu0 = cpuTime()
	for i := range 10 {
		start = time.Now()
		mark := fmt.Sprintf("!%d", i)
		store.Agent("ada").Block("big").Append(ctx, mark)
		for _, q := range ps {
			if !q.until(func(p *goPeer) bool { return strings.HasSuffix(p.text(), mark) }) {
				t.Fatal("an append did not reach a peer")
			}
		}
		lat = append(lat, time.Since(start))
	}
	cpu := (cpuTime() - cpu0) / 10
	slices.Sort(lat)
	t.Logf("one Go append reached all %d peers in p50 %v, max %v; CPU %v per append (client and server)", peers, lat[4], lat[9], cpu)
	// A burst: 100 appends back to back (signals come faster than the
	// peers can be synced).
	cpu0, start = cpuTime(), time.Now()
	for i := range 100 {
		store.Agent("ada").Block("big").Append(ctx, fmt.Sprintf("#%d", i))
	}
	appended := time.Since(start)
	for _, q := range ps {
		if !q.until(func(p *goPeer) bool { return strings.HasSuffix(p.text(), "#99") }) {
			t.Fatal("the burst did not reach a peer")
		}
	}
	t.Logf("100 Go appends back to back (%v) reached all %d peers in %v; CPU %v (client and server)", appended, peers, time.Since(start), cpuTime()-cpu0)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKiB is the process's resident set (Linux), 0 elsewhere.
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// engram sync url prints the block's automerge: URL: stable, the one the
// store resolves for the agent and for a reader it is shared with, and
// refused for an agent that may not read the block.
func TestSyncURLCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "url.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes", "--value", "hi")
	ok(t, db, "share", "--owner", "ada", "--label", "notes", "--with", "bob", "--perm", "ReadOnly")
	u := strings.TrimSpace(ok(t, db, "sync", "url", "--agent", "ada", "--label", "notes"))
	id, err := syncrepo.ParseURL(u)
	if err != nil {
		t.Fatalf("printed %q: %v", u, err)
	}
	if again := strings.TrimSpace(ok(t, db, "sync", "url", "--agent", "bob", "--owner", "ada", "--label", "notes")); again != u {
		t.Errorf("bob's URL %q, ada's %q", again, u)
	}
	store := openServeStoreAt(t, db)
	if b, err := store.Agent("ada").DocumentBlock(context.Background(), id); err != nil || b.Owner() != "ada" || b.Label() != "notes" {
		t.Errorf("the URL resolves to %v %v", b, err)
	}
	if _, errs, code := cli(t, db, "", "sync", "url", "--agent", "eve", "--owner", "ada", "--label", "notes"); code == 0 {
		t.Errorf("eve got a URL for a block not shared with her: %s", errs)
	}
	if _, _, code := cli(t, db, "", "sync", "url", "--agent", "ada"); code == 0 {
		t.Error("no --label accepted")
	}
	if out := ok(t, db, "sync", "--help"); !strings.Contains(out, "engram sync url --agent A --label L") {
		t.Errorf("engram sync --help: %s", out)
	}
}
