package ui

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// linkAttr matches the attributes that name a URL of the app.
var linkAttr = regexp.MustCompile(`(href|src|action|data-events|name="return" value)="([^"]*)"`)

// checkLinks reports every link, form action, asset and event-stream URL
// of a page that leaves the app mounted at base: each must be under
// base+"/", or relative to the page ("?…", "#…").
func checkLinks(t *testing.T, page, base, body string) int {
	t.Helper()
	n := 0
	for _, m := range linkAttr.FindAllStringSubmatch(body, -1) {
		n++
		u := m[2]
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "?") && !strings.HasPrefix(u, "#") {
			t.Errorf("%s: %s=%q is outside %s/", page, m[1], u, base)
		}
	}
	return n
}

// TestBasePath: an app mounted at "/ui" answers only under /ui/, and
// every link, form, redirect, asset, the event stream and the cookie stay
// there; "//host" and "/\host" are still refused as redirect targets.
func TestBasePath(t *testing.T) {
	f := newFixtureAt(t, "/ui/")
	ctx := context.Background()
	if err := f.store.Agent("ada").Block("persona").SetText(ctx, "I am Ada, an analyst of data."); err != nil {
		t.Fatal(err)
	}
	hist, err := f.store.Agent("ada").Shared("ada", "persona").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := hist[0].Hash

	pages := []string{"/ui/", "/ui/agents/ada", "/ui/blocks/ada/notes", "/ui/blocks/ada/persona?at=" + first,
		"/ui/blocks/ada/persona/changes/" + first, "/ui/proposals", "/ui/context?agent=ada",
		"/ui/search?mode=fts&q=Meeting", "/ui/no/such/page"}
	for _, p := range pages {
		code, body := f.get(t, p)
		want := http.StatusOK
		if p == "/ui/no/such/page" {
			want = http.StatusNotFound
		}
		if code != want {
			t.Errorf("GET %s: %d, want %d: %s", p, code, want, excerpt(body))
		}
		if n := checkLinks(t, p, "/ui", body); n < 8 {
			t.Errorf("GET %s: only %d links found: %s", p, n, excerpt(body))
		}
	}
	for p, want := range map[string][]string{
		"/ui/":                               {`href="/ui/static/style.css"`, `src="/ui/static/app.js"`, `data-events="/ui/events"`, `href="/ui/blocks/ada/notes"`, `href="/ui/agents/bob"`, `href="/ui/context?agent=ada"`},
		"/ui/blocks/ada/notes":               {`action="/ui/proposals/` + itoa(f.notes) + `/approve"`, `name="return" value="/ui/blocks/ada/notes"`},
		"/ui/blocks/ada/persona?at=" + first: {`action="/ui/blocks/ada/persona/restore"`},
		"/ui/search?mode=fts&q=Meeting":      {`action="/ui/search"`, `href="/ui/blocks/ada/notes"`},
		"/ui/context?agent=ada":              {`action="/ui/context"`},
	} {
		_, body := f.get(t, p)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s lacks %s: %s", p, w, excerpt(body))
			}
		}
	}
	for p, want := range map[string]int{"/ui/static/app.js": 200, "/ui/static/style.css": 200, "/ui/static/": 404} {
		if code, _ := f.get(t, p); code != want {
			t.Errorf("GET %s: %d, want %d", p, code, want)
		}
	}

	// The cookie is for /ui only, and the root paths are not the app's
	// even with it.
	login, err := f.srv.LoginURL(f.ts.URL)
	if err != nil || !strings.HasPrefix(login, f.ts.URL+"/ui/?token=") {
		t.Fatalf("login URL %q, %v", login, err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(strings.Replace(login, "/ui/?", "/ui/blocks/ada/notes?page=1&", 1))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var session *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == f.srv.cookie {
			session = c
		}
	}
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/ui/blocks/ada/notes?page=1" {
		t.Errorf("sign-in on a page: %d to %q", res.StatusCode, loc)
	}
	if session == nil || session.Path != "/ui" {
		t.Fatalf("session cookie %+v: want Path /ui", session)
	}
	for _, p := range []string{"/", "/agents/ada", "/blocks/ada/notes", "/proposals", "/context", "/search", "/events", "/static/app.js", "/uix"} {
		req, _ := http.NewRequest(http.MethodGet, f.ts.URL+p, nil)
		req.AddCookie(session)
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s outside /ui: %d, want 404: %s", p, res.StatusCode, excerpt(string(body)))
		}
	}
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/ui", nil)
	req.AddCookie(session)
	if res, err = noFollow.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want /ui/", res.StatusCode, loc)
	}
	res, _ = f.post(t, "/proposals/"+itoa(f.notes)+"/approve", url.Values{"csrf": {f.csrf}},
		http.Header{"Cookie": {session.Name + "=" + session.Value}})
	if res.StatusCode != http.StatusNotFound || f.proposal(t, f.notes).Status != "pending" {
		t.Errorf("POST to the root's approve path: %d, proposal %s", res.StatusCode, f.proposal(t, f.notes).Status)
	}

	// Redirects after a sign-in stay in the app and on this server.
	addr := strings.TrimPrefix(f.ts.URL, "http://")
	for _, target := range []string{"//evil.example/x", `/\evil.example/x`, "/%2F/evil.example", "/elsewhere", "/uix"} {
		login, err := f.srv.LoginURL("")
		if err != nil {
			t.Fatal(err)
		}
		token := strings.TrimPrefix(login, "/ui/?token=")
		res := rawRequest(t, addr, "GET "+target+"?token="+token+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/ui/" {
			t.Errorf("sign-in at %q: %d to %q, want /ui/", target, res.StatusCode, loc)
		}
	}
	// Redirects after a decision: back to a block page of the app, else
	// the app's proposals.
	for _, tc := range []struct{ ret, want string }{
		{"/ui/blocks/ada/notes", "/ui/blocks/ada/notes?done=rejected"},
		{"/blocks/ada/notes", "/ui/proposals?done=rejected"},
		{"//evil.example/ui/blocks/", "/ui/proposals?"},
		{`/ui/blocks/\evil.example`, "/ui/proposals?"},
		{"https://evil.example/ui/blocks/", "/ui/proposals?"},
	} {
		p, err := f.store.Agent("bob").Shared("ada", "notes").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " x"}, "test")
		if err != nil {
			t.Fatal(err)
		}
		res, body := f.post(t, "/ui/proposals/"+itoa(p.ID)+"/reject", url.Values{"csrf": {f.csrf}, "return": {tc.ret}}, nil)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, tc.want) {
			t.Errorf("reject with return %q: %d, Location %q, want prefix %q: %s", tc.ret, res.StatusCode, loc, tc.want, excerpt(body))
		}
	}
	res, body := f.post(t, "/ui/blocks/ada/persona/restore", url.Values{"csrf": {f.csrf}, "at": {first}}, nil)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/ui/blocks/ada/persona?done=restored") {
		t.Errorf("restore: %d to %q: %s", res.StatusCode, loc, excerpt(body))
	}

	// The event stream answers under /ui.
	ectx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ectx, http.MethodGet, f.ts.URL+"/ui/events", nil)
	res, err = f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	ready := false
	for sc := bufio.NewScanner(res.Body); !ready && sc.Scan(); {
		ready = sc.Text() == "event: ready"
	}
	if res.StatusCode != 200 || !ready {
		t.Errorf("GET /ui/events: %d, ready %v", res.StatusCode, ready)
	}
}

// TestBasePathRefused: New takes a BasePath of plain path segments only,
// since it goes into links and patterns unescaped.
func TestBasePathRefused(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		base string
		ok   bool
	}{
		{"", true}, {"/", true}, {"/ui", true}, {"/ui/", true}, {"/a/b-c_d.e~1", true},
		{"ui", false}, {"/ui//x", false}, {"/u i", false}, {"/../x", false}, {"/ui/./x", false},
		{"/ü", false}, {"/a?b", false}, {"/a%2Fb", false}, {`/a\b`, false}, {"/{x}", false},
	} {
		srv, err := New(f.store, &Options{BasePath: c.base})
		if err == nil {
			srv.Close()
		}
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBasePath)) {
			t.Errorf("BasePath %q: %v, want ok %v", c.base, err, c.ok)
		}
	}
}
