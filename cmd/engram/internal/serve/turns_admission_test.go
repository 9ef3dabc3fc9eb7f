package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// holdBatch is a batch of n hold calls with ids from first.
func holdBatch(first, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold","arguments":{}}}`, first+i)
	}
	b.WriteByte(']')
	return b.String()
}

// The SDK runs a batch's calls all at once, so a batch of more calls than
// TokenConcurrency is refused whole (-32600) before any runs, and one of
// at most that many runs within it (its notifications do not count).
func TestTurnsBatchWithinConcurrency(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			d := newDoor(t, &serve.Options{TokenConcurrency: limit, TokenQueue: 4})
			ada := d.token(t, accesstoken.Spec{Agent: "ada"})
			const v = "2025-03-26"
			sid := d.sessionAt(t, ada, v)
			h := mcpHeader(ada, sid)
			h["Mcp-Protocol-Version"] = v
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			resp, err := d.postMCP(ctx, h, holdBatch(10, limit+1))
			if err != nil || resp.StatusCode != http.StatusBadRequest {
				close(d.hold.release)
				t.Fatalf("a batch of %d calls at TokenConcurrency %d: %v, %v; want 400 at once (%d calls running)", limit+1, limit, resp, err, d.hold.running.Load())
			}
			defer resp.Body.Close()
			if rs := replies(t, resp); resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != -32600 ||
				!strings.Contains(rs[0].Error.Message, "at most") {
				t.Fatalf("a batch of %d calls at TokenConcurrency %d: status %d, %+v", limit+1, limit, resp.StatusCode, rs)
			}
			if n := d.hold.running.Load(); n != 0 {
				t.Fatalf("the refused batch ran %d calls", n)
			}
			batch := strings.TrimSuffix(holdBatch(20, limit), "]") + `,{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}]`
			var wg sync.WaitGroup
			wg.Go(func() {
				resp := d.do(t, "POST", "/mcp", batch, h)
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
			waitFor(t, "the batch's calls to run", func() bool { return d.hold.running.Load() == int64(limit) })
			time.Sleep(200 * time.Millisecond)
			close(d.hold.release)
			wg.Wait()
			if most := d.hold.most.Load(); most != int64(limit) {
				t.Fatalf("a batch of %d calls and a notification ran %d calls at once; TokenConcurrency %d", limit, most, limit)
			}
		})
	}
}

