package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A request past its token's rate waits for it instead of being refused:
// a client that retried each 429 at once made the server read and refuse
// requests thousands of times a second. Only a token with
// MaxTokenSessions requests waiting already, or a wait past 10 s, gets
// 429 with Retry-After, at once.
func TestRateWaits(t *testing.T) {
	call := echoCall(200)
	for _, tc := range []struct {
		name        string
		opts        serve.Options
		wantStatus  int
		least, most time.Duration // how long the call after the session's two requests takes
		retryAfter  int           // the least Retry-After of a 429
	}{
		{"waits for its rate", serve.Options{Rate: 4, Burst: 2}, 200, 150 * time.Millisecond, 3 * time.Second, 0},
		{"a wait past 10 s is refused at once", serve.Options{Rate: 0.05, Burst: 2}, 429, 0, 2 * time.Second, 15},
		{"within its burst it does not wait", serve.Options{Rate: 0.05, Burst: 3}, 200, 0, 2 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.MetricsToken = metricsSecret
			d := newDoor(t, &tc.opts)
			ada := d.token(t, accesstoken.Spec{Agent: "ada"})
			sid := d.session(t, ada) // initialize and initialized: the burst's two requests
			start := time.Now()
			resp := d.send(t, ada, sid, call, false)
			io.Copy(io.Discard, resp.Body)
			took := time.Since(start)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if took < tc.least || took > tc.most {
				t.Fatalf("took %v, want %v to %v", took, tc.least, tc.most)
			}
			if tc.wantStatus == 429 {
				if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < tc.retryAfter {
					t.Fatalf("Retry-After %q, want at least %d", resp.Header.Get("Retry-After"), tc.retryAfter)
				}
			}
			m := d.scrape(t)
			waits, limited := m[`engram_serve_rate_waits_total{door="mcp"}`], m[`engram_serve_rate_limited_total{door="mcp"}`]
			wantWaits, wantLimited := 0.0, 0.0
			switch {
			case tc.wantStatus == 429:
				wantLimited = 1
			case tc.least > 0:
				wantWaits = 1
			}
			if waits != wantWaits || limited != wantLimited {
				t.Fatalf("rate waits %v, limited %v; want %v, %v", waits, limited, wantWaits, wantLimited)
			}
		})
	}
}

// A token's requests queue for its rate: one that would wait past 10 s
// behind those waiting is refused at once, another token's requests do
// not wait behind them, and a waiter whose client goes (its small body
// read as its wait began, so the server sees the connection close) ends
// with it.
func TestRateWaitersBounded(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 0.2, Burst: 3, MetricsToken: metricsSecret})
	ada, bob := d.token(t, accesstoken.Spec{Agent: "ada"}), d.token(t, accesstoken.Spec{Agent: "bob"})
	sid, bobSid := d.session(t, ada), d.session(t, bob)
	if resp := d.send(t, ada, sid, echoCall(200), false); resp.StatusCode != 200 { // the burst's last
		t.Fatalf("ada's first call: status %d", resp.StatusCode)
	}
	ctx, leave := context.WithCancel(t.Context())
	ended := make(chan error, 2)
	for i := range 2 { // wait 5 s and 10 s
		go func() {
			resp, err := d.postMCP(ctx, mcpHeader(ada, sid), echoCall(200))
			if err == nil {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			ended <- err
		}()
		waitFor(t, "ada's call to wait for its rate", func() bool {
			return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] == float64(i+1)
		})
	}
	start := time.Now()
	resp := d.send(t, ada, sid, echoCall(200), false)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 429 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("a call 15 s behind: status %d after %v, want 429 at once", resp.StatusCode, time.Since(start))
	}
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); ra < 10 {
		t.Fatalf("Retry-After %q, want at least 10", resp.Header.Get("Retry-After"))
	}
	start = time.Now()
	if resp := d.send(t, bob, bobSid, echoCall(200), false); resp.StatusCode != 200 || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("bob's call beside ada's waiters: status %d after %v", resp.StatusCode, time.Since(start))
	}
	leave()
	for range 2 {
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("a waiter whose client left: %v", err)
		}
	}
	waitFor(t, "the server to see both waiters go", func() bool {
		return d.scrape(t)[`engram_serve_requests_total{code="503",door="mcp"}`] == 2
	})
}

// A request waiting for its rate when the server shuts down gets 503 at
// once: it has not started, and the drain does not wait for it.
func TestRateWaitEndsAtShutdown(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 0.2, Burst: 2, MetricsToken: metricsSecret})
	ada := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, ada)
	code := make(chan int)
	go func() {
		resp := d.send(t, ada, sid, echoCall(200), false)
		io.Copy(io.Discard, resp.Body)
		code <- resp.StatusCode
	}()
	waitFor(t, "the call to wait for its rate", func() bool {
		return d.scrape(t)[`engram_serve_rate_waits_total{door="mcp"}`] == 1
	})
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := d.h.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a request waiting for its rate: %v", err)
	}
	if c := <-code; c != 503 {
		t.Fatalf("the waiting request at shutdown: status %d, want 503", c)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("shutdown took %v", took)
	}
}
