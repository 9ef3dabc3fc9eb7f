package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// uiLinkAttr matches the attributes of a page that name a URL of the app.
var uiLinkAttr = regexp.MustCompile(`(href|src|action|data-events|name="return" value)="([^"]*)"`)

// TestServeUIUnderPrefix: behind serve everything of the web UI is under
// /ui/ — its pages, links, forms, assets, event stream, redirects and
// cookie — and nothing but /mcp, /healthz and /ui/… answers at the root
// ("/" leads to /ui/).
func TestServeUIUnderPrefix(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "rules", Value: "Be kind.", Permission: blocks.Human})
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "Tea on Monday.", Permission: blocks.Human})
	p1, err := store.Agent("ada").Shared("ada", "rules").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " Be brief."}, "shorter")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := store.Agent("ada").Shared("ada", "notes").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " Cake too."}, "cake")
	if err != nil {
		t.Fatal(err)
	}
	f := startServe(t, store, nil)
	_, secret := newToken(t, store, accesstoken.Spec{Human: "alice"})
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	noFollow := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(c *http.Client, path string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}

	// Sign in at /ui/login: the browser lands on /ui/, and the cookie is
	// sent to /ui/ only.
	resp, _ := get(b, "/ui/login?token="+url.QueryEscape(secret))
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/" {
		t.Fatalf("login: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	at := func(path string) *url.URL {
		u, _ := url.Parse(f.url + path)
		return u
	}
	var login *http.Cookie
	for _, c := range jar.Cookies(at("/ui/proposals")) {
		if c.Name == "engram_serve_login" {
			login = c
		}
	}
	if login == nil {
		t.Fatal("no login cookie for /ui/")
	}
	if cs := jar.Cookies(at("/mcp")); len(cs) != 0 {
		t.Errorf("the login cookie goes to /mcp: %v", cs)
	}

	// Every page's links, forms, assets and event stream are under /ui/.
	var csrf string
	for _, c := range []struct {
		path string
		want []string
	}{
		{"/ui/", []string{`href="/ui/static/style.css"`, `src="/ui/static/app.js"`, `data-events="/ui/events"`, `href="/ui/blocks/ada/rules"`, `href="/ui/agents/ada"`}},
		{"/ui/agents/ada", []string{`href="/ui/blocks/ada/notes"`, `href="/ui/search?agent=ada"`}},
		{"/ui/blocks/ada/rules", []string{`action="/ui/proposals/` + strconv.FormatInt(p1.ID, 10) + `/approve"`, `name="return" value="/ui/blocks/ada/rules"`}},
		{"/ui/proposals", []string{`action="/ui/proposals/` + strconv.FormatInt(p2.ID, 10) + `/reject"`}},
		{"/ui/context?agent=ada", []string{`action="/ui/context"`}},
		{"/ui/search?mode=fts&q=kind", []string{`action="/ui/search"`, `href="/ui/blocks/ada/rules"`}},
	} {
		resp, body := get(b, c.path)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", c.path, resp.StatusCode, body)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %s", c.path, w)
			}
		}
		links := uiLinkAttr.FindAllStringSubmatch(body, -1)
		for _, m := range links {
			if u := m[2]; !strings.HasPrefix(u, "/ui/") && !strings.HasPrefix(u, "?") && !strings.HasPrefix(u, "#") {
				t.Errorf("GET %s: %s=%q is outside /ui/", c.path, m[1], u)
			}
		}
		if len(links) < 8 {
			t.Errorf("GET %s: only %d links", c.path, len(links))
		}
		if m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body); m != nil {
			csrf = m[1]
		}
	}
	for path, ctype := range map[string]string{"/ui/static/app.js": "javascript", "/ui/static/style.css": "text/css"} {
		resp, body := get(b, path)
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Type"), ctype) || body == "" {
			t.Errorf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}

	// Approving from the block page goes back to it, under /ui/.
	post := func(path string, form url.Values, cookie *http.Cookie) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", f.url)
		if cookie != nil {
			req.AddCookie(cookie)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp = post("/ui/proposals/"+strconv.FormatInt(p1.ID, 10)+"/approve", url.Values{"csrf": {csrf}, "return": {"/ui/blocks/ada/rules"}}, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/blocks/ada/rules?done=approved") {
		t.Fatalf("approve: %d to %q", resp.StatusCode, loc)
	}
	if ps, _ := store.Agent("ada").Block("rules").Proposals(ctx); len(ps) != 1 || ps[0].Status != "approved" || ps[0].DecidedBy != memory.HumanApprover+"alice" {
		t.Fatalf("proposal after approval: %+v", ps)
	}

	// The event stream answers under /ui/.
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ectx, http.MethodGet, f.url+"/ui/events", nil)
	eresp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ready := false
	for sc := bufio.NewScanner(eresp.Body); !ready && sc.Scan(); {
		ready = sc.Text() == "event: ready"
	}
	eresp.Body.Close()
	if eresp.StatusCode != 200 || !ready {
		t.Errorf("GET /ui/events: %d, ready %v", eresp.StatusCode, ready)
	}

	// The root: "/" and "/ui" lead to /ui/; the UI's old root paths are
	// 404, even with the login cookie sent along.
	for _, path := range []string{"/", "/ui"} {
		req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/ui/" {
			t.Errorf("GET %s: %d to %q, want /ui/", path, resp.StatusCode, loc)
		}
	}
	for _, path := range []string{"/proposals", "/agents/ada", "/blocks/ada/rules", "/context?agent=ada", "/search?q=kind",
		"/events", "/static/app.js", "/static/style.css", "/login", "/logout", "/uix", "/metrics"} {
		req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
		req.AddCookie(login)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "Be kind") {
			t.Errorf("GET %s at the root: %d, want 404", path, resp.StatusCode)
		}
	}
	for _, path := range []string{"/", "/proposals/" + strconv.FormatInt(p2.ID, 10) + "/approve"} {
		if resp := post(path, url.Values{"csrf": {csrf}}, login); resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s at the root: %d, want 404", path, resp.StatusCode)
		}
	}
	if ps, _ := store.Agent("ada").Block("notes").Proposals(ctx); len(ps) != 1 || ps[0].Status != "pending" {
		t.Fatalf("a POST at the root decided a proposal: %+v", ps)
	}

	// Signing out goes to /ui/login and clears the cookie of /ui.
	resp = post("/ui/logout", nil, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/ui/login" {
		t.Errorf("logout: %d to %q", resp.StatusCode, loc)
	}
	if cs := jar.Cookies(at("/ui/")); len(cs) != 0 {
		t.Errorf("cookies after signing out: %v", cs)
	}
}
