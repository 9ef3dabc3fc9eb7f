package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

func TestClientAddr(t *testing.T) {
	a, err := newAuthLimit(&Options{TrustedProxies: []string{"10.0.0.0/8", "::1", "fd00::/8"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"192.0.2.1:5000", nil, "192.0.2.1"},
		{"192.0.2.1:5000", []string{"198.51.100.1"}, "192.0.2.1"}, // not a trusted peer: the header is the client's word
		{"10.1.2.3:5000", nil, "10.1.2.3"},
		{"10.1.2.3:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.1.2.3:5000", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"10.1.2.3:5000", []string{"203.0.113.9", "198.51.100.1, 10.9.9.9"}, "198.51.100.1"}, // proxies chained, one header each
		{"10.1.2.3:5000", []string{"10.9.9.9"}, "10.9.9.9"},                                  // only proxies: the left-most
		{"10.1.2.3:5000", []string{"203.0.113.9, garbage"}, "10.1.2.3"},                      // unreadable: the last trusted hop
		{"10.1.2.3:5000", []string{"[2001:db8::7]:443"}, "2001:db8::7"},
		{"10.1.2.3:5000", []string{"198.51.100.1:1234"}, "198.51.100.1"},
		{"[::1]:5000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"[::ffff:10.0.0.1]:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"[fd00::1]:5000", []string{"2001:db8::1"}, "2001:db8::1"},
	} {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.RemoteAddr = c.remote
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := a.clientAddr(r).String(); got != c.want {
			t.Errorf("peer %s, X-Forwarded-For %q: client %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
}

func TestAddrKey(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"192.0.2.1", "192.0.2.1/32"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
	} {
		if got := addrKey(netip.MustParseAddr(c.ip)).String(); got != c.want {
			t.Errorf("%s: key %s, want %s", c.ip, got, c.want)
		}
	}
}

// An address's bucket is dropped once refilled, its debt included, and a
// good secret once its time is up.
func TestAuthLimitPrune(t *testing.T) {
	a, err := newAuthLimit(&Options{AuthFailureBurst: 2, AuthFailureRate: 1, AuthFailureGlobalBurst: 100, AuthFailureGlobalRate: 100})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r := httptest.NewRequest("GET", "/mcp", nil)
	for range 3 { // one past the burst: a debt of one
		a.charge(r, t0)
	}
	a.remember(r, "engram_x", t0)
	a.prune(t0.Add(2 * time.Second))
	if a.addresses() != 1 {
		t.Fatal("dropped before its debt was refilled")
	}
	if wait, scope := a.check(r, t0.Add(1500*time.Millisecond)); wait <= 0 || scope != "address" {
		t.Fatalf("check with a debt: wait %v scope %q", wait, scope)
	}
	a.prune(t0.Add(3 * time.Second))
	if a.addresses() != 0 {
		t.Fatal("a refilled bucket kept")
	}
	if !a.known(r, "engram_x", t0.Add(goodFor-time.Second)) || a.known(r, "engram_x", t0.Add(goodFor)) {
		t.Fatal("a good secret's time")
	}
	a.prune(t0.Add(goodFor))
	if len(a.good) != 0 {
		t.Fatal("an expired good secret kept")
	}
}

func TestNewRefuses(t *testing.T) {
	mk := func(context.Context, string, bool) (*mcp.Server, error) { return nil, nil }
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"trusted proxy not an address", Options{TrustedProxies: []string{"proxy.example.com"}}},
		{"trusted proxy bad prefix", Options{TrustedProxies: []string{"10.0.0.0/33"}}},
		{"short metrics token", Options{MetricsToken: "short"}},
		{"metrics token with a space", Options{MetricsToken: "0123456789 abcdef0123"}},
	} {
		o := c.opts
		o.Tokens, o.MCPServer = nopTokens{}, mk
		if _, err := New(&o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err %v, want ErrInvalidOptions", c.name, err)
		}
	}
}

func TestReadMetricsToken(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, content, want string
	}{
		{"trimmed", "  0123456789abcdef0123\n", "0123456789abcdef0123"},
		{"short", "0123\n", ""},
		{"two words", "0123456789abcdef 0123456789abcdef\n", ""},
		{"empty", "", ""},
	} {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ReadMetricsToken(p)
		if c.want == "" {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%s: %q, %v; want ErrInvalidOptions", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := ReadMetricsToken(filepath.Join(dir, "missing")); !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// nopTokens stands in for the store where New refuses before using it.
type nopTokens struct{}

func (nopTokens) Verify(context.Context, string) (accesstoken.Token, error) {
	return accesstoken.Token{}, accesstoken.ErrInvalid
}
func (nopTokens) Get(context.Context, int64) (accesstoken.Token, error) {
	return accesstoken.Token{}, memory.ErrNotFound
}
func (nopTokens) UseLoginLink(context.Context, string) (accesstoken.Token, error) {
	return accesstoken.Token{}, accesstoken.ErrLoginLinkInvalid
}

// The limit's cost on a valid token's request (its secret known) and on a
// guess that is let through to the lookup.
func BenchmarkAdmit(b *testing.B) {
	for _, known := range []bool{true, false} {
		b.Run(map[bool]string{true: "known", false: "unknown"}[known], func(b *testing.B) {
			h, err := New(&Options{Tokens: nopTokens{}, MCPServer: func(context.Context, string, bool) (*mcp.Server, error) { return nil, nil }})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Shutdown(context.Background())
			secret := "engram_0123456789abcdef0123456789abcdef0123"
			r := httptest.NewRequest("POST", "/mcp", nil)
			if known {
				h.authSucceeded(r, secret)
			}
			w := httptest.NewRecorder()
			for b.Loop() {
				if !h.admit(w, r, secret) {
					b.Fatal("refused")
				}
			}
		})
	}
}

// Client addresses are compared unmapped (an IPv4 client on a dual-stack
// listener is its IPv4 address), so a trusted proxy given as an
// IPv4-mapped IPv6 prefix must be unmapped too: kept as written it
// matched no peer, X-Forwarded-For was ignored, and every client behind
// the proxy shared its one failure budget, one guesser locking all out.
func TestTrustedProxyMappedPrefix(t *testing.T) {
	for _, c := range []struct {
		trusted, remote, want string
	}{
		{"::ffff:10.0.0.0/104", "10.1.2.3:5000", "198.51.100.1"},
		{"::ffff:10.0.0.0/104", "[::ffff:10.1.2.3]:5000", "198.51.100.1"},
		{"::ffff:127.0.0.1/128", "127.0.0.1:5000", "198.51.100.1"},
		{"::ffff:127.0.0.1", "127.0.0.1:5000", "198.51.100.1"},
		{"::ffff:10.0.0.0/104", "192.0.2.1:5000", "192.0.2.1"},
		{"::/0", "[2001:db8::1]:5000", "198.51.100.1"},
	} {
		a, err := newAuthLimit(&Options{TrustedProxies: []string{c.trusted}})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.RemoteAddr = c.remote
		r.Header.Set("X-Forwarded-For", "198.51.100.1")
		if got := a.clientAddr(r).String(); got != c.want {
			t.Errorf("trusted %s, peer %s: client %s, want %s", c.trusted, c.remote, got, c.want)
		}
	}
}

// The global ceiling skips addresses with no failure on record, but when
// the table is full a new address cannot go on record: the ceiling must
// hold it then, or a guesser with more addresses than the table holds
// would look up without limit.
func TestAuthLimitFullTableHeldByCeiling(t *testing.T) {
	a, err := newAuthLimit(&Options{AuthFailureBurst: 1, AuthFailureRate: 1e-3, AuthFailureGlobalBurst: 1, AuthFailureGlobalRate: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	req := func(i int) *http.Request {
		r := httptest.NewRequest("GET", "/mcp", nil)
		r.RemoteAddr = fmt.Sprintf("[2001:db8:%x:%x::1]:1234", i>>16, i&0xffff)
		return r
	}
	if wait, _ := a.check(req(0), now); wait != 0 {
		t.Fatal("a clean address held before any failure")
	}
	for i := range maxTracked {
		a.charge(req(i), now)
	}
	if a.addresses() != maxTracked {
		t.Fatalf("%d addresses on record, want %d", a.addresses(), maxTracked)
	}
	if wait, scope := a.check(req(maxTracked), now); wait <= 0 || scope != "global" {
		t.Fatalf("a new address with the table full: wait %v scope %q, want held by the global ceiling", wait, scope)
	}
}
