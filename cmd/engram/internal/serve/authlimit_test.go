package serve_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

const metricsSecret = "metrics-secret-for-tests"

func form() map[string]string {
	return map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

// loginCookie signs a human in through the form and returns the cookie.
func (d *door) loginCookie(t *testing.T, human string) string {
	t.Helper()
	tok := d.token(t, accesstoken.Spec{Human: human})
	resp := d.do(t, "POST", "/ui/login", url.Values{"token": {tok}}.Encode(), form())
	for _, c := range resp.Cookies() {
		if c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("login: status %d, no cookie", resp.StatusCode)
	return ""
}

func (d *door) link(t *testing.T, human string) string {
	t.Helper()
	tok, _, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Human: human})
	if err != nil {
		t.Fatal(err)
	}
	link, err := accesstoken.Of(d.store).CreateLoginLink(context.Background(), tok.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// Every door counts failed authentications per client address: after
// the burst, a credential the door has not seen valid gets 429 with
// Retry-After and costs no lookup; successes cost nothing, and a
// credential that worked before still works.
func TestFailedLoginLimit(t *testing.T) {
	const burst = 3
	type attempt func(t *testing.T, d *door, secret string) *http.Response
	mcpTry := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "POST", "/mcp", initBody, mcpHeader(secret, ""))
	}
	syncQuery := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/sync?token="+url.QueryEscape(secret), "", nil)
	}
	syncBearer := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/sync", "", map[string]string{"Authorization": "Bearer " + secret})
	}
	uiForm := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "POST", "/ui/login", url.Values{"token": {secret}}.Encode(), form())
	}
	uiURL := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/ui/login?token="+url.QueryEscape(secret), "", nil)
	}
	uiLink := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/ui/login?link="+url.QueryEscape(secret), "", nil)
	}
	uiCookie := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/ui/page", "", map[string]string{"Cookie": secret})
	}
	metrics := func(t *testing.T, d *door, secret string) *http.Response {
		return d.do(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer " + secret})
	}
	agent := func(t *testing.T, d *door) string { return d.token(t, accesstoken.Spec{Agent: "ada"}) }
	human := func(t *testing.T, d *door) string { return d.token(t, accesstoken.Spec{Human: "alice"}) }
	for _, c := range []struct {
		name    string
		try     attempt
		good    func(t *testing.T, d *door) string // a valid credential, made anew each call
		bad     func(i int) string
		failed  int // the status of a failed attempt
		ok      func(status int) bool
		lookups bool // a failed attempt asks the store
		reuse   bool // a credential that worked skips the limit (a one-time link and a login cookie do not need to)
	}{
		{"mcp bearer", mcpTry, agent, func(i int) string { return fmt.Sprintf("engram_guess%d", i) }, 401, is(200), true, true},
		{"sync ?token=", syncQuery, agent, func(i int) string { return fmt.Sprintf("engram_guess%d", i) }, 401, notAuthRefusal, true, true},
		{"sync bearer", syncBearer, agent, func(i int) string { return fmt.Sprintf("engram_guess%d", i) }, 401, notAuthRefusal, true, true},
		{"ui login form", uiForm, human, func(i int) string { return fmt.Sprintf("engram_guess%d", i) }, 401, is(303), true, true},
		{"ui login url", uiURL, human, func(i int) string { return fmt.Sprintf("engram_guess%d", i) }, 401, is(303), true, true},
		{"ui login link", uiLink, func(t *testing.T, d *door) string { return d.link(t, "alice") },
			func(i int) string { return fmt.Sprintf("engramlink_guess%d", i) }, 401, is(303), true, false},
		{"ui cookie", uiCookie, func(t *testing.T, d *door) string { return d.loginCookie(t, "alice") },
			func(i int) string { return fmt.Sprintf("engram_serve_login=guess%d", i) }, 303, is(200), false, true},
		{"metrics", metrics, func(*testing.T, *door) string { return metricsSecret },
			func(i int) string { return fmt.Sprintf("guess%d", i) }, 401, is(200), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDoor(t, &serve.Options{AuthFailureBurst: burst, AuthFailureRate: 1e-3, MetricsToken: metricsSecret})
			good := c.good(t, d)
			// Successes, more of them than the burst, spend nothing.
			for i := range 2 * burst {
				cred := good
				if !c.reuse {
					cred = c.good(t, d)
				}
				if st := c.try(t, d, cred).StatusCode; !c.ok(st) {
					t.Fatalf("valid credential %d: status %d", i, st)
				}
			}
			for i := range burst {
				before := d.lookups.Load()
				if st := c.try(t, d, c.bad(i)).StatusCode; st != c.failed {
					t.Fatalf("failure %d: status %d, want %d", i, st, c.failed)
				}
				if c.lookups && d.lookups.Load() == before {
					t.Fatalf("failure %d: no lookup", i)
				}
			}
			before := d.lookups.Load()
			resp := c.try(t, d, c.bad(burst))
			if resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("failure past the burst: status %d, want 429", resp.StatusCode)
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
			if n := d.lookups.Load() - before; n != 0 {
				t.Errorf("a limited attempt cost %d lookups", n)
			}
			if c.reuse {
				if st := c.try(t, d, good).StatusCode; !c.ok(st) {
					t.Errorf("the credential that worked, while its address is limited: status %d", st)
				}
			}
			if c.lookups {
				// A valid credential never seen cannot be told from a guess
				// without the lookup the limit is there to save.
				if st := c.try(t, d, c.good(t, d)).StatusCode; st != http.StatusTooManyRequests {
					t.Errorf("a new valid credential while limited: status %d, want 429", st)
				}
			}
		})
	}
}

