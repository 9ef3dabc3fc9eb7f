package serve_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A JSON-RPC batch (2025-03-26 session) past its token's rate waits for
// all of its messages, as a single request waits for its one, and runs:
// it is not refused after waiting for its first.
func TestRateWaitBatchWaits(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 5, Burst: 4, MaxBatch: 4, TokenConcurrency: 4, MetricsToken: metricsSecret})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.sessionAt(t, tok, "2025-03-26") // 2 of the burst's 4
	h := mcpHeader(tok, sid)
	h["Mcp-Protocol-Version"] = "2025-03-26"
	for i := range 2 { // the burst's last 2
		resp := d.do(t, "POST", "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 50+i), h)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("ping %d: status %d", i, resp.StatusCode)
		}
	}
	start := time.Now()
	resp := d.do(t, "POST", "/mcp", echoBatch(10, 2), h)
	io.Copy(io.Discard, resp.Body)
	took := time.Since(start)
	m := d.scrape(t)
	t.Logf("batch of 2 on an empty bucket: status %d after %v, Retry-After %q; rate waits %v, rate 429s %v",
		resp.StatusCode, took.Round(time.Millisecond), resp.Header.Get("Retry-After"),
		m[`engram_serve_rate_waits_total{door="mcp"}`], m[`engram_serve_rate_limited_total{door="mcp"}`])
	if resp.StatusCode != 200 {
		t.Fatalf("a batch of 2 past the rate waited %v and then got %d; a single request would have waited and run", took.Round(time.Millisecond), resp.StatusCode)
	}
}

// A batch that waited for its other messages' rate has its token checked
// again, as a single request that waited does: revoked meanwhile, none of
// its calls runs.
func TestRateWaitRevokedBatchRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 2, Burst: 3, MaxBatch: 4, TokenConcurrency: 4, MetricsToken: metricsSecret})
	tk, tok, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	sid := d.sessionAt(t, tok, "2025-03-26") // 2 of the burst's 3
	h := mcpHeader(tok, sid)
	h["Mcp-Protocol-Version"] = "2025-03-26"
	done := make(chan *http.Response, 1)
	go func() {
		// Its first message takes the burst's last request; it waits
		// about 1/2 s for the second.
		resp, err := d.postMCP(t.Context(), h, echoBatch(10, 2))
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	waitFor(t, "the batch to wait for its rate", func() bool { return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] == 1 })
	if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
		t.Fatal(err)
	}
	resp := <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	// 401, the check after the wait: not a 404 from the sweep that
	// closes a revoked token's sessions (every second), which would
	// refuse the batch without that check.
	if resp.StatusCode != http.StatusUnauthorized || d.calls.Load() > 0 {
		t.Fatalf("a batch whose token was revoked while it waited for its rate: status %d, %d calls run, want 401 and none: %.120s", resp.StatusCode, d.calls.Load(), body)
	}
}

// While other requests of the token keep the bucket at its rate (each
// waiting with its request reserved), a batch still gets in: it queues
// for its messages like them.
func TestRateWaitBatchNotStarved(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 20, Burst: 4, MaxBatch: 4, TokenConcurrency: 4, TokenQueue: 64})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.sessionAt(t, tok, "2025-03-26")
	h := mcpHeader(tok, sid)
	h["Mcp-Protocol-Version"] = "2025-03-26"
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var singles atomic.Int64
	for range 4 { // 4 clients sending pings back to back: each waits ~50 ms
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := d.postMCP(ctx, h, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
				if err != nil {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					singles.Add(1)
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	end := time.Now().Add(5 * time.Second)
	tries, ok := 0, 0
	for time.Now().Before(end) {
		tries++
		resp, err := d.postMCP(t.Context(), h, echoBatch(10, 2))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			ok++
			continue
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			var s int
			fmt.Sscan(ra, &s)
			time.Sleep(time.Duration(s) * time.Second)
		}
	}
	cancel()
	wg.Wait()
	t.Logf("in 5 s: %d single pings served; batch of 2: %d tries, %d served", singles.Load(), tries, ok)
	if ok == 0 {
		t.Fatalf("the batch never got in in %d tries while the token's single requests waited for the rate", tries)
	}
}

// A call that waited for its token's rate does not run when the token
// was revoked while it waited: the token is checked again after the
// wait.
func TestRateWaitRevokedCallRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 2, Burst: 2, MetricsToken: metricsSecret})
	tk, tok, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	sid := d.session(t, tok) // the burst's 2
	time.Sleep(5 * time.Millisecond)
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := d.postMCP(t.Context(), mcpHeader(tok, sid), echoCall(200))
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- resp
	}()
	// It waits ~1/2 s for its rate; revoked once its wait has begun.
	waitFor(t, "the call to wait for its rate", func() bool { return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] == 1 })
	if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	resp := <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	t.Logf("call answered %v after revocation: status %d, echo calls run %d", time.Since(revoked).Round(time.Millisecond), resp.StatusCode, d.calls.Load())
	// 401, the check after the wait (not the sweep's 404; see above).
	if resp.StatusCode != http.StatusUnauthorized || d.calls.Load() > 0 {
		t.Fatalf("the call of a token revoked while it waited for its rate: status %d %v after the revocation, %d calls run, want 401 and none: %.120s",
			resp.StatusCode, time.Since(revoked).Round(time.Millisecond), d.calls.Load(), body)
	}
}

