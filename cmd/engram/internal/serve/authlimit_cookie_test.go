package serve_test

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// A browser holding a login cookie the server no longer knows (one from
// before a restart, or a login the sweep ended) keeps sending it on every
// request until told to drop it. The docs promise such a cookie counts
// once: without clearing it, a tab's page loads and asset requests used
// up the address's failure budget and the person's own sign-in got 429.
func TestStaleLoginCookieCountsOnce(t *testing.T) {
	for _, c := range []struct {
		name  string
		stale func(t *testing.T, d *door) string // the cookie's value
	}{
		{"from before a restart", func(*testing.T, *door) string { return "cookie-from-the-last-process" }},
		{"logged out elsewhere", func(t *testing.T, d *door) string {
			v := strings.TrimPrefix(d.loginCookie(t, "alice"), "engram_serve_login=")
			// Signing out ends the login on the server; this browser's
			// copy of the cookie stays.
			d.do(t, "POST", "/ui/logout", "", map[string]string{"Cookie": "engram_serve_login=" + v})
			return v
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const burst = 3
			d := newDoor(t, &serve.Options{AuthFailureBurst: burst, AuthFailureRate: 1e-3})
			jar, err := cookiejar.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(d.url + "/ui/")
			jar.SetCookies(u, []*http.Cookie{{Name: "engram_serve_login", Value: c.stale(t, d), Path: "/ui"}})
			browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			get := func(path string) int {
				resp, err := browser.Get(d.url + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			// A page and its assets, more requests than the burst.
			for _, p := range []string{"/ui/", "/ui/static/app.css", "/ui/static/app.js", "/ui/blocks", "/ui/proposals"} {
				if st := get(p); st != http.StatusSeeOther {
					t.Fatalf("GET %s with a stale cookie: status %d, want 303", p, st)
				}
			}
			tok := d.token(t, accesstoken.Spec{Human: "alice"})
			resp, err := browser.PostForm(d.url+"/ui/login", url.Values{"token": {tok}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("signing in with a valid token after a stale cookie: status %d, want 303", resp.StatusCode)
			}
		})
	}
}

// A credential that authenticated recently passes a limited address, so a
// NAT's legitimate user is not locked out by a guesser beside it. That
// pass must not turn the 429 into an oracle for a guesser elsewhere: were
// it per secret alone, a limited guesser would get 429 for every wrong
// guess and a success for the one that equals a token in use (the metrics
// token a scraper sends every 15 seconds, user-chosen and as short as 16
// bytes), guessing at full speed with no lookup to slow it. The pass is
// bound to the address the secret succeeded from.
func TestFailedLoginLimitNoOracle(t *testing.T) {
	const burst = 2
	try := func(t *testing.T, d *door, path, secret, client string) int {
		h := mcpHeader(secret, "")
		h["X-Forwarded-For"] = client
		if path == "/metrics" {
			h = map[string]string{"Authorization": "Bearer " + secret, "X-Forwarded-For": client}
			return d.do(t, "GET", path, "", h).StatusCode
		}
		return d.do(t, "POST", path, initBody, h).StatusCode
	}
	for _, c := range []struct {
		name, path string
		secret     func(t *testing.T, d *door) string
	}{
		{"metrics token", "/metrics", func(*testing.T, *door) string { return metricsSecret }},
		{"agent token", "/mcp", func(t *testing.T, d *door) string { return d.token(t, accesstoken.Spec{Agent: "ada"}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDoor(t, &serve.Options{AuthFailureBurst: burst, AuthFailureRate: 1e-3, MetricsToken: metricsSecret,
				TrustedProxies: []string{"127.0.0.1"}})
			const owner, guesser = "192.0.2.10", "198.51.100.66"
			secret := c.secret(t, d)
			if st := try(t, d, c.path, secret, owner); st != 200 {
				t.Fatalf("the owner's request: status %d", st)
			}
			for i := range burst {
				if st := try(t, d, c.path, fmt.Sprintf("guess-%d-padding-padding", i), guesser); st != 401 {
					t.Fatalf("guess %d: status %d, want 401", i, st)
				}
			}
			if st := try(t, d, c.path, "guess-x-padding-padding", guesser); st != 429 {
				t.Fatalf("a wrong guess past the burst: status %d, want 429", st)
			}
			if st := try(t, d, c.path, secret, guesser); st != 429 {
				t.Errorf("the right guess from the limited guesser: status %d, want 429 like a wrong one", st)
			}
			if st := try(t, d, c.path, secret, owner); st != 200 {
				t.Errorf("the owner, from its own address: status %d", st)
			}
		})
	}
}
