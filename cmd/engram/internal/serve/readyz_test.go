package serve_test

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
)

// /readyz answers what Options.Ready says, at once and without a
// credential: 503 with Retry-After until it reports true, 200 after;
// without Ready it answers as /healthz; and once the server shuts down,
// 503 whatever Ready says.
func TestReadyz(t *testing.T) {
	var ready atomic.Bool
	d := newDoor(t, &serve.Options{Ready: ready.Load})
	get := func() (int, string, http.Header) {
		t.Helper()
		resp := d.do(t, "GET", "/readyz", "", nil)
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b), resp.Header
	}
	before := d.lookups.Load()
	code, body, h := get()
	if code != http.StatusServiceUnavailable || body != "not ready: prewarming\n" || h.Get("Retry-After") == "" {
		t.Fatalf("before ready: %d %q (Retry-After %q), want 503 saying it is prewarming, with Retry-After", code, body, h.Get("Retry-After"))
	}
	if h.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", h.Get("Cache-Control"))
	}
	if code := d.do(t, "GET", "/healthz", "", nil).StatusCode; code != http.StatusOK {
		t.Fatalf("/healthz before ready: %d, want 200 (alive, not ready)", code)
	}
	ready.Store(true)
	if code, body, _ := get(); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("once ready: %d %q, want 200 ready", code, body)
	}
	if d.lookups.Load() != before {
		t.Fatal("/readyz looked a credential up")
	}
	d.h.Shutdown(context.Background())
	if code, _, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("shutting down: %d, want 503", code)
	}

	plain := newDoor(t, nil)
	if resp := plain.do(t, "GET", "/readyz", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("without Ready: %d, want 200", resp.StatusCode)
	}
}
