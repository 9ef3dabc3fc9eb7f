package serve

import (
	"net"
	"net/http/httptest"
	"testing"
)

func TestOriginAllowed(t *testing.T) {
	h := &Handler{opts: Options{Origins: []string{"https://app.example.com"}}}
	for _, c := range []struct {
		host, origin string
		ok           bool
	}{
		{"127.0.0.1:8421", "", true},
		{"127.0.0.1:8421", "http://127.0.0.1:8421", true},
		{"127.0.0.1:8421", "http://127.0.0.1:8422", false},
		{"127.0.0.1:8421", "http://localhost:8421", false},
		{"127.0.0.1:8421", "https://app.example.com", true},
		{"127.0.0.1:8421", "https://app.example.com:444", false},
		{"127.0.0.1:8421", "http://app.example.com", false},
		{"127.0.0.1:8421", "null", false},
		{"127.0.0.1:8421", "file://", false},
		{"mem.example.com", "https://mem.example.com", true},
		{"mem.example.com", "https://mem.example.com.evil.example", false},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.Host = c.host
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if got := h.originAllowed(r); got != c.ok {
			t.Errorf("Host %s, Origin %q: allowed = %v, want %v", c.host, c.origin, got, c.ok)
		}
	}
}

func TestListening(t *testing.T) {
	for _, c := range []struct {
		ip   string
		tls  bool
		warn bool
	}{
		{"127.0.0.1", false, false}, {"::1", false, false}, {"0.0.0.0", false, true}, {"10.0.0.5", false, true}, {"0.0.0.0", true, false},
	} {
		got := Listening(&net.TCPAddr{IP: net.ParseIP(c.ip), Port: 8421}, c.tls)
		if (got != "") != c.warn {
			t.Errorf("%s tls=%v: warning %q", c.ip, c.tls, got)
		}
	}
}