// The same for a new session: an initialize that waited for its rate
// opens none once its token is revoked.
func TestRateWaitRevokedOpensNoSession(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 1, Burst: 1})
	tk, tok, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	resp := d.do(t, "GET", "/mcp", "", mcpHeader(tok, "nosuch")) // spends the burst
	io.Copy(io.Discard, resp.Body)
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := d.postMCP(t.Context(), mcpHeader(tok, ""), initBody)
		if err != nil {
			t.Error(err)
			done <- nil
			return
		}
		done <- resp
	}()
	time.Sleep(200 * time.Millisecond)
	if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
		t.Fatal(err)
	}
	resp = <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode == 200 && resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("an initialize of a token revoked while it waited opened session %s", resp.Header.Get("Mcp-Session-Id"))
	}
}

// A new MCP session or /sync connection past its token's cap is refused
// once the token's rate lets it in: at once while its burst lasts (a
// client that honours Retry-After learns at once), and paced to the rate
// after, so that a client retrying each refusal at once is held to its
// rate instead of making the door refuse it as fast as it asks.
func TestRateWaitCapRefusalsPaced(t *testing.T) {
	const rate, burst, tries = 20, 3, 23
	for _, door := range []string{"mcp", "sync"} {
		t.Run(door, func(t *testing.T) {
			d := newDoor(t, &serve.Options{Rate: rate, Burst: burst + 2, MaxTokenSessions: 1, SyncMaxTokenConnections: 1})
			tok := d.token(t, accesstoken.Spec{Agent: "ada"})
			try := func() (int, string) {
				var resp *http.Response
				if door == "mcp" {
					resp = d.do(t, "POST", "/mcp", initBody, mcpHeader(tok, ""))
				} else {
					resp = d.do(t, "GET", "/sync?token="+tok, "", nil)
				}
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body) + " Retry-After " + resp.Header.Get("Retry-After")
			}
			// The one the cap allows, held open: two requests of the burst.
			if door == "mcp" {
				d.session(t, tok)
			} else {
				c, _, err := dialSync(t.Context(), d.url, tok)
				if err != nil {
					t.Fatal(err)
				}
				defer c.CloseNow()
				io.Copy(io.Discard, d.do(t, "GET", "/mcp", "", mcpHeader(tok, "nosuch")).Body)
			}
			start := time.Now()
			for i := range tries {
				st, body := try()
				if st != http.StatusServiceUnavailable || !strings.Contains(body, "for this token") || strings.HasSuffix(body, "Retry-After ") {
					t.Fatalf("try %d past the cap: %d %s", i, st, body)
				}
				if i == burst-1 {
					if took := time.Since(start); took > 300*time.Millisecond {
						t.Fatalf("the burst's %d refusals took %v: they waited", burst, took.Round(time.Millisecond))
					}
				}
			}
			// The 20 after the burst wait 1/20 s each: about 1 s.
			took := time.Since(start)
			t.Logf("%d refusals past the cap in %v", tries, took.Round(time.Millisecond))
			if least := time.Duration(tries-burst-1) * time.Second / rate; took < least {
				t.Fatalf("%d refusals past the cap in %v: faster than the rate lets requests in (at least %v)", tries, took.Round(time.Millisecond), least)
			}
		})
	}
}

func dialSync(ctx context.Context, url, tok string) (*websocket.Conn, *http.Response, error) {
	return websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/sync?token="+tok, nil)
}