func is(want int) func(int) bool { return func(st int) bool { return st == want } }

// notAuthRefusal: a /sync request that is not a WebSocket upgrade fails
// after authentication, with neither 401 nor 429.
func notAuthRefusal(st int) bool { return st != 401 && st != 429 && st != 403 }

// The limit is per client address: the connection's, unless it is a
// trusted proxy, whose X-Forwarded-For then names the client. The global
// ceiling holds a guesser spread over addresses.
func TestFailedLoginLimitAddresses(t *testing.T) {
	try := func(t *testing.T, d *door, xff string, i int) int {
		h := mcpHeader(fmt.Sprintf("engram_guess%d", i), "")
		if xff != "" {
			h["X-Forwarded-For"] = xff
		}
		return d.do(t, "POST", "/mcp", initBody, h).StatusCode
	}
	t.Run("untrusted X-Forwarded-For is ignored", func(t *testing.T) {
		d := newDoor(t, &serve.Options{AuthFailureBurst: 2, AuthFailureRate: 1e-3})
		got := []int{try(t, d, "192.0.2.1", 0), try(t, d, "192.0.2.2", 1), try(t, d, "192.0.2.3", 2)}
		if fmt.Sprint(got) != "[401 401 429]" {
			t.Fatalf("statuses %v, want [401 401 429]: the header moved the count", got)
		}
	})
	t.Run("trusted proxy", func(t *testing.T) {
		d := newDoor(t, &serve.Options{AuthFailureBurst: 2, AuthFailureRate: 1e-3, TrustedProxies: []string{"127.0.0.0/8"}})
		got := []int{
			try(t, d, "192.0.2.1", 0), try(t, d, "192.0.2.1", 1), try(t, d, "192.0.2.1", 2),
			// The client's own entries come first; the proxy appends the peer.
			try(t, d, "192.0.2.1, 192.0.2.9", 3),
			try(t, d, "192.0.2.9, 192.0.2.1", 4),
			// One IPv6 host holds a /64.
			try(t, d, "2001:db8::1", 5), try(t, d, "2001:db8::2", 6), try(t, d, "2001:db8::3", 7),
			try(t, d, "2001:db8:0:1::1", 8),
		}
		if want := "[401 401 429 401 429 401 401 429 401]"; fmt.Sprint(got) != want {
			t.Fatalf("statuses %v, want %s", got, want)
		}
	})
	t.Run("global ceiling", func(t *testing.T) {
		d := newDoor(t, &serve.Options{AuthFailureBurst: 100, AuthFailureGlobalBurst: 3, AuthFailureGlobalRate: 1e-3, TrustedProxies: []string{"127.0.0.1"}})
		var got []int
		for i := range 5 {
			got = append(got, try(t, d, fmt.Sprintf("198.51.100.%d", i+1), i))
		}
		// Addresses that failed before are held once the ceiling is spent.
		for i := range 2 {
			got = append(got, try(t, d, fmt.Sprintf("198.51.100.%d", i+1), 5+i))
		}
		if want := "[401 401 401 401 401 429 429]"; fmt.Sprint(got) != want {
			t.Fatalf("statuses %v, want %s", got, want)
		}
		// A user from an address with no failure on record still gets in
		// while the guessers keep the ceiling spent: the ceiling must not
		// lock every new login out.
		tok := d.token(t, accesstoken.Spec{Agent: "late"})
		h := mcpHeader(tok, "")
		h["X-Forwarded-For"] = "203.0.113.7"
		if st := d.do(t, "POST", "/mcp", initBody, h).StatusCode; st != 200 {
			t.Fatalf("a valid token from a clean address while the ceiling is spent: %d", st)
		}
	})
	t.Run("new valid tokens at once", func(t *testing.T) {
		// Many agents on one host starting together: only failures count,
		// so a burst of new, valid tokens is never limited.
		d := newDoor(t, &serve.Options{AuthFailureBurst: 2, AuthFailureRate: 1e-3})
		toks := make([]string, 20)
		for i := range toks {
			toks[i] = d.token(t, accesstoken.Spec{Agent: fmt.Sprintf("agent%d", i)})
		}
		var wg sync.WaitGroup
		got := make([]int, len(toks))
		for i, tok := range toks {
			wg.Go(func() { got[i] = d.do(t, "POST", "/mcp", initBody, mcpHeader(tok, "")).StatusCode })
		}
		wg.Wait()
		for i, st := range got {
			if st != 200 {
				t.Errorf("token %d: status %d", i, st)
			}
		}
	})
	t.Run("refills", func(t *testing.T) {
		d := newDoor(t, &serve.Options{AuthFailureBurst: 1, AuthFailureRate: 20})
		if st := try(t, d, "", 0); st != 401 {
			t.Fatalf("first: %d", st)
		}
		if st := try(t, d, "", 1); st != 429 {
			t.Fatalf("second at once: %d", st)
		}
		time.Sleep(100 * time.Millisecond)
		if st := try(t, d, "", 2); st != 401 {
			t.Fatalf("after the refill: %d", st)
		}
	})
}

