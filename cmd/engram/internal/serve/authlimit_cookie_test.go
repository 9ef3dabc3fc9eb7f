package serve_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/memory"
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
			tok := d.token(t, memory.TokenSpec{Human: "alice"})
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