// Waiters that give their requests back leave no hole a newcomer could
// use twice: the waiters reserved after one keep their deadlines, so
// only the token's latest reservation is given back. Over a second the
// token gets no more than Rate×t + Burst. Waiters here are GET /mcp of
// no session (the SDK answers 404 after allow), whose clients going
// away the server notices.
func TestRateWaitGiveBackWithinRate(t *testing.T) {
	const rate = 10
	d := newDoor(t, &serve.Options{Rate: rate, Burst: 1, MaxTokenSessions: 40, MetricsToken: metricsSecret})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	get := func(ctx context.Context) (int, time.Time) {
		req, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/mcp", nil)
		for k, v := range mcpHeader(tok, "nosuch") {
			req.Header.Set(k, v)
		}
		tr := &http.Transport{DisableKeepAlives: true}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			return 0, time.Time{}
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Now()
	}
	if st, _ := get(t.Context()); st != 404 { // the burst
		t.Fatalf("first GET: %d", st)
	}
	t0 := time.Now()
	var mu sync.Mutex
	var admitted []time.Time
	var wg sync.WaitGroup
	record := func(st int, at time.Time) {
		if st == 404 {
			mu.Lock()
			admitted = append(admitted, at)
			mu.Unlock()
		}
	}
	cancels := make([]context.CancelFunc, 20)
	for i := range 20 { // deadlines 0.1 s … 2.0 s after t0
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		wg.Add(1)
		go func() { defer wg.Done(); record(get(ctx)) }()
		want := float64(i + 1)
		waitFor(t, "the waiter", func() bool { return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] >= want })
	}
	for _, c := range cancels[:10] { // the first ten give theirs back
		c()
	}
	time.Sleep(20 * time.Millisecond)
	end := t0.Add(2100 * time.Millisecond)
	for range 10 { // a client's ten connections keep asking
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				st, at := get(t.Context())
				record(st, at)
				if st == 429 {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	from, to := t0.Add(1000*time.Millisecond), t0.Add(2050*time.Millisecond)
	n := 0
	for _, at := range admitted {
		if !at.Before(from) && at.Before(to) {
			n++
		}
	}
	bound := 1 + rate*to.Sub(from).Seconds()
	t.Logf("%d requests let in between 1.0 s and 2.05 s (%d in all over 2.1 s); Rate×t + Burst = %.1f", n, len(admitted), bound)
	if float64(n) > bound+1 {
		t.Fatalf("%d requests let in over %v, past Rate×t + Burst = %.1f", n, to.Sub(from), bound)
	}
}

// Over HTTP/1.1 a POST waiting for its token's rate has its small body
// read as the wait begins, so the server sees its client go: the call
// never runs for nobody (a client that times out and retries would have
// its tool call run twice).
func TestRateWaitGoneClientRunsNothing(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 2, Burst: 2, MetricsToken: metricsSecret})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, tok) // the burst's 2
	addr := strings.TrimPrefix(d.url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := echoCall(200)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, tok, sid, len(body), body)
	waitFor(t, "the call to wait for its rate", func() bool {
		return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] == 1
	})
	c.Close() // the client gives up
	time.Sleep(time.Second)
	if n := d.calls.Load(); n != 0 {
		t.Fatalf("the call of a client that went away while it waited for its rate ran (%d calls)", n)
	}
}

// Shutdown ends the rate waiters of every door at once:
// GET /mcp, /sync before its upgrade, the UI's event stream and a UI POST.
func TestRateWaitShutdownEveryDoor(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 0.2, Burst: 1, MetricsToken: metricsSecret})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	cookie := d.loginCookie(t, "hal")
	io.Copy(io.Discard, d.do(t, "GET", "/mcp", "", mcpHeader(tok, "nosuch")).Body)             // ada's burst
	io.Copy(io.Discard, d.do(t, "GET", "/ui/x", "", map[string]string{"Cookie": cookie}).Body) // hal's burst
	type res struct {
		what string
		code int
		at   time.Time
	}
	out := make(chan res, 8)
	launch := func(what, method, path, body string, h map[string]string) {
		go func() {
			req, _ := http.NewRequest(method, d.url+path, strings.NewReader(body))
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
			if err != nil {
				out <- res{what, -1, time.Now()}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			out <- res{what, resp.StatusCode, time.Now()}
		}()
	}
	launch("GET /mcp", "GET", "/mcp", "", mcpHeader(tok, "nosuch"))
	launch("GET /ui/events", "GET", "/ui/events", "", map[string]string{"Cookie": cookie})
	launch("POST /ui/x", "POST", "/ui/x", "a=b", map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded"})
	launch("/sync", "GET", "/sync?token="+tok, "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket",
		"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
	waitFor(t, "four waiters", func() bool {
		m := d.scrape(t)
		return m[`engram_serve_rate_waits_total{door="mcp"}`]+m[`engram_serve_rate_waits_total{door="ui"}`]+m[`engram_serve_rate_waits_total{door="sync"}`] == 4
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := d.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		r := <-out
		t.Logf("%s: %d after %v", r.what, r.code, r.at.Sub(start).Round(time.Millisecond))
		if r.code != 503 || r.at.Sub(start) > time.Second {
			t.Errorf("%s at shutdown: %d after %v", r.what, r.code, r.at.Sub(start))
		}
	}
}

// A /sync upgrade that waited for its rate is checked again: a token
// revoked while it waited gets 401, not a connection the token watcher
// closes a second later.
func TestRateWaitRevokedSyncRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 1, Burst: 1})
	tk, tok, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, d.do(t, "GET", "/mcp", "", mcpHeader(tok, "nosuch")).Body) // spends the burst
	type dialed struct {
		c    *websocket.Conn
		resp *http.Response
		err  error
	}
	done := make(chan dialed, 1)
	go func() {
		c, resp, err := dialSync(t.Context(), d.url, tok)
		done <- dialed{c, resp, err}
	}()
	time.Sleep(100 * time.Millisecond) // it waits ~1 s for its rate
	if err := accesstoken.Of(d.store).Revoke(context.Background(), tk.ID); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err == nil {
		r.c.CloseNow()
		t.Fatal("a /sync of a token revoked while it waited for its rate was upgraded")
	}
	if r.resp == nil || r.resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a /sync of a token revoked while it waited: %v, %+v", r.err, r.resp)
	}
}