// A request without a credential (no ?token= on /sync, an empty sign-in
// form) is refused without counting: nothing was guessed or looked up.
func TestFailedLoginLimitNoCredential(t *testing.T) {
	d := newDoor(t, &serve.Options{AuthFailureBurst: 1, AuthFailureRate: 1e-3})
	var got []int
	for range 3 {
		got = append(got, d.do(t, "GET", "/sync", "", nil).StatusCode)
		got = append(got, d.do(t, "POST", "/ui/login", "token=", form()).StatusCode)
		got = append(got, d.do(t, "POST", "/mcp", initBody, mcpHeader("", "")).StatusCode)
	}
	got = append(got, d.do(t, "GET", "/sync?token=engram_guess", "", nil).StatusCode, d.do(t, "GET", "/sync?token=engram_guess2", "", nil).StatusCode)
	if want := "[401 401 401 401 401 401 401 401 401 401 429]"; fmt.Sprint(got) != want {
		t.Fatalf("statuses %v, want %s", got, want)
	}
}

// A token revoked after it authenticated loses the bypass: its failures
// count like any other, and it is limited like a guess.
func TestFailedLoginLimitRevoked(t *testing.T) {
	d := newDoor(t, &serve.Options{AuthFailureBurst: 2, AuthFailureRate: 1e-3})
	tok, secret, err := accesstoken.Of(d.store).Create(context.Background(), accesstoken.Spec{Agent: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if st := d.do(t, "POST", "/mcp", initBody, mcpHeader(secret, "")).StatusCode; st != 200 {
		t.Fatalf("valid: %d", st)
	}
	if err := accesstoken.Of(d.store).Revoke(context.Background(), tok.ID); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 4 {
		got = append(got, strconv.Itoa(d.do(t, "POST", "/mcp", initBody, mcpHeader(secret, "")).StatusCode))
	}
	if s := strings.Join(got, " "); s != "401 401 429 429" {
		t.Fatalf("the revoked token's statuses %s, want 401 401 429 429", s)
	}
}

// doFrom sends one request from local address ip (any of 127/8 on a
// loopback test server).
func (d *door) doFrom(t *testing.T, ip string, method, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// With a trusted prefix holding more than the proxy, a client that skips
// the proxy and names its victim in X-Forwarded-For spends only its own
// peer's count for that name: the victim through the proxy is not locked
// out. (A client on the proxy's own address cannot be told apart: the
// documented caveat of TrustedProxies.)
func TestFailedLoginLimitSpoofedForwardedFor(t *testing.T) {
	d := newDoor(t, &serve.Options{AuthFailureBurst: 2, AuthFailureRate: 1e-3, TrustedProxies: []string{"127.0.0.0/8"}})
	const proxy, direct, victim = "127.0.0.1", "127.0.0.2", "198.51.100.7"
	try := func(from, secret string) int {
		h := mcpHeader(secret, "")
		h["X-Forwarded-For"] = victim
		return d.doFrom(t, from, "POST", "/mcp", initBody, h).StatusCode
	}
	var got []int
	for i := range 3 {
		got = append(got, try(direct, fmt.Sprintf("engram_guess%d", i)))
	}
	if fmt.Sprint(got) != "[401 401 429]" {
		t.Fatalf("the spoofer's guesses: %v, want [401 401 429]", got)
	}
	if st := try(proxy, d.token(t, accesstoken.Spec{Agent: "victim"})); st != 200 {
		t.Fatalf("the victim's new token through the proxy: %d, want 200 (locked out by a client that skipped the proxy)", st)
	}
	// Through the proxy, the victim's own failures still count.
	got = got[:0]
	for i := range 3 {
		got = append(got, try(proxy, fmt.Sprintf("engram_guess%d", 10+i)))
	}
	if fmt.Sprint(got) != "[401 401 429]" {
		t.Fatalf("guesses through the proxy: %v, want [401 401 429]", got)
	}
}
