package serve_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

const holdCall = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold","arguments":{}}}`

// call sends one tools/call body on session sid of tok and returns the
// response's status code and, for a 200, whether the call succeeded.
func (d *door) callStatus(ctx context.Context, t *testing.T, tok, sid, body string) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, "POST", d.url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, false
	}
	for k, v := range mcpHeader(tok, sid) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false // ended by ctx
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, false
	}
	return resp.StatusCode, reply(t, resp).Error == nil
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// One token's requests are served TokenConcurrency at a time, the others
// waiting their turn; another token's requests do not wait for them.
func TestTokenTurns(t *testing.T) {
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, TokenConcurrency: limit, TokenQueue: 8})
			ada, bob := d.token(t, accesstoken.Spec{Agent: "ada"}), d.token(t, accesstoken.Spec{Agent: "bob"})
			const calls = 5
			sids := make([]string, calls)
			for i := range sids {
				sids[i] = d.session(t, ada)
			}
			bobSid := d.session(t, bob)
			var wg sync.WaitGroup
			ok := make([]bool, calls)
			for i := range calls {
				wg.Go(func() { _, ok[i] = d.callStatus(t.Context(), t, ada, sids[i], holdCall) })
			}
			// (A request may also wait a moment for the turn of the
			// one before it, which has answered but not yet returned.)
			waitFor(t, "the calls to start or queue", func() bool {
				_, waiting := serve.Turns(d.h)
				return d.hold.running.Load() == int64(limit) && waiting == calls-limit
			})
			// (A waiter is in the line before its wait is counted: the
			// count follows it.)
			waitFor(t, fmt.Sprintf("%d turn waits counted", calls-limit), func() bool {
				return d.scrape(t)[`engram_serve_turn_waits_total{door="mcp"}`] >= float64(calls-limit)
			})
			time.Sleep(50 * time.Millisecond)
			if n := d.hold.running.Load(); n != int64(limit) {
				t.Fatalf("%d of ada's calls run at once, want %d", n, limit)
			}
			// Bob's call runs at once, beside ada's.
			start := time.Now()
			if st, good := d.callStatus(t.Context(), t, bob, bobSid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`); st != 200 || !good {
				t.Fatalf("bob's call while ada's wait: status %d, ok %v", st, good)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("bob's call took %v", time.Since(start))
			}
			close(d.hold.release)
			wg.Wait()
			for i, good := range ok {
				if !good {
					t.Fatalf("ada's call %d failed", i)
				}
			}
			if m := d.hold.most.Load(); m != int64(limit) {
				t.Fatalf("at most %d of ada's calls ran at once, want %d", m, limit)
			}
			waitFor(t, "the token's line to go once its requests ended", func() bool { n, _ := serve.Turns(d.h); return n == 0 })
		})
	}
}

// Past TokenQueue waiting requests, the next gets 429 with Retry-After,
// without waiting.
func TestTokenQueueFull(t *testing.T) {
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, TokenConcurrency: 1, TokenQueue: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	s1, s2, s3 := d.session(t, ada), d.session(t, ada), d.session(t, ada)
	var wg sync.WaitGroup
	var first, second bool
	wg.Go(func() { _, first = d.callStatus(t.Context(), t, ada, s1, holdCall) })
	waitFor(t, "the first call to run", func() bool { return d.hold.running.Load() == 1 })
	wg.Go(func() { _, second = d.callStatus(t.Context(), t, ada, s2, holdCall) })
	waitFor(t, "the second call to wait", func() bool { _, waiting := serve.Turns(d.h); return waiting == 1 })

	start := time.Now()
	resp := d.do(t, "POST", "/mcp", holdCall, mcpHeader(ada, s3))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third call with one running and one waiting: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the refusal took %v", time.Since(start))
	}
	if got := d.scrape(t)[`engram_serve_turn_refused_total{door="mcp"}`]; got != 1 {
		t.Fatalf("turn refusals counted %v, want 1", got)
	}
	close(d.hold.release)
	wg.Wait()
	if !first || !second {
		t.Fatalf("first call ok %v, second ok %v", first, second)
	}
	if m := d.hold.most.Load(); m != 1 {
		t.Fatalf("%d calls ran at once, want 1", m)
	}
	if st, ok := d.callStatus(t.Context(), t, ada, s3, holdCall); st != 200 || !ok {
		t.Fatalf("a call once the others ended: status %d, ok %v", st, ok)
	}
	waitFor(t, "the token's line to go once its requests ended", func() bool { n, _ := serve.Turns(d.h); return n == 0 })
}

// A JSON-RPC batch's calls run side by side, so it takes a turn for each
// (up to all the token's): while a batch of two holds both of ada's
// turns, her next call waits.
func TestTokenTurnsBatch(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 2, TokenQueue: 4})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	const v = "2025-03-26"
	s1, s2 := d.sessionAt(t, ada, v), d.session(t, ada)
	batch := `[{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"hold","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"hold","arguments":{}}}]`
	var wg sync.WaitGroup
	var batchStatus, callStatus int
	var callOK bool
	wg.Go(func() {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", d.url+"/mcp", strings.NewReader(batch))
		for k, val := range mcpHeader(ada, s1) {
			req.Header.Set(k, val)
		}
		req.Header.Set("Mcp-Protocol-Version", v)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		batchStatus = resp.StatusCode
		if rs := replies(t, resp); len(rs) != 2 {
			t.Errorf("batch: %d replies, want 2", len(rs))
		}
	})
	waitFor(t, "the batch's calls to run", func() bool { return d.hold.running.Load() == 2 })
	wg.Go(func() { callStatus, callOK = d.callStatus(t.Context(), t, ada, s2, holdCall) })
	waitFor(t, "the call after the batch to wait", func() bool { _, waiting := serve.Turns(d.h); return waiting == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := d.hold.running.Load(); n != 2 {
		t.Fatalf("%d calls run beside the batch's two, want none", n-2)
	}
	close(d.hold.release)
	wg.Wait()
	if batchStatus != 200 || callStatus != 200 || !callOK {
		t.Fatalf("batch status %d, call status %d ok %v", batchStatus, callStatus, callOK)
	}
	if m := d.hold.most.Load(); m != 2 {
		t.Fatalf("%d calls ran at once, want 2", m)
	}
}

// A person's web UI requests take turns as an agent's calls do, but for
// the page's event stream and its static files.
func TestTokenTurnsUI(t *testing.T) {
	hold := &holdTool{release: make(chan struct{})}
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 4, UI: func(context.Context, string) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hold.call(r.Context())
			io.WriteString(w, "ui "+r.URL.Path)
		}), nil
	}})
	t.Cleanup(func() {
		select {
		case <-hold.release:
		default:
			close(hold.release)
		}
	})
	cookie := d.loginCookie(t, "hana")
	get := func(path string) func() int {
		return func() int {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", d.url+path, nil)
			req.Header.Set("Cookie", cookie)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return 0
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
			return resp.StatusCode
		}
	}
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i, path := range []string{"/ui/events", "/ui/static/app.css", "/ui/agents/ada"} {
		wg.Go(func() { codes[i] = get(path)() })
	}
	waitFor(t, "the stream, the static file and a page to be served", func() bool { return hold.running.Load() == 3 })
	wg.Go(func() { codes[3] = get("/ui/search")() })
	waitFor(t, "a second page to wait", func() bool { _, waiting := serve.Turns(d.h); return waiting == 1 })
	time.Sleep(50 * time.Millisecond)
	if n := hold.running.Load(); n != 3 {
		t.Fatalf("%d UI requests served, want 3 (the second page waits)", n)
	}
	close(hold.release)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Fatalf("request %d: status %d", i, c)
		}
	}
}
