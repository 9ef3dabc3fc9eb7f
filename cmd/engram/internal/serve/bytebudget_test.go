package serve_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// echoCall is a tools/call of echo whose body is size bytes long.
func echoCall(size int) string {
	head, tail := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`, `"}}}`
	return head + strings.Repeat("x", max(0, size-len(head)-len(tail))) + tail
}

// send posts body on session sid of tok; chunked sends it without a
// Content-Length.
func (d *door) send(t *testing.T, tok, sid, body string, chunked bool) *http.Response {
	t.Helper()
	var rd io.Reader = strings.NewReader(body)
	if chunked {
		rd = io.MultiReader(rd) // of no length the client knows
	}
	req, err := http.NewRequest("POST", d.url+"/mcp", rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range mcpHeader(tok, sid) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// A token's request bodies are paid for in bytes: a body its budget
// cannot pay for yet waits, before it is read, until the budget can; one
// that would wait too long is refused with 429 and Retry-After; and
// another token's requests do not wait for either.
func TestTokenBytesBudget(t *testing.T) {
	const rate, burst = 2000, 10_000 // a second, at once
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, TokenBytesRate: rate, TokenBytesBurst: burst})
	ada, bob := d.token(t, accesstoken.Spec{Agent: "ada"}), d.token(t, accesstoken.Spec{Agent: "bob"})
	adaSid, bobSid := d.session(t, ada), d.session(t, bob)
	big := echoCall(6000)
	if resp := d.send(t, ada, adaSid, big, false); resp.StatusCode != 200 {
		t.Fatalf("ada's first 6,000-byte call: status %d", resp.StatusCode)
	}
	// About 3,700 bytes left (the session's opening took some): a second
	// big body waits about a second for the rest.
	start := time.Now()
	second := make(chan int)
	go func() {
		resp := d.send(t, ada, adaSid, big, false)
		io.Copy(io.Discard, resp.Body)
		second <- resp.StatusCode
	}()
	waitFor(t, "ada's second call to wait for bytes", func() bool {
		return d.scrape(t)[`engram_serve_bytes_waits_total{door="mcp"}`] == 1
	})
	bobStart := time.Now()
	if resp := d.send(t, bob, bobSid, big, false); resp.StatusCode != 200 {
		t.Fatalf("bob's 6,000-byte call beside ada's wait: status %d", resp.StatusCode)
	}
	if took := time.Since(bobStart); took > 500*time.Millisecond {
		t.Fatalf("bob's call took %v beside ada's wait", took)
	}
	if st := <-second; st != 200 {
		t.Fatalf("ada's second 6,000-byte call: status %d, want 200 after a wait", st)
	}
	if took := time.Since(start); took < 800*time.Millisecond || took > 5*time.Second {
		t.Fatalf("ada's second call took %v, want about 1.2 s", took)
	}
	if got := d.scrape(t)[`engram_serve_bytes_limited_total{door="mcp"}`]; got != 0 {
		t.Fatalf("engram_serve_bytes_limited_total = %v, want 0", got)
	}
}

// A body that announces no length is charged as it is read: after a
// chunked body of most of the budget, an announced one the rest cannot
// pay for is refused.
func TestTokenBytesBudgetChunked(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 100, TokenBytesBurst: 10_000})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	if resp := d.send(t, ada, sid, echoCall(8000), true); resp.StatusCode != 200 {
		t.Fatalf("the chunked 8,000-byte call: status %d", resp.StatusCode)
	}
	if resp := d.send(t, ada, sid, echoCall(3000), false); resp.StatusCode != 429 {
		t.Fatalf("a 3,000-byte call after it: status %d, want 429", resp.StatusCode)
	}
}

// readCounter is a request body that counts the bytes read from it.
type readCounter struct {
	io.Reader
	n int
}

func (c *readCounter) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.n += n
	return n, err
}

