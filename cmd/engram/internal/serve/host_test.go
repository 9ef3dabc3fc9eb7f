package serve_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// On a loopback listener every door refuses a request whose Host is not
// a loopback name or address (403), before anything else: a page whose
// name was rebound to 127.0.0.1 reaches none of them. Loopback Hosts are
// let in.
func TestHostOnLoopback(t *testing.T) {
	d := newDoor(t, &serve.Options{MetricsToken: metricsSecret})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	port := d.url[strings.LastIndex(d.url, ":")+1:]
	doors := []struct {
		name, method, path, body string
		header                   map[string]string
	}{
		{"mcp", "POST", "/mcp", initBody, mcpHeader(tok, "")},
		{"healthz", "GET", "/healthz", "", nil},
		{"healthz query", "GET", "/healthz?x=1", "", nil},
		{"readyz", "GET", "/readyz", "", nil},
		{"metrics", "GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + metricsSecret}},
		{"sync", "GET", "/sync?token=" + url.QueryEscape(tok), "", map[string]string{"Connection": "Upgrade", "Upgrade": "websocket",
			"Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}},
		{"ui", "GET", "/ui/", "", nil},
		{"ui login", "POST", "/ui/login", "token=x", form()},
		{"root", "GET", "/", "", nil},
	}
	for _, c := range doors {
		for _, host := range []string{"evil.example", "evil.example:" + port, "localhost.evil.example:" + port, "127.0.0.1.evil.example"} {
			t.Run(c.name+" "+host, func(t *testing.T) {
				h := map[string]string{"Host": host}
				for k, v := range c.header {
					h[k] = v
				}
				before := d.lookups.Load()
				resp := d.do(t, c.method, c.path, c.body, h)
				if resp.StatusCode != http.StatusForbidden {
					t.Fatalf("status %d, want 403", resp.StatusCode)
				}
				if d.lookups.Load() != before {
					t.Fatal("the refused request looked a credential up")
				}
			})
		}
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "localhost", "127.0.0.2:" + port} {
			t.Run(c.name+" "+host, func(t *testing.T) {
				h := map[string]string{"Host": host}
				for k, v := range c.header {
					h[k] = v
				}
				if st := d.do(t, c.method, c.path, c.body, h).StatusCode; st == http.StatusForbidden {
					t.Fatalf("loopback Host %s: 403", host)
				}
			})
		}
	}
}

// A listener that is not loopback serves any Host (a name the operator
// chose, behind DNS or a proxy).
func TestHostOffLoopback(t *testing.T) {
	d := newDoor(t, nil)
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Host = "memory.example.com"
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 8421}))
	w := httptest.NewRecorder()
	d.h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d on a non-loopback listener", w.Code)
	}
}
