package serve_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// No request leaves a line or a waiter behind: odd batches (empty,
// unclosed, nested, of non-objects, longer than allowed), requests with
// unknown tokens, and waiters whose clients give up; and a token's GET
// event streams and DELETEs of its sessions are not held up by its turn.
func TestTurnsLeaveNoLine(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenConcurrency: 1, TokenQueue: 3})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	const v = "2025-03-26"
	sid := d.sessionAt(t, ada, v)
	post := func(ctx context.Context, body string, hdr map[string]string) (int, string) {
		resp, err := d.postMCP(ctx, hdr, body)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	h := mcpHeader(ada, sid)
	h["Mcp-Protocol-Version"] = v
	// Odd batches: none leaves a line behind.
	for _, b := range []string{`[]`, `[`, `[[]]`, `[[` + holdCall + `]]`, `[1,2,3]`, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a"}}}]`, echoBatch(20, 32), echoBatch(20, 33), `  [` + strings.Repeat("[", 10000)} {
		st, _ := post(t.Context(), b, h)
		if n, w := noLine(d); n != 0 || w != 0 {
			t.Fatalf("batch %.40q (status %d) left %d lines, %d waiting", b, st, n, w)
		}
	}
	// Bogus tokens make no line.
	for range 5 {
		post(t.Context(), holdCall, mcpHeader("bogus-"+strings.Repeat("x", 40), ""))
	}
	if n, _ := noLine(d); n != 0 {
		t.Fatalf("bogus tokens made %d lines", n)
	}
	// Waiters that disconnect give their places back; GET and DELETE of
	// another session are not gated while the token's turn is held.
	var wg sync.WaitGroup
	s2, s3 := d.session(t, ada), d.session(t, ada)
	wg.Go(func() { post(t.Context(), holdCall, mcpHeader(ada, s2)) })
	waitFor(t, "the call to run", func() bool { return d.hold.running.Load() == 1 })
	ctx, cancel := context.WithCancel(t.Context())
	for range 3 {
		wg.Go(func() { post(ctx, holdCall, mcpHeader(ada, s2)) })
	}
	waitFor(t, "three waiters", func() bool { _, w := serve.Turns(d.h); return w == 3 })
	if st, _ := post(t.Context(), holdCall, mcpHeader(ada, s2)); st != 429 {
		t.Fatalf("fourth waiter: %d", st)
	}
	defer cancel()
	// GET (event stream) and DELETE of another session are not gated.
	gctx, gcancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer gcancel()
	greq, _ := http.NewRequestWithContext(gctx, "GET", d.url+"/mcp", nil)
	for k, val := range mcpHeader(ada, s3) {
		greq.Header.Set(k, val)
	}
	greq.Header.Set("Accept", "text/event-stream")
	gresp, err := http.DefaultClient.Do(greq)
	if err != nil {
		t.Fatalf("GET /mcp while the turn is held: %v", err)
	}
	gresp.Body.Close()
	dreq, _ := http.NewRequestWithContext(gctx, "DELETE", d.url+"/mcp", nil)
	for k, val := range mcpHeader(ada, s3) {
		dreq.Header.Set(k, val)
	}
	dresp, err := http.DefaultClient.Do(dreq)
	if err != nil || dresp.StatusCode/100 != 2 {
		t.Fatalf("DELETE /mcp while the turn is held: %v %v", dresp, err)
	}
	dresp.Body.Close()
	close(d.hold.release)
	wg.Wait()
	waitFor(t, "no line", func() bool { n, w := serve.Turns(d.h); return n == 0 && w == 0 })
}

// noLine is the door's lines and waiters once they are gone, or after a
// second: a request's turn ends as its handler returns, just after its
// client has read the response.
func noLine(d *door) (tokens, waiting int) {
	for end := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if tokens, waiting = serve.Turns(d.h); tokens == 0 && waiting == 0 || time.Now().After(end) {
			return tokens, waiting
		}
	}
}
