package ui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// noRedirect is a client without a cookie jar that does not follow
// redirects.
var noRedirect = &http.Client{Timeout: 30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func sessionCookie(t *testing.T, srv *Server, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == srv.cookie {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", res.Header)
	return nil
}

// The sign-in URL works once; a second use fails, and a
// token in the address of a browser already signed in is redirected away.
func TestLoginTokenWorksOnce(t *testing.T) {
	f := newFixture(t)
	srv, err := New(f.store, &Options{Token: "once-only-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	get := func(path string, c *http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if c != nil {
			req.AddCookie(c)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	res, _ := get("/?token=once-only-token", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("first use: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	session := sessionCookie(t, srv, res)
	if session.Value == "once-only-token" {
		t.Error("the cookie carries the sign-in token itself")
	}
	res, body := get("/?token=once-only-token", nil)
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "already used") {
		t.Errorf("second use: %d %q, want 401 saying it was used", res.StatusCode, body)
	}
	// Already signed in: the token (used or not) is taken out of the
	// address, the rest of the query kept.
	res, _ = get("/blocks/ada/notes?token=once-only-token&page=1", session)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/blocks/ada/notes?page=1" {
		t.Errorf("token with a cookie: %d %q, want 303 to /blocks/ada/notes?page=1", res.StatusCode, res.Header.Get("Location"))
	}
	res, _ = get("/blocks/ada/notes", session)
	if res.StatusCode != 200 {
		t.Errorf("with the cookie: %d", res.StatusCode)
	}
	// Another one-time link signs in another browser, once.
	login, err := srv.LoginURL(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(login, ts.URL)
	if res, _ := get(path, nil); res.StatusCode != http.StatusSeeOther {
		t.Errorf("a new login URL: %d", res.StatusCode)
	}
	if res, _ := get(path, nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a new login URL used twice: %d", res.StatusCode)
	}
}

// rawRequest sends one raw HTTP/1.1 request and returns the response.
func rawRequest(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// The redirect that takes the token out of the address, and the one after
// a decision, stay on this server: "//host" and "/\host" are refused.
func TestRedirectsStayLocal(t *testing.T) {
	f := newFixture(t)
	addr := strings.TrimPrefix(f.ts.URL, "http://")
	for _, target := range []string{"//evil.example/x", `/\evil.example/x`, `/\/evil.example`, "/%2F/evil.example"} {
		login, err := f.srv.LoginURL("")
		if err != nil {
			t.Fatal(err)
		}
		token := strings.TrimPrefix(login, "/?token=")
		res := rawRequest(t, addr, "GET "+target+"?token="+token+" HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n")
		loc := res.Header.Get("Location")
		if res.StatusCode == http.StatusSeeOther && (strings.HasPrefix(loc, "//") || strings.HasPrefix(loc, `/\`) || !strings.HasPrefix(loc, "/")) {
			t.Errorf("sign-in at %q redirects to %q", target, loc)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct{ ret, want string }{
		{"//evil.example/blocks/", "/proposals?"},
		{`/\evil.example/blocks/`, "/proposals?"},
		{`/blocks/\evil.example`, "/proposals?"},
		{"https://evil.example/blocks/", "/proposals?"},
		{"/blocks/ada/notes", "/blocks/ada/notes?"},
	} {
		p, err := f.store.Agent("bob").Shared("ada", "notes").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " x"}, "test")
		if err != nil {
			t.Fatal(err)
		}
		res, body := f.post(t, "/proposals/"+itoa(p.ID)+"/reject", url.Values{"csrf": {f.csrf}, "return": {tc.ret}}, nil)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, tc.want) {
			t.Errorf("reject with return %q: %d, Location %q, want prefix %q: %s", tc.ret, res.StatusCode, loc, tc.want, excerpt(body))
		}
	}
}

// /static/ serves its files but does not list its directory.
func TestStaticDoesNotList(t *testing.T) {
	f := newFixture(t)
	for path, want := range map[string]int{"/static/": 404, "/static/app.js": 200, "/static/style.css": 200} {
		code, body := f.get(t, path)
		if code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
		if path == "/static/" && strings.Contains(body, `href="app.js"`) {
			t.Errorf("GET /static/ lists the directory: %s", excerpt(body))
		}
	}
}

// HTTPServer cuts a client that sends its headers or its body a byte at a
// time, and idle connections; event streams outlive the read timeout.
func TestServerTimeouts(t *testing.T) {
	f := newFixture(t)
	srv, err := New(f.store, &Options{Token: "timeouts-token", PollInterval: 50 * time.Millisecond,
		ReadHeaderTimeout: time.Second, ReadTimeout: 1500 * time.Millisecond, IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := srv.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	defer hs.Close()
	addr := ln.Addr().String()
	res := rawRequest(t, addr, "GET /?token=timeouts-token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	cookie := sessionCookie(t, srv, res)

	// cut sends head, then trickles body one byte per 300ms, and reports
	// how long until the server closed the connection.
	cut := func(head, body string) time.Duration {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		closed := make(chan struct{})
		go func() {
			io.Copy(io.Discard, conn)
			close(closed)
		}()
		io.WriteString(conn, head)
		for i := 0; i < len(body); i++ {
			select {
			case <-closed:
				return time.Since(start)
			case <-time.After(300 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return time.Since(start)
			}
		}
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection stayed open")
		}
		return time.Since(start)
	}
	form := "csrf=" + srv.csrf + "&reason=" + strings.Repeat("x", 60)
	slowBody := fmt.Sprintf("POST /proposals/%d/reject HTTP/1.1\r\nHost: x\r\nCookie: %s=%s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n",
		f.notes, cookie.Name, cookie.Value, len(form))
	if d := cut(slowBody, form); d > 5*time.Second {
		t.Errorf("a 3-byte/s body was held %v", d)
	}
	if p := f.proposal(t, f.notes); p.Status != "pending" {
		t.Errorf("the cut request was acted on: %+v", p)
	}
	if d := cut("", "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: "+strings.Repeat("y", 60)+"\r\n\r\n"); d > 5*time.Second {
		t.Errorf("slow headers were held %v", d)
	}
	// An idle keep-alive connection is closed.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /static/app.js HTTP/1.1\r\nHost: x\r\nCookie: %s=%s\r\n\r\n", cookie.Name, cookie.Value)
	br := bufio.NewReader(conn)
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF || time.Since(start) > 5*time.Second {
		t.Errorf("idle connection: %v after %v, want EOF within the idle timeout", err, time.Since(start))
	}

	// An event stream is still open after the read timeout, and delivers.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/events", nil)
	req.AddCookie(cookie)
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(2500 * time.Millisecond)
	if err := f.store.Agent("ada").Block("persona").SetText(context.Background(), "changed after the read timeout"); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the event stream ended at the read timeout")
			}
			if l == "event: change" {
				return
			}
		case <-deadline:
			t.Fatal("no change event after the read timeout")
		}
	}
}

// A block over InlineDiffChars lists its changes with a link each; the
// link computes that one diff.
func TestLargeBlockDiffsOnDemand(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, text := range []string{"Plan: alpha beta gamma.", "Plan: alpha BETA gamma delta."} {
		if err := f.store.Agent("ada").Block("persona").SetText(ctx, text); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := f.store.Agent("ada").Shared("ada", "persona").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(f.store, &Options{Token: "large-token", InlineDiffChars: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	res, err := noRedirect.Get(ts.URL + "/?token=large-token")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := sessionCookie(t, srv, res)
	get := func(path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.AddCookie(cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/blocks/ada/persona")
	last := hist[len(hist)-1].Hash
	link := `href="/blocks/ada/persona/changes/` + last + `"`
	if code != 200 || strings.Contains(body, "<del>") || !strings.Contains(body, link) || !strings.Contains(body, "4 changes") {
		t.Fatalf("large block page: %d, want links to diffs and none inline:\n%s", code, excerpt(body))
	}
	code, body = get("/blocks/ada/persona/changes/" + last)
	if code != 200 || !strings.Contains(body, "<del>beta</del><ins>BETA</ins>") || !strings.Contains(body, "<ins> delta</ins>") {
		t.Fatalf("one change's diff: %d\n%s", code, excerpt(body))
	}
	if code, _ := get("/blocks/ada/persona/changes/" + strings.Repeat("ab", 32)); code != http.StatusNotFound {
		t.Errorf("unknown change: %d, want 404", code)
	}
	// The as-of view still works on a large block.
	first := hist[len(hist)-2].Hash
	if _, body := get("/blocks/ada/persona?at=" + first); !strings.Contains(body, `id="asof-content">Plan: alpha beta gamma.</pre>`) {
		t.Errorf("as-of view of a large block:\n%s", excerpt(body))
	}
}

// Historical versions of a large block are computed one request at a
// time within HeavyTimeout (else 503 with Retry-After), and other pages
// are served meanwhile.
func TestHeavyWorkIsBoundedAndOthersAreServed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if err := f.store.Agent("ada").Block("persona").SetText(ctx, "Plan: alpha BETA gamma delta."); err != nil {
		t.Fatal(err)
	}
	hist, _ := f.store.Agent("ada").Shared("ada", "persona").History(ctx)
	srv, err := New(f.store, &Options{Token: "heavy-token", InlineDiffChars: 10, HeavyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	res, err := noRedirect.Get(ts.URL + "/?token=heavy-token")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := sessionCookie(t, srv, res)
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.AddCookie(cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	change := "/blocks/ada/persona/changes/" + hist[len(hist)-1].Hash
	srv.slots <- struct{}{} // another heavy request is running
	start := time.Now()
	res = get(change)
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("heavy request while another runs: %d, Retry-After %q; want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	// The status shows it did not do the work; the time bounds one that
	// waited for the slot far past HeavyTimeout (under the client's own
	// 30 s timeout, with room for the 9 s a page took under -race).
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("the refused request took %v (HeavyTimeout 1s)", d)
	}
	// A page that waited for the held slot would be answered 503 after
	// HeavyTimeout, so the status is what shows the page did not wait; the
	// time only bounds a page stuck for good (under -race on a loaded
	// 2-core machine a page took 9 s).
	for _, p := range []string{"/", "/proposals", "/blocks/ada/persona", "/agents/ada"} {
		start := time.Now()
		if res := get(p); res.StatusCode != 200 || time.Since(start) > 30*time.Second {
			t.Errorf("GET %s while heavy work runs: %d after %v", p, res.StatusCode, time.Since(start))
		}
	}
	<-srv.slots
	if res := get(change); res.StatusCode != 200 {
		t.Errorf("the change once the slot is free: %d", res.StatusCode)
	}
}

// A large block's proposal preview is computed as heavy work once, then
// kept while the block does not change: the live proposals page does not
// fork the block again on every refresh.
func TestLargeBlockProposalPreviewIsKept(t *testing.T) {
	f := newFixture(t)
	srv, err := New(f.store, &Options{Token: "preview-token", InlineDiffChars: 10, HeavyTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	res, err := noRedirect.Get(ts.URL + "/?token=preview-token")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := sessionCookie(t, srv, res)
	get := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/proposals", nil)
		req.AddCookie(cookie)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	const preview = "<ins> Bring the budget.</ins>"
	if body := get(); !strings.Contains(body, preview) {
		t.Fatalf("no preview of the proposal on the large block:\n%s", excerpt(body))
	}
	srv.slots <- struct{}{} // heavy work would now be refused
	defer func() { <-srv.slots }()
	if body := get(); !strings.Contains(body, preview) {
		t.Fatalf("the preview was computed again (busy) instead of kept:\n%s", excerpt(body))
	}
	// Once the block changes, the preview is computed again (here: busy).
	if err := f.store.Agent("ada").Block("notes").SetText(context.Background(), "Meeting on Tuesday."); err != nil {
		t.Fatal(err)
	}
	if body := get(); !strings.Contains(body, "busy") {
		t.Errorf("a preview of a changed block was not recomputed:\n%s", excerpt(body))
	}
}