// serveBody serves a POST of body, announced as size bytes, on session
// sid of tok, with ctx.
func (d *door) serveBody(ctx context.Context, tok, sid string, body io.Reader, size int64) *httptest.ResponseRecorder {
	r := httptest.NewRequestWithContext(ctx, "POST", "/mcp", body)
	r.ContentLength = size
	for k, v := range mcpHeader(tok, sid) {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	d.h.ServeHTTP(w, r)
	return w
}

// A body that would wait past the longest wait is refused unread, with
// Retry-After; one whose client goes away while it waits is answered 503
// unread, and gives back its turn.
func TestTokenBytesBudgetRefusesUnread(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 100, TokenBytesBurst: 5000, TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	// About 4,750 bytes left: 40,000 (paid as 5,000, the burst) waits
	// about 2.5 s. A body this long is read only once it is paid for.
	body := &readCounter{Reader: strings.NewReader(echoCall(40_000))}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if w := d.serveBody(ctx, ada, sid, body, 40_000); w.Code != 503 || body.n != 0 {
		t.Fatalf("a 40,000-byte body whose client left while it waited: status %d, %d bytes read; want 503 and none", w.Code, body.n)
	}
	if running, waiting := serve.Turns(d.h); running != 0 || waiting != 0 {
		t.Fatalf("after it: %d running, %d waiting", running, waiting)
	}
	d2 := newDoor(t, &serve.Options{TokenBytesRate: 10, TokenBytesBurst: 5000})
	bob := d2.token(t, accesstoken.Spec{Agent: "bob"})
	sid = d2.session(t, bob)
	body = &readCounter{Reader: strings.NewReader(echoCall(40_000))}
	start := time.Now()
	w := d2.serveBody(t.Context(), bob, sid, body, 40_000)
	if w.Code != 429 || body.n != 0 {
		t.Fatalf("a 40,000-byte body 25 s from its budget: status %d, %d bytes read; want 429 and none", w.Code, body.n)
	}
	if s, err := strconv.Atoi(w.Header().Get("Retry-After")); err != nil || s < 20 || s > 30 {
		t.Fatalf("Retry-After %q, want about 25 s", w.Header().Get("Retry-After"))
	}
	if !strings.Contains(w.Body.String(), "request bytes") {
		t.Fatalf("refusal %q does not say what ran out", w.Body.String())
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("the refusal took %v", took)
	}
}

// The budget is off with a negative rate, and web UI requests pay it
// under their login's token.
func TestTokenBytesBudgetOffAndUI(t *testing.T) {
	off := newDoor(t, &serve.Options{TokenBytesRate: -1, TokenBytesBurst: 1000})
	ada := off.token(t, accesstoken.Spec{Agent: "ada"})
	sid := off.session(t, ada)
	for i := range 3 {
		if resp := off.send(t, ada, sid, echoCall(6000), false); resp.StatusCode != 200 {
			t.Fatalf("call %d of 6,000 bytes with the budget off: status %d", i, resp.StatusCode)
		}
	}

	d := newDoor(t, &serve.Options{TokenBytesRate: 100, TokenBytesBurst: 10_000})
	cookie := d.loginCookie(t, "hana")
	post := func(size int) int {
		t.Helper()
		resp := d.do(t, "POST", "/ui/blocks/persona", strings.Repeat("x", size),
			map[string]string{"Cookie": cookie, "Content-Type": "application/x-www-form-urlencoded", "Origin": d.url})
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if st := post(7000); st != 200 {
		t.Fatalf("a 7,000-byte UI post: status %d", st)
	}
	if st := post(7000); st != 429 {
		t.Fatalf("a second 7,000-byte UI post: status %d, want 429", st)
	}
}

// A body announced past the body cap is refused (413) unread, and costs
// its token's budget no more than the cap: the token's next call passes.
func TestTokenBytesBudgetPastTheCap(t *testing.T) {
	d := newDoor(t, &serve.Options{MaxBodyBytes: 4000, TokenBytesRate: 1, TokenBytesBurst: 10_000})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	body := &readCounter{Reader: strings.NewReader(strings.Repeat("x", 1<<20))}
	if w := d.serveBody(t.Context(), ada, sid, body, 1<<20); w.Code != 413 || body.n != 0 {
		t.Fatalf("a 1 MiB body past the 4,000-byte cap: status %d, %d bytes read; want 413 and none", w.Code, body.n)
	}
	if r := reply(t, d.send(t, ada, sid, echoCall(3000), false)); r.Error != nil {
		t.Fatalf("a 3,000-byte call after it: %+v", r.Error)
	}
}

// A budget that refills too slowly for its wait to fit a time.Duration
// still refuses what it cannot pay for.
func TestTokenBytesBudgetTinyRate(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 1e-9, TokenBytesBurst: 5000})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	body := &readCounter{Reader: strings.NewReader(echoCall(40_000))}
	if w := d.serveBody(t.Context(), ada, sid, body, 40_000); w.Code != 429 || body.n != 0 {
		t.Fatalf("a 40,000-byte body at a rate of 1e-9 bytes a second: status %d, %d bytes read; want 429 and none", w.Code, body.n)
	}
}

// Requests waiting for their token's bytes or for its turn have not
// started: when the server shuts down they are answered 503 at once, and
// the drain does not wait for them.
func TestTokenWaitsEndAtShutdown(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: 500, TokenBytesBurst: 10_000, TokenConcurrency: 1})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	if resp := d.send(t, ada, sid, echoCall(6000), false); resp.StatusCode != 200 {
		t.Fatalf("the first 6,000-byte call: status %d", resp.StatusCode)
	}
	codes := make(chan int, 2)
	for range 2 { // the first waits about 4.5 s for bytes, the second for its turn
		go func() {
			resp := d.send(t, ada, sid, echoCall(6000), false)
			io.Copy(io.Discard, resp.Body)
			codes <- resp.StatusCode
		}()
	}
	waitFor(t, "one request waiting for bytes and one for its turn", func() bool {
		running, waiting := serve.Turns(d.h)
		return running == 1 && waiting == 1
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := d.h.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with two requests waiting: %v", err)
	}
	for range 2 {
		if c := <-codes; c != 503 {
			t.Fatalf("a waiting request at shutdown: status %d, want 503", c)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("shutdown took %v", took)
	}
}
