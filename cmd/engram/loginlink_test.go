package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// TestTokenLoginURLCLI: token login-url prints BASE/ui/login?link=SECRET
// as its last line for a live human token, once per call, and refuses an
// agent's or a revoked token and bad flags.
func TestTokenLoginURLCLI(t *testing.T) {
	db := filepath.Join(t.TempDir(), "links.db")
	ok(t, db, "token", "create", "--human", "alice")
	ok(t, db, "token", "create", "--agent", "ada")
	ok(t, db, "token", "create", "--human", "bob")
	ok(t, db, "token", "revoke", "3")

	out := ok(t, db, "token", "login-url", "1", "--base", "https://engram.example.com/", "--expires", "5m")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	link := lines[len(lines)-1]
	const prefix = "https://engram.example.com/ui/login?link=" + accesstoken.LoginLinkPrefix
	if !strings.HasPrefix(link, prefix) || len(link) < len(prefix)+43 {
		t.Fatalf("login-url printed %q", out)
	}
	var js struct {
		TokenID int64  `json:"token_id"`
		URL     string `json:"url"`
	}
	if err := json.Unmarshal([]byte(ok(t, db, "--json", "token", "login-url", "1")), &js); err != nil || js.TokenID != 1 ||
		!strings.HasPrefix(js.URL, "http://127.0.0.1:8421/ui/login?link="+accesstoken.LoginLinkPrefix) || js.URL == link {
		t.Fatalf("login-url --json: %+v %v", js, err)
	}
	if strings.Contains(ok(t, db, "token", "list", "--json"), accesstoken.LoginLinkPrefix) {
		t.Fatal("token list shows a login link")
	}

	// The printed link signs alice in once.
	store := openServeStoreAt(t, db)
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	secret := u.Query().Get("link")
	if tok, err := accesstoken.Of(store).UseLoginLink(context.Background(), secret); err != nil || tok.Human != "alice" {
		t.Fatalf("using the printed link: %+v %v", tok, err)
	}
	if _, err := accesstoken.Of(store).UseLoginLink(context.Background(), secret); !errors.Is(err, accesstoken.ErrLoginLinkInvalid) {
		t.Fatalf("second use of the printed link: %v", err)
	}

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"token", "login-url", "2"}, 1, "token login-url: token 2 is an agent's"},
		{[]string{"token", "login-url", "3"}, 1, "token 3 is revoked"},
		{[]string{"token", "login-url", "9"}, 1, "no token 9"},
		{[]string{"token", "login-url"}, 2, "ID"},
		{[]string{"token", "login-url", "x"}, 2, "not a token ID"},
		{[]string{"token", "login-url", "1", "2"}, 2, "ID"},
		{[]string{"token", "login-url", "1", "--base", "127.0.0.1:8421"}, 2, "--base"},
		{[]string{"token", "login-url", "1", "--base", "ftp://h"}, 2, "--base"},
		{[]string{"token", "login-url", "1", "--expires", "0s"}, 2, "--expires"},
		{[]string{"token", "login-url", "1", "--expires", "25h"}, 2, "--expires"},
	} {
		stdout, stderr, code := cli(t, db, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.says) || strings.Contains(stdout, accesstoken.LoginLinkPrefix) {
			t.Errorf("engram %s: exit %d, stderr %q, stdout %q; want exit %d saying %q", strings.Join(c.args, " "), code, stderr, stdout, c.code, c.says)
		}
	}
}