// A web UI request that waited for its rate is checked again: one whose
// login was signed out while it waited is sent to sign in, not served.
func TestRateWaitSignedOutUIRefused(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 1, Burst: 1})
	cookie := d.loginCookie(t, "hal")
	time.Sleep(1100 * time.Millisecond)                                                        // the burst back, whatever the login spent
	io.Copy(io.Discard, d.do(t, "GET", "/ui/x", "", map[string]string{"Cookie": cookie}).Body) // spends it
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", d.url+"/ui/x", nil)
		req.Header.Set("Cookie", cookie)
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := c.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	time.Sleep(100 * time.Millisecond) // it waits ~1 s for its rate
	io.Copy(io.Discard, d.do(t, "POST", "/ui/logout", "", map[string]string{"Cookie": cookie, "Origin": d.url}).Body)
	resp := <-done
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Fatalf("a UI request whose login ended while it waited for its rate: %d %q, %.80s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
}

// A UI request that waited for its rate and whose login ended meanwhile
// (signed out, or its token revoked) is sent to sign in without counting
// a failed authentication against its address: a page whose requests
// were being paced when the person signed out would otherwise spend the
// address's failed-login budget (20 by default), and signing in again
// from there would be refused.
func TestRateWaitSignedOutChargesNoFailedLogins(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 5, Burst: 1}) // failed-login limit at its defaults: 20, 1 per 5 s
	cookie := d.loginCookie(t, "hal")
	io.Copy(io.Discard, d.do(t, "GET", "/ui/x", "", map[string]string{"Cookie": cookie}).Body) // spends the burst
	const waiters = 20
	var wg sync.WaitGroup
	statuses := make(chan int, waiters)
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), "GET", d.url+"/ui/x", nil)
			req.Header.Set("Cookie", cookie)
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	time.Sleep(150 * time.Millisecond) // each waits 0.2 s more than the one before
	io.Copy(io.Discard, d.do(t, "POST", "/ui/logout", "", map[string]string{"Cookie": cookie, "Origin": d.url}).Body)
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for st := range statuses {
		count[st]++
	}
	t.Logf("the page's %d waiting requests after sign-out: %v", waiters, count)
	// The person signs in again, with a new token (the old one may have
	// been what was revoked).
	tok := d.token(t, accesstoken.Spec{Human: "hal"})
	resp := d.do(t, "POST", "/ui/login", url.Values{"token": {tok}}.Encode(), form())
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in after signing out while %d of the page's requests waited for the rate: %d (Retry-After %q); the waiters were counted as failed logins",
			waiters, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// A token at its session cap that closes its session (DELETE /mcp) opens
// a new one at once: the cap counts live sessions only.
func TestSessionCapFreedByDelete(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 100, Burst: 100, MaxTokenSessions: 1})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, tok)
	if st := d.do(t, "POST", "/mcp", initBody, mcpHeader(tok, "")).StatusCode; st != http.StatusServiceUnavailable {
		t.Fatalf("at the cap: %d", st)
	}
	if st := d.do(t, "DELETE", "/mcp", "", mcpHeader(tok, sid)).StatusCode; st/100 != 2 {
		t.Fatalf("DELETE: %d", st)
	}
	d.session(t, tok)
}
