package serve

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A request whose wait for its token's rate ends early (its client went)
// gets 503 and gives its request back: the token's next request waits
// for no more than the one before it would have.
func TestRateWaitGivesBack(t *testing.T) {
	h, err := New(&Options{Rate: 2, Burst: 1, Tokens: nopTokens{}, MCPServer: func(context.Context, string, bool) (*mcp.Server, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	const id = 7
	if ok, _ := h.allow(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", nil), id); !ok {
		t.Fatal("the burst's request was refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := httptest.NewRecorder()
	ended := make(chan bool)
	go func() {
		ok, _ := h.allow(w, httptest.NewRequest("POST", "/mcp", nil).WithContext(ctx), id)
		ended <- ok
	}()
	for h.waitingForRate(id) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if <-ended || w.Code != 503 {
		t.Fatalf("a waiter whose request ended: allowed or status %d, want 503", w.Code)
	}
	if n := h.waitingForRate(id); n != 0 {
		t.Fatalf("%d still counted as waiting", n)
	}
	// Given back, the bucket is where it was: the next request waits
	// about half a second (2 a second), not a whole one.
	start := time.Now()
	if ok, _ := h.allow(httptest.NewRecorder(), httptest.NewRequest("POST", "/mcp", nil), id); !ok {
		t.Fatal("the next request was refused")
	}
	if took := time.Since(start); took > 750*time.Millisecond {
		t.Fatalf("the next request waited %v, want about 0.5 s", took)
	}
}

// waitingForRate is how many of token id's requests wait for its rate.
func (h *Handler) waitingForRate(id int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rateWaiting[id]
}
