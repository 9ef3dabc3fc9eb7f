package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A body announced past the body cap can never be served: it is refused
// 413 at once, unread, whatever the budget holds; never told to retry
// (429) nor kept waiting for bytes it will never be read for.
func TestTokenBytesBudgetOverCapAtOnce(t *testing.T) {
	for _, rate := range []float64{100, 1000} { // a wait past 10 s, and one within it
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			d := newDoor(t, &serve.Options{MaxBodyBytes: 4000, TokenBytesRate: rate, TokenBytesBurst: 10_000})
			ada := d.token(t, accesstoken.Spec{Agent: "ada"})
			sid := d.session(t, ada)
			for range 2 { // spend most of the budget
				if resp := d.send(t, ada, sid, echoCall(3900), false); resp.StatusCode != 200 {
					t.Fatalf("a 3,900-byte call: status %d", resp.StatusCode)
				}
			}
			body := &readCounter{Reader: strings.NewReader(strings.Repeat("x", 1<<20))}
			start := time.Now()
			w := d.serveBody(t.Context(), ada, sid, body, 1<<20)
			if took := time.Since(start); w.Code != 413 || body.n != 0 || took > 500*time.Millisecond {
				t.Fatalf("a 1 MiB body past the 4,000-byte cap, budget short: status %d (Retry-After %q), %d bytes read, after %v; want 413 unread at once",
					w.Code, w.Header().Get("Retry-After"), body.n, took)
			}
		})
	}
}

// Bodies of no announced length, read side by side (one per turn), are
// read at the budget's pace all the same: 4 of 9,000 bytes against a
// burst of 10,000 at 10,000 a second take at least the 2.6 s the bytes
// past the burst need.
func TestTokenBytesBudgetChunkedPaced(t *testing.T) {
	const n, size = 4, 9000
	d := newDoor(t, &serve.Options{MaxBodyBytes: 10_000, TokenBytesRate: 10_000, TokenBytesBurst: 10_000, TokenConcurrency: n, TokenQueue: n})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	pws := make([]*io.PipeWriter, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		pr, pw := io.Pipe()
		pws[i] = pw
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", d.url+"/mcp", pr) // chunked
			for k, v := range mcpHeader(ada, sid) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			io.Copy(io.Discard, resp.Body)
			codes[i] = resp.StatusCode
		})
	}
	time.Sleep(500 * time.Millisecond) // headers sent (the transport flushes them after 200 ms), past payBytes, reading
	if tokens, waiting := serve.Turns(d.h); tokens != 1 || waiting != 0 {
		t.Fatalf("%d tokens holding turns, %d requests waiting; want 1 and 0 (all %d reading)", tokens, waiting, n)
	}
	start := time.Now()
	for i, pw := range pws {
		body := strings.Replace(echoCall(size), `"id":2`, `"id":`+strconv.Itoa(10+i), 1)
		go func() { io.WriteString(pw, body); pw.Close() }()
	}
	wg.Wait()
	took := time.Since(start)
	ok := 0
	for _, c := range codes {
		if c == 200 {
			ok++
		}
	}
	t.Logf("codes %v in %v", codes, took)
	if ok != n || took < 2*time.Second {
		t.Fatalf("%d chunked bodies of %d bytes (%d in all): %d served in %v against a burst of 10,000 at 10,000 a second; want all, in at least 2.6 s",
			n, size, n*size, ok, took)
	}
}

// A request waiting for bytes has them set aside as its wait begins: the
// token's smaller requests queue behind its debt instead of taking the
// bytes it waits for, so it is served when its wait ends (here about
// 2.3 s), never starved.
func TestTokenBytesBudgetFirstComeFirstPaid(t *testing.T) {
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, TokenBytesRate: 20_000, TokenBytesBurst: 50_000, TokenConcurrency: 2, TokenQueue: 8})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	if resp := d.send(t, ada, sid, echoCall(45_000), false); resp.StatusCode != 200 {
		t.Fatalf("first call: status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	big := make(chan int, 1)
	bigStart := time.Now()
	go func() {
		st, _ := d.callStatus(ctx, t, ada, sid, echoCall(50_000))
		big <- st
	}()
	waitFor(t, "the big call to wait for bytes", func() bool {
		return d.scrape(t)[`engram_serve_bytes_waits_total{door="mcp"}`] >= 1
	})
	wg.Go(func() { // the token's small calls, one at a time
		for ctx.Err() == nil {
			d.callStatus(ctx, t, ada, sid, echoCall(400))
		}
	})
	select {
	case st := <-big:
		if st != 200 {
			t.Fatalf("the big call: status %d after %v", st, time.Since(bigStart))
		}
	case <-time.After(6 * time.Second):
		t.Fatalf("the big call still waits for bytes after %v (holding its turn)", time.Since(bigStart))
	}
}

// The default burst, twice MaxBodyBytes, saturates rather than overflows
// for a cap past half of int64: the token still has its burst.
func TestTokenBytesBudgetHugeCap(t *testing.T) {
	d := newDoor(t, &serve.Options{MaxBodyBytes: math.MaxInt64, TokenBytesRate: 1000})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	for i := range 3 {
		start := time.Now()
		if resp := d.send(t, ada, sid, echoCall(2000), false); resp.StatusCode != 200 {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("2,000-byte call %d took %v with a burst of \"twice MaxBodyBytes\"", i, took)
		}
	}
}

// An infinite rate is no limit (not 0 s × ∞ = NaN, which refused every
// body), and a NaN rate is refused as an option.
func TestTokenBytesBudgetInfiniteRate(t *testing.T) {
	d := newDoor(t, &serve.Options{TokenBytesRate: math.Inf(1)})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	resp := d.do(t, "POST", "/mcp", initBody, mcpHeader(ada, ""))
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("initialize at TokenBytesRate +Inf: status %d %q Retry-After %q", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	mcpServer := func(context.Context, string, bool) (*mcp.Server, error) {
		return mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil), nil
	}
	for _, o := range []serve.Options{{TokenBytesRate: math.NaN()}, {Rate: math.NaN()}, {SyncOpsRate: math.NaN()}} {
		o.Tokens, o.MCPServer = accesstoken.Of(d.store), mcpServer
		if _, err := serve.New(&o); !errors.Is(err, serve.ErrInvalidOptions) || !strings.Contains(err.Error(), "NaN") {
			t.Fatalf("a NaN rate: %v, want ErrInvalidOptions", err)
		}
	}
}

// Web UI requests that take no turn (static files, the event stream)
// never read their bodies, so they pay no bytes and never wait for them
// (which, with no turn held, TokenQueue would not bound).
func TestTokenBytesBudgetUnreadUIBodies(t *testing.T) {
	const n = 6
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret, TokenBytesRate: 200, TokenBytesBurst: 1000, TokenConcurrency: 1, TokenQueue: 1})
	cookie := d.loginCookie(t, "hana")
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", d.url+"/ui/static/app.css", strings.NewReader(strings.Repeat("x", 900)))
			req.Header.Set("Cookie", cookie)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	m := d.scrape(t)
	t.Logf("bytes waits %v, refused %v", m[`engram_serve_bytes_waits_total{door="ui"}`], m[`engram_serve_bytes_limited_total{door="ui"}`])
	if w := m[`engram_serve_bytes_waits_total{door="ui"}`]; w != 0 {
		t.Fatalf("%v GET /ui/static requests (bodies unread, no turn) wait for bytes at once; TokenConcurrency 1 + TokenQueue 1", w)
	}
}