// TestServeUILoginLink: a one-time login link signs in once through
// serve: the cookie (path /ui) is set and the browser lands on /ui/ with
// no secret in its address; a second use, an expired link, and a link
// whose token was revoked get the sign-in page with 401 and no cookie. A
// HEAD (a link previewer) or a cross-site navigation does not use it up.
func TestServeUILoginLink(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "serve.db"), &memory.Options{Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := startServe(t, store, nil)
	alice, _ := newToken(t, store, accesstoken.Spec{Human: "alice"})
	bob, _ := newToken(t, store, accesstoken.Spec{Human: "bob"})
	link := func(tok accesstoken.Token, ttl time.Duration) string {
		t.Helper()
		s, err := accesstoken.Of(store).CreateLoginLink(ctx, tok.ID, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return f.url + "/ui/login?link=" + url.QueryEscape(s)
	}
	noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(c *http.Client, method, u string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, u, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}
	refused := func(what string, resp *http.Response, body string) {
		t.Helper()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `name="token"`) || len(resp.Cookies()) != 0 {
			t.Errorf("%s: %d, cookies %v; want the sign-in page with 401 and no cookie:\n%s", what, resp.StatusCode, resp.Cookies(), body)
		}
	}

	// A link previewer's HEAD and a cross-site navigation leave it usable.
	u := link(alice, 15*time.Minute)
	if resp, _ := do(noFollow, http.MethodHead, u); resp.StatusCode != 200 || len(resp.Cookies()) != 0 {
		t.Fatalf("HEAD of a link: %d %v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := do(noFollow, http.MethodGet, u, "Sec-Fetch-Site", "cross-site"); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("cross-site link: %d %v", resp.StatusCode, resp.Cookies())
	}

	// One use: a cookie for /ui only, and a redirect to /ui/ without the
	// secret.
	resp, _ := do(noFollow, http.MethodGet, u)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/" {
		t.Fatalf("link: %d to %q, want 303 to /ui/", resp.StatusCode, resp.Header.Get("Location"))
	}
	var login *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "engram_serve_login" {
			login = c
		}
	}
	if login == nil || login.Path != "/ui" || !login.HttpOnly || login.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login cookie %+v: want HttpOnly, SameSite=Strict, path /ui", login)
	}

	// A browser following a fresh link ends on /ui/, signed in, with no
	// secret in its address.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, body := do(browser, http.MethodGet, link(alice, 15*time.Minute))
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/" || resp.Request.URL.RawQuery != "" || strings.Contains(resp.Request.URL.String(), accesstoken.LoginLinkPrefix) {
		t.Fatalf("browser after the link: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	if strings.Contains(body, `name="token"`) {
		t.Fatal("the browser got the sign-in page after the link")
	}

	// Second use, expired, revoked, unknown: 401, no cookie.
	resp, body = do(noFollow, http.MethodGet, u)
	refused("second use", resp, body)
	expiring := link(bob, time.Minute)
	now.Add(int64(time.Minute))
	resp, body = do(noFollow, http.MethodGet, expiring)
	refused("expired link", resp, body)
	revoked := link(bob, time.Hour)
	if err := accesstoken.Of(store).Revoke(ctx, bob.ID); err != nil {
		t.Fatal(err)
	}
	resp, body = do(noFollow, http.MethodGet, revoked)
	refused("link of a revoked token", resp, body)
	resp, body = do(noFollow, http.MethodGet, f.url+"/ui/login?link="+accesstoken.LoginLinkPrefix+"AAAA")
	refused("unknown link", resp, body)
	if strings.Contains(f.log.String(), accesstoken.LoginLinkPrefix) {
		t.Error("the access log shows a login link")
	}
}

// TestServeLoginLinkTwoProcesses: one link opened at once through two
// engram serve processes on one database signs in exactly once, on
// SQLite and on PostgreSQL.
func TestServeLoginLinkTwoProcesses(t *testing.T) {
	if os.Getenv("ENGRAM_SERVE_CHILD") != "" {
		t.Skip("child")
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			db := filepath.Join(t.TempDir(), "links.db")
			if engine == "postgres" {
				db = pgtest.Start(t).NewDatabase(t)
			}
			store := openServeStoreAt(t, db)
			alice, _ := newToken(t, store, accesstoken.Spec{Human: "alice"})
			a, _ := startServeProcess(t, db)
			b, _ := startServeProcess(t, db)
			noFollow := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for round := 0; round < 3; round++ {
				secret, err := accesstoken.Of(store).CreateLoginLink(ctx, alice.ID, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				var signedIn, refused atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := 0; i < 8; i++ {
					base := a
					if i%2 == 1 {
						base = b
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						resp, err := noFollow.Get(base + "/ui/login?link=" + url.QueryEscape(secret))
						if err != nil {
							t.Error(err)
							return
						}
						resp.Body.Close()
						switch {
						case resp.StatusCode == http.StatusSeeOther && len(resp.Cookies()) == 1:
							signedIn.Add(1)
						case resp.StatusCode == http.StatusUnauthorized && len(resp.Cookies()) == 0:
							refused.Add(1)
						default:
							t.Errorf("link through %s: %d, cookies %v", base, resp.StatusCode, resp.Cookies())
						}
					}()
				}
				close(start)
				wg.Wait()
				if signedIn.Load() != 1 || refused.Load() != 7 {
					t.Fatalf("round %d: %d signed in, %d refused; want 1 and 7", round, signedIn.Load(), refused.Load())
				}
			}
		})
	}
}