// A POST of notifications only takes no turn: at TokenConcurrency 1 a
// client cancels its running call (notifications/cancelled) instead of
// queueing the cancellation behind the very call it would end.
func TestTurnsCancelTakesNoTurn(t *testing.T) {
	for _, limit := range []int{2, 1} { // 2: the cancellation works
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			d := newDoor(t, &serve.Options{TokenConcurrency: limit, TokenQueue: 4})
			ada := d.token(t, accesstoken.Spec{Agent: "ada"})
			sid := d.session(t, ada)
			var wg sync.WaitGroup
			wg.Go(func() { d.callStatus(t.Context(), t, ada, sid, holdCall) })
			waitFor(t, "the call to run", func() bool { return d.hold.running.Load() == 1 })

			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			st, _ := d.callStatus(ctx, t, ada, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}`)
			// The notification is answered once queued; the call ends
			// after, when the server delivers the cancellation.
			ended := d.hold.running.Load() == 0
			for end := time.Now().Add(5 * time.Second); !ended && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
				ended = d.hold.running.Load() == 0
			}
			close(d.hold.release)
			wg.Wait()
			if st/100 != 2 || !ended {
				t.Fatalf("notifications/cancelled for the running call: status %d (0: still waiting for a turn after 3 s), call ended %v", st, ended)
			}
		})
	}
}

// A body longer than earlyBodyBytes is read after its turn, but the
// server's ReadTimeout runs from the request's start: the door gives the
// body its read time again once the wait ends, so a request that waited
// past ReadTimeout (here 1 s, the wait 1.5 s) is still read and served.
func TestTurnWaitKeepsBodyReadTime(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4})
	srv := httptest.NewUnstartedServer(d.h)
	srv.Config.ReadTimeout = time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	s1, s2 := d.session(t, ada), d.session(t, ada)
	post := func(sid, body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.URL+"/mcp", strings.NewReader(body))
		for k, v := range mcpHeader(ada, sid) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var wg sync.WaitGroup
	wg.Go(func() { post(s1, holdCall) })
	waitFor(t, "the first call to run", func() bool { return d.hold.running.Load() == 1 })
	var st int
	var body string
	wg.Go(func() { st, body = post(s2, echoCall(256<<10)) })
	waitFor(t, "the second call to wait", func() bool { _, w := serve.Turns(d.h); return w == 1 })
	time.Sleep(1500 * time.Millisecond)
	close(d.hold.release)
	wg.Wait()
	if st != http.StatusOK {
		if len(body) > 200 {
			body = body[:200]
		}
		t.Fatalf("a call that waited its turn past ReadTimeout: status %d, %q", st, body)
	}
}

// A HEAD /ui/events (a link previewer's probe) holds neither a stream nor
// its login's turn: at TokenConcurrency 1 the person's pages are served
// while its connection stays open.
func TestUIHeadEventsHoldsNoTurn(t *testing.T) {
	var store *memory.Store
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4, UI: func(_ context.Context, human string) (http.Handler, error) {
		srv, err := ui.New(store, &ui.Options{Person: human, BasePath: serve.UIPath, Token: "reviewtoken"})
		if err != nil {
			return nil, err
		}
		// Signed in as engram serve's serveUI is: the app's own cookie.
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest("GET", srv.URL("http://engram.invalid"), nil))
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			return nil, fmt.Errorf("ui login: %d cookies", len(cookies))
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r = r.Clone(r.Context())
			r.AddCookie(cookies[0])
			srv.ServeHTTP(w, r)
		}), nil
	}})
	store = d.store
	cookie := d.loginCookie(t, "hana")
	do := func(ctx context.Context, method, path string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, method, d.url+path, nil)
		req.Header.Set("Cookie", cookie)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if method == "GET" && path != "/ui/events" {
			io.Copy(io.Discard, resp.Body)
		}
		return resp.StatusCode, nil
	}
	if st, err := do(t.Context(), "GET", "/ui/search?q=x"); st != 200 {
		t.Fatalf("a page alone: %d %v", st, err)
	}
	// A client that sends HEAD and keeps its connection open (as a
	// keep-alive client does): the handler streams into nothing.
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "HEAD /ui/events HTTP/1.1\r\nHost: %s\r\nCookie: %s\r\n\r\n", strings.TrimPrefix(d.url, "http://"), cookie)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "HEAD"})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /ui/events: %v %v", resp, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	st, err := do(ctx, "GET", "/ui/search?q=x")
	if st != 200 {
		_, waiting := serve.Turns(d.h)
		t.Fatalf("a page while a HEAD /ui/events is open: status %d, %v (requests waiting for a turn: %d)", st, err, waiting)
	}
}

// Over HTTP/1.1 the server notices a client gone only once the request's
// body has been read; a small body is read before its turn, so a waiter
// whose client disconnects leaves the token's line and its call never
// runs.
func TestTurnsDisconnectedWaiterLeaves(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	s1, s2 := d.session(t, ada), d.session(t, ada)
	var wg sync.WaitGroup
	wg.Go(func() { d.callStatus(t.Context(), t, ada, s1, holdCall) })
	waitFor(t, "the call to run", func() bool { return d.hold.running.Load() == 1 })
	ctx, cancel := context.WithCancel(t.Context())
	wg.Go(func() { d.callStatus(ctx, t, ada, s2, echoCall(100)) })
	waitFor(t, "the echo call to wait", func() bool { _, w := serve.Turns(d.h); return w == 1 })
	cancel() // the client gives up and closes its connection
	left := false
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end) && !left; time.Sleep(10 * time.Millisecond) {
		_, w := serve.Turns(d.h)
		left = w == 0
	}
	close(d.hold.release)
	wg.Wait()
	time.Sleep(300 * time.Millisecond)
	if ran := d.calls.Load(); !left || ran != 0 {
		t.Fatalf("a waiter whose client disconnected: left the queue %v; its call ran anyway %d times", left, ran)
	}
}
