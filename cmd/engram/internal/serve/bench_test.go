package serve_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// serveDirect runs one request through the handler without a network.
func serveDirect(h http.Handler, method, path, body string, header map[string]string) int {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// What a refused guess costs the server: a store lookup (401) while the
// address has failures left, none once it is limited (429); and a valid,
// known token's pass through the limit on a call.
func BenchmarkAuthRefusal(b *testing.B) {
	for _, c := range []struct {
		name   string
		opts   serve.Options
		status int
	}{
		{"lookup-401", serve.Options{AuthFailureBurst: 1 << 30, AuthFailureGlobalBurst: 1 << 30}, 401},
		{"limited-429", serve.Options{AuthFailureBurst: 1, AuthFailureRate: 1e-9}, 429},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := newDoor(b, &c.opts)
			serveDirect(d.h, "POST", "/mcp", initBody, mcpHeader("engram_first", ""))
			for i := 0; b.Loop(); i++ {
				if st := serveDirect(d.h, "POST", "/mcp", initBody, mcpHeader(fmt.Sprintf("engram_guess%d", i), "")); st != c.status {
					b.Fatalf("status %d, want %d", st, c.status)
				}
			}
		})
	}
}

// A tool call of a valid token, with the failed-login limit in the path
// (its secret known) and the metrics middleware.
func BenchmarkToolCall(b *testing.B) {
	d := newDoor(b, &serve.Options{Rate: 1e9, Burst: 1 << 30})
	tok := d.token(b, accesstoken.Spec{Agent: "ada"})
	sid := d.session(b, tok)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	for b.Loop() {
		if st := serveDirect(d.h, "POST", "/mcp", call, mcpHeader(tok, sid)); st != 200 {
			b.Fatalf("status %d", st)
		}
	}
}

// A scrape with 20 tools' histograms and 40 request series.
func BenchmarkMetricsScrape(b *testing.B) {
	d := newDoor(b, &serve.Options{MetricsToken: metricsSecret})
	for i := range 20 {
		serve.ObserveTool(d.h, fmt.Sprintf("tool%d", i), time.Duration(i)*time.Millisecond)
	}
	for i := range 40 {
		serveDirect(d.h, "GET", fmt.Sprintf("/x%d", i), "", nil)
	}
	h := map[string]string{"Authorization": "Bearer " + metricsSecret}
	for b.Loop() {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Header.Set("Authorization", h["Authorization"])
		w := httptest.NewRecorder()
		d.h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
		io.Discard.Write(w.Body.Bytes())
	}
}
