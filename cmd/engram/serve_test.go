package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// serveFixture is engram serve's handler over a real store on a real
// loopback HTTP server.
type serveFixture struct {
	store *memory.Store
	h     *serve.Handler
	url   string
	log   *lockedBuilder
}

func openServeStore(t *testing.T) *memory.Store {
	t.Helper()
	return openServeStoreAt(t, filepath.Join(t.TempDir(), "serve.db"))
}

func openServeStoreAt(t *testing.T, target string) *memory.Store {
	t.Helper()
	store, err := memory.Open(context.Background(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func startServe(t *testing.T, store *memory.Store, opts *serve.Options) *serveFixture {
	t.Helper()
	c := &serveConfig{}
	if opts != nil {
		c.opts = *opts
	}
	logs := &lockedBuilder{}
	h, err := newServeHandler(store, c, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		srv.Close()
	})
	return &serveFixture{store: store, h: h, url: srv.URL, log: logs}
}

type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newToken(t *testing.T, store *memory.Store, spec accesstoken.Spec) (accesstoken.Token, string) {
	t.Helper()
	tok, secret, err := accesstoken.Of(store).Create(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok, secret
}

// bearer adds the Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectMCP opens a session through the go-sdk's Streamable HTTP client.
func connectMCP(ctx context.Context, base, token string) (*mcp.ClientSession, error) {
	return connectMCPVia(ctx, base, token, http.DefaultTransport)
}

func connectMCPVia(ctx context.Context, base, token string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: rt}}}
	return client.Connect(ctx, tr, nil)
}

func mustConnect(t *testing.T, f *serveFixture, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := connectMCP(context.Background(), f.url, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool returns a tool call's text and whether it is an error (a
// protocol error counts as one).
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tl.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func resourceURIs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	rl, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	return uris
}

func rendered(t *testing.T, store *memory.Store, owner, label string) string {
	t.Helper()
	r, err := store.Agent(owner).Block(label).Render(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// post sends one raw JSON-RPC POST to /mcp.
func post(t *testing.T, base, token, session, body string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

func appendCall(label, owner, text string) string {
	args := map[string]any{"label": label, "text": text}
	if owner != "" {
		args["owner"] = owner
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": "block_append", "arguments": args}})
	return string(b)
}

// TestServeMCP: the go-sdk's client over real HTTP does what it does over
// stdio — tools, a write read back through a resource, archival
// insert and search — as the token's agent.
func TestServeMCP(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "Likes tea."})
	f := startServe(t, store, nil)
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada", Name: "laptop"})
	cs := mustConnect(t, f, secret)
	if got := cs.InitializeResult().ServerInfo.Name; got != "engram" {
		t.Fatalf("server = %q", got)
	}
	names := toolNames(t, cs)
	for _, want := range []string{"block_append", "block_replace", "archival_insert", "archival_search", "conversation_search", "propose_edit"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s not listed: %v", want, names)
		}
	}
	if text, isErr := callTool(t, cs, "block_append", map[string]any{"label": "notes", "text": "Reads sci-fi."}); isErr {
		t.Fatalf("block_append: %s", text)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/notes"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "Reads sci-fi.") {
		t.Fatalf("read-your-write through the resource: %v %+v", err, rr)
	}
	if !strings.Contains(rendered(t, store, "ada", "notes"), "Reads sci-fi.") {
		t.Fatal("the write did not reach the store")
	}
	if text, isErr := callTool(t, cs, "archival_insert", map[string]any{"content": "The launch code is tangerine."}); isErr {
		t.Fatalf("archival_insert: %s", text)
	}
	if text, isErr := callTool(t, cs, "archival_search", map[string]any{"query": "tangerine"}); isErr || !strings.Contains(text, "tangerine") {
		t.Fatalf("archival_search: %s", text)
	}
	// A block created by another process's write shows up as a resource.
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "later", Value: "new"})
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(resourceURIs(t, cs), "engram://ada/later") {
		if time.Now().After(deadline) {
			t.Fatalf("new block never listed: %v", resourceURIs(t, cs))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The access log names the token, never its secret.
	logs := f.log.String()
	if !strings.Contains(logs, "token_name=laptop") || !strings.Contains(logs, "agent=ada") || strings.Contains(logs, secret) {
		t.Fatalf("access log:\n%s", logs)
	}
}

// TestServeRefusesBadTokens: no, wrong, expired, revoked or human token →
// 401 with WWW-Authenticate: Bearer, and the call is not executed; a
// session is bound to the token that opened it.
func TestServeRefusesBadTokens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.db")
	store := openServeStoreAt(t, path)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "Likes tea."})
	f := startServe(t, store, nil)
	good, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, other := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, human := newToken(t, store, accesstoken.Spec{Human: "alice"})
	_, expired := newToken(t, store, accesstoken.Spec{Agent: "ada", Expires: time.Millisecond})
	time.Sleep(5 * time.Millisecond)

	// A live session of the good token.
	resp := post(t, f.url, secret, "", initializeBody, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("initialize: %d", resp.StatusCode)
	}
	io.Copy(io.Discard, resp.Body)
	post(t, f.url, secret, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)

	for name, tok := range map[string]string{"none": "", "wrong": "engram_" + strings.Repeat("A", 43), "not engram": "abc",
		"expired": expired, "human": human, "almost": secret[:len(secret)-1]} {
		for _, sess := range []string{"", session} {
			resp := post(t, f.url, tok, sess, appendCall("notes", "", "INTRUDER"), nil)
			if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s token (session %q): %d, WWW-Authenticate %q", name, sess, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		}
	}
	// Another valid token may not use the session.
	if resp := post(t, f.url, other, session, appendCall("notes", "", "INTRUDER"), nil); resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
		t.Errorf("another token on the session: %d, want 403 or 404", resp.StatusCode)
	}
	// The session works for its own token...
	resp = post(t, f.url, secret, session, appendCall("notes", "", "own write"), nil)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 200 || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("own session: %d %s", resp.StatusCode, b)
	}
	// ...until it is revoked (by another store on the file: another process).
	other2 := openServeStoreAt(t, path)
	if err := accesstoken.Of(other2).Revoke(ctx, good.ID); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, f.url, secret, session, appendCall("notes", "", "INTRUDER"), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", resp.StatusCode)
	}
	// Its session is closed too (event streams no request would check).
	deadline := time.Now().Add(5 * time.Second)
	for f.h.Sessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still open after their token was revoked", f.h.Sessions())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := connectMCP(ctx, f.url, secret); err == nil {
		t.Error("the go-sdk client connected with a revoked token")
	}
	if got := rendered(t, store, "ada", "notes"); strings.Contains(got, "INTRUDER") || !strings.Contains(got, "own write") {
		t.Fatalf("block after refused calls: %q", got)
	}
}

// TestServeIsolation: bob's token reaches none of ada's private block
// through any tool or resource; a shared block honours the share's
// permission; a read-only token has only read tools.
func TestServeIsolation(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "private", Value: "Ada's secret is marmalade."})
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "Shared board."})
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "log", Value: "Appendable."})
	store.Agent("ada").Block("board").Share(ctx, "bob", blocks.ReadOnly)
	store.Agent("ada").Block("log").Share(ctx, "bob", blocks.Append)
	store.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "marmalade recipe"})
	store.Agent("ada").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "my marmalade secret"})
	f := startServe(t, store, nil)
	_, bobSecret := newToken(t, store, accesstoken.Spec{Agent: "bob"})
	bob := mustConnect(t, f, bobSecret)

	if uris := resourceURIs(t, bob); slices.Contains(uris, "engram://ada/private") || !slices.Contains(uris, "engram://ada/board") {
		t.Errorf("bob's resources: %v", uris)
	}
	if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/private"}); err == nil {
		t.Error("bob read ada's private block as a resource")
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"archival_search", map[string]any{"query": "marmalade"}},
		{"conversation_search", map[string]any{"query": "marmalade"}},
		{"block_append", map[string]any{"label": "private", "owner": "ada", "text": "bob was here"}},
		{"block_replace", map[string]any{"label": "private", "owner": "ada", "old": "marmalade", "new": "jam"}},
		{"propose_edit", map[string]any{"label": "private", "owner": "ada", "op": "append_text", "text": "bob was here"}},
		{"load_skill", map[string]any{"name": "private"}},
	} {
		text, _ := callTool(t, bob, c.tool, c.args)
		if strings.Contains(text, "marmalade") || strings.Contains(text, "secret") {
			t.Errorf("%s shows ada's private content to bob: %s", c.tool, text)
		}
	}
	if got := rendered(t, store, "ada", "private"); got != "Ada's secret is marmalade." {
		t.Errorf("ada's private block changed: %q", got)
	}
	if ps, _ := store.Agent("ada").Block("private").Proposals(ctx); len(ps) != 0 {
		t.Errorf("bob left proposals on ada's private block: %+v", ps)
	}
	// Shares: ReadOnly reads but refuses writes, Append appends.
	if rr, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/board"}); err != nil || rr.Contents[0].Text != "Shared board." {
		t.Errorf("shared read: %v", err)
	}
	if text, isErr := callTool(t, bob, "block_append", map[string]any{"label": "board", "owner": "ada", "text": "x"}); !isErr {
		t.Errorf("append to a ReadOnly share: %s", text)
	}
	if text, isErr := callTool(t, bob, "block_append", map[string]any{"label": "log", "owner": "ada", "text": "from bob"}); isErr {
		t.Errorf("append to an Append share: %s", text)
	}
	if !strings.Contains(rendered(t, store, "ada", "log"), "from bob") || rendered(t, store, "ada", "board") != "Shared board." {
		t.Error("shares not honoured")
	}

	// Read-only: only read tools listed, writes unknown, nothing written.
	_, roSecret := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: true})
	ro := mustConnect(t, f, roSecret)
	names := toolNames(t, ro)
	slices.Sort(names)
	if want := slices.Sorted(slices.Values(readTools)); !slices.Equal(names, want) {
		t.Errorf("read-only tools = %v, want %v", names, want)
	}
	for _, tool := range []string{"block_append", "archival_insert", "propose_edit"} {
		if text, isErr := callTool(t, ro, tool, map[string]any{"label": "private", "text": "ro write", "content": "ro write", "op": "append_text"}); !isErr {
			t.Errorf("read-only %s: %s", tool, text)
		}
	}
	if text, isErr := callTool(t, ro, "archival_search", map[string]any{"query": "marmalade"}); isErr || !strings.Contains(text, "marmalade") {
		t.Errorf("read-only search: %s", text)
	}
	if rr, err := ro.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/private"}); err != nil || !strings.Contains(rr.Contents[0].Text, "marmalade") {
		t.Errorf("read-only resource read: %v", err)
	}
	if strings.Contains(rendered(t, store, "ada", "private"), "ro write") {
		t.Error("a read-only token wrote")
	}
	// The read-write session of the same agent still has every tool.
	_, rwSecret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	if names := toolNames(t, mustConnect(t, f, rwSecret)); !slices.Contains(names, "block_append") {
		t.Errorf("read-write tools after a read-only session: %v", names)
	}
}

// TestServeConcurrentSessions: 50 sessions × 20 calls, each session its
// own token, 0 errors, every write in the store.
func TestServeConcurrentSessions(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	f := startServe(t, store, nil)
	const sessions, calls = 50, 20
	secrets := make([]string, sessions)
	for i := range secrets {
		agent := fmt.Sprintf("agent%02d", i%10)
		if i < 10 {
			store.Agent(agent).CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start"})
		}
		_, secrets[i] = newToken(t, store, accesstoken.Spec{Agent: agent})
	}
	errs := make(chan error, sessions*calls)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range sessions {
		wg.Go(func() {
			cs, err := connectMCP(ctx, f.url, secrets[i])
			if err != nil {
				errs <- err
				return
			}
			defer cs.Close()
			for j := range calls {
				var name string
				var args map[string]any
				switch j % 3 {
				case 0:
					name, args = "block_append", map[string]any{"label": "notes", "text": fmt.Sprintf("s%d-c%d", i, j)}
				case 1:
					name, args = "archival_search", map[string]any{"query": "anything"}
				default:
					if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: fmt.Sprintf("engram://agent%02d/notes", i%10)}); err != nil {
						errs <- err
					}
					continue
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if err != nil {
					errs <- err
				} else if res.IsError {
					errs <- fmt.Errorf("%s: %v", name, res.Content)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 5 {
			t.Error(err)
		}
	}
	if n > 0 {
		t.Fatalf("%d errors in %d calls", n, sessions*calls)
	}
	t.Logf("%d sessions × %d calls in %v", sessions, calls, time.Since(start))
	for i := range sessions {
		want := fmt.Sprintf("s%d-c0", i)
		if !strings.Contains(rendered(t, store, fmt.Sprintf("agent%02d", i%10), "notes"), want) {
			t.Fatalf("write %s missing", want)
		}
	}
}

// TestServeHTTPRules: Origin, healthz, rate limit, session cap, body
// limit, draining.
func TestServeHTTPRules(t *testing.T) {
	store := openServeStore(t)
	f := startServe(t, store, &serve.Options{Rate: 0.05, Burst: 3, MaxSessions: 2, MaxBodyBytes: 4096})
	_, a := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, b := newToken(t, store, accesstoken.Spec{Agent: "bob"})
	_, c := newToken(t, store, accesstoken.Spec{Agent: "cy"})

	resp, err := http.Get(f.url + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	// A loopback listener refuses a foreign Host (DNS rebinding).
	req, _ := http.NewRequest(http.MethodPost, f.url+"/mcp", strings.NewReader(initializeBody))
	req.Host = "memory.example.com"
	req.Header.Set("Authorization", "Bearer "+b)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host on loopback: %v %v", err, resp)
	}
	host := strings.TrimPrefix(f.url, "http://")
	for origin, want := range map[string]int{"http://evil.example": 403, "null": 403, "http://" + host + ".evil.example": 403, "http://" + host: 200} {
		if got := post(t, f.url, a, "", initializeBody, map[string]string{"Origin": origin}).StatusCode; got != want {
			t.Errorf("Origin %s: %d, want %d", origin, got, want)
		}
	}
	// ada has used 1 of 3; two more pass, the next would wait 20 s for its
	// rate (past the 10 s a request waits): 429 at once. (On no session:
	// a request opening one past her session cap would get 503 first.)
	post(t, f.url, a, "nosuch", `{}`, nil)
	post(t, f.url, a, "nosuch", `{}`, nil)
	resp = post(t, f.url, a, "nosuch", `{}`, nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the rate: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Sessions: ada holds one; bob opens the second; cy's is one too many.
	// (A refused request's session closes just after its response.)
	waitFor(t, "one session", func() bool { return f.h.Sessions() == 1 })
	resp = post(t, f.url, b, "", initializeBody, nil)
	bobSession := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 {
		t.Fatalf("second session: %d", resp.StatusCode)
	}
	resp = post(t, f.url, c, "", initializeBody, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third session: %d", resp.StatusCode)
	}
	// The refused session closes just after its 503, as above.
	waitFor(t, "two sessions", func() bool { return f.h.Sessions() == 2 })
	// Body limit.
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", 8000) + `"}}`
	if got := post(t, f.url, b, bobSession, big, nil).StatusCode; got != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized body: %d", got)
	}
	// Draining: sessions closed, new requests 503.
	if err := f.h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := f.h.Sessions(); n != 0 {
		t.Errorf("sessions after shutdown = %d", n)
	}
	if resp, _ := http.Get(f.url + "/healthz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("healthz while draining: %d", resp.StatusCode)
	}
}

// TestServeUI: a human token's login URL gives a cookie and the web UI;
// approving a proposal there is recorded as that person; an agent's
// token, a wrong one or a revoked one gets no UI.
func TestServeUI(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "rules", Value: "Be kind.", Permission: blocks.Human})
	p, err := store.Agent("ada").Shared("ada", "rules").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " Be brief."}, "shorter")
	if err != nil {
		t.Fatal(err)
	}
	f := startServe(t, store, nil)
	alice, aliceSecret := newToken(t, store, accesstoken.Spec{Human: "alice"})
	_, agentSecret := newToken(t, store, accesstoken.Spec{Agent: "ada"})

	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar}
	}
	anon := browser()
	resp, err := anon.Get(f.url + "/ui/proposals")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.Request.URL.Path != "/ui/login" || strings.Contains(string(body), "Be brief") {
		t.Fatalf("signed-out /proposals ended at %s", resp.Request.URL)
	}
	for _, bad := range []string{agentSecret, "engram_nope"} {
		resp, _ := browser().Get(f.url + "/ui/login?token=" + url.QueryEscape(bad))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("login with a non-human token: %d", resp.StatusCode)
		}
	}
	b := browser()
	resp, err = b.Get(f.url + "/ui/login?token=" + url.QueryEscape(aliceSecret))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 || resp.Request.URL.RawQuery != "" {
		t.Fatalf("login: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	resp, _ = b.Get(f.url + "/ui/proposals")
	body, _ = io.ReadAll(resp.Body)
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(body)
	if resp.StatusCode != 200 || csrf == nil {
		t.Fatalf("proposals page: %d, csrf %v\n%s", resp.StatusCode, csrf, body)
	}
	form := url.Values{"csrf": {string(csrf[1])}}
	req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/ui/proposals/%d/approve", f.url, p.ID), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.url)
	if resp, err = b.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("approve: %v %d", err, resp.StatusCode)
	}
	ps, _ := store.Agent("ada").Block("rules").Proposals(ctx)
	if len(ps) != 1 || ps[0].Status != "approved" || ps[0].DecidedBy != memory.HumanApprover+"alice" {
		t.Fatalf("proposal after approval: %+v", ps)
	}
	// Revoked: the login ends on the next request.
	if err := accesstoken.Of(store).Revoke(ctx, alice.ID); err != nil {
		t.Fatal(err)
	}
	resp, _ = b.Get(f.url + "/ui/proposals")
	if resp.Request.URL.Path != "/ui/login" {
		t.Fatalf("revoked human still in the UI: %s", resp.Request.URL)
	}
}

// TestServeDropsIdleServers: an agent's MCP server (and its resource
// watcher) ends once it has had no session for ServerIdle, and the next
// session gets a new one that follows the store again.
func TestServeDropsIdleServers(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"})
	f := startServe(t, store, &serve.Options{ServerIdle: 10 * time.Millisecond})
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	cs, err := connectMCP(ctx, f.url, secret)
	if err != nil {
		t.Fatal(err)
	}
	if f.h.Servers() != 1 {
		t.Fatalf("servers = %d, want 1", f.h.Servers())
	}
	time.Sleep(2500 * time.Millisecond) // sweeps see the session: the server stays
	if f.h.Servers() != 1 {
		t.Fatal("a server with a session was dropped")
	}
	cs.Close()
	waitFor(t, "the idle server dropped", func() bool { return f.h.Servers() == 0 })
	cs = mustConnect(t, f, secret)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "later", Value: "y"})
	waitFor(t, "the new server listing a new block", func() bool {
		return slices.Contains(resourceURIs(t, cs), "engram://ada/later")
	})
}

// TestServeUIEventStream: the web UI's live event stream (GET /ui/events, open
// as long as a page is) ends when the login's token is revoked or the
// person signs out, and does not hold up a shutdown: it is a stream, like
// an MCP session's, not a request in flight.
func TestServeUIEventStream(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(t *testing.T, f *serveFixture, b *http.Client, tok accesstoken.Token)
	}{
		{"revoked", func(t *testing.T, f *serveFixture, _ *http.Client, tok accesstoken.Token) {
			if err := accesstoken.Of(f.store).Revoke(context.Background(), tok.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"signed out", func(t *testing.T, f *serveFixture, b *http.Client, _ accesstoken.Token) {
			req, _ := http.NewRequest(http.MethodPost, f.url+"/ui/logout", nil)
			req.Header.Set("Origin", f.url)
			resp, err := b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}},
		{"shutdown", func(t *testing.T, f *serveFixture, _ *http.Client, _ accesstoken.Token) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := f.h.Shutdown(ctx); err != nil {
				t.Errorf("shutdown with a UI page open: %v", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openServeStore(t)
			f := startServe(t, store, nil)
			tok, secret := newToken(t, store, accesstoken.Spec{Human: "alice"})
			jar, _ := cookiejar.New(nil)
			b := &http.Client{Jar: jar}
			resp, err := b.Get(f.url + "/ui/login?token=" + url.QueryEscape(secret))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			resp, err = b.Get(f.url + "/ui/events")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("events: %v %v", err, resp)
			}
			defer resp.Body.Close()
			ended := make(chan struct{})
			go func() {
				io.Copy(io.Discard, resp.Body)
				close(ended)
			}()
			c.end(t, f, b, tok)
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the UI's event stream is still open")
			}
		})
	}
}

// TestServeMissingParams: a call without params (or with null params) to a
// method that needs them gets the JSON-RPC answer engram mcp gives over
// stdio, -32602 under the request's id, not a plain-text HTTP 400 that
// leaves the call unanswered.
func TestServeMissingParams(t *testing.T) {
	store := openServeStore(t)
	f := startServe(t, store, nil)
	for _, ro := range []bool{false, true} {
		_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: ro})
		resp := post(t, f.url, secret, "", initializeBody, nil)
		session := resp.Header.Get("Mcp-Session-Id")
		io.Copy(io.Discard, resp.Body)
		post(t, f.url, secret, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":5,"method":"tools/call"}`,
			`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":null}`,
			`{"jsonrpc":"2.0","id":5,"method":"resources/read"}`,
			`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":null}`,
			`{"jsonrpc":"2.0","id":5,"method":"resources/subscribe"}`,
		} {
			resp := post(t, f.url, secret, session, body, nil)
			b, _ := io.ReadAll(resp.Body)
			text := string(b)
			if i := strings.Index(text, "data: "); i >= 0 {
				text = strings.TrimSpace(text[i+len("data: "):])
			}
			var msg struct {
				ID    any `json:"id"`
				Error *struct {
					Code int `json:"code"`
				} `json:"error"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(text), &msg) != nil || msg.Error == nil || msg.Error.Code != -32602 || msg.ID != float64(5) {
				t.Errorf("read-only %v, %s: %d %s", ro, body, resp.StatusCode, b)
			}
		}
	}
}

// TestServeReadOnlyContextPrompt: the context prompt of a read-only
// token's session names the tools that session has, not the write tools it
// cannot call (a model told it has block_append calls it).
func TestServeReadOnlyContextPrompt(t *testing.T) {
	ctx := context.Background()
	store := openServeStore(t)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "Likes tea."})
	f := startServe(t, store, nil)
	for _, c := range []struct {
		readOnly bool
		want     []string
	}{
		{false, []string{"block_append", "archival_insert", "archival_search"}},
		{true, readTools},
	} {
		_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada", ReadOnly: c.readOnly})
		cs := mustConnect(t, f, secret)
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "context"})
		if err != nil {
			t.Fatal(err)
		}
		text := pr.Messages[0].Content.(*mcp.TextContent).Text
		listed := toolNames(t, cs)
		for _, want := range c.want {
			if !strings.Contains(text, want) {
				t.Errorf("read-only %v: the context prompt does not name %s:\n%s", c.readOnly, want, text)
			}
		}
		for _, name := range []string{"block_append", "block_replace", "archival_insert", "propose_edit", "log_append"} {
			if strings.Contains(text, name) != slices.Contains(listed, name) {
				t.Errorf("read-only %v: the context prompt names %s: %v, the session lists it: %v", c.readOnly, name, strings.Contains(text, name), slices.Contains(listed, name))
			}
		}
	}
}

// TestServeSessionsPerToken: one token (a client that reconnects without
// closing its sessions, say) cannot take every session of the server:
// beyond its own cap (by default a tenth of --max-sessions, or
// MaxTokenSessions) it gets 503 while other tokens still get sessions.
func TestServeSessionsPerToken(t *testing.T) {
	for _, c := range []struct {
		name string
		opts serve.Options
		want int
	}{
		{"default", serve.Options{MaxSessions: 30}, 3},
		{"set", serve.Options{MaxSessions: 30, MaxTokenSessions: 5}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openServeStore(t)
			f := startServe(t, store, &c.opts)
			_, a := newToken(t, store, accesstoken.Spec{Agent: "ada"})
			_, b := newToken(t, store, accesstoken.Spec{Agent: "ada"})
			opened := 0
			for range c.opts.MaxSessions {
				resp := post(t, f.url, a, "", initializeBody, nil)
				if resp.StatusCode != http.StatusOK {
					if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
						t.Errorf("refused session: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
					}
					break
				}
				opened++
			}
			if opened != c.want {
				t.Errorf("one token opened %d sessions, want %d", opened, c.want)
			}
			if resp := post(t, f.url, b, "", initializeBody, nil); resp.StatusCode != http.StatusOK {
				t.Errorf("another token's session: %d", resp.StatusCode)
			}
		})
	}
}

// TestServeUILoginCrossSite: a login URL followed from another site (a
// link or redirect on a page the person visits: Sec-Fetch-Site
// cross-site) does not sign the browser in, or another person's token
// would replace the person's login and their approvals would be recorded
// under that name (login CSRF). Typed or pasted, it signs in.
func TestServeUILoginCrossSite(t *testing.T) {
	store := openServeStore(t)
	f := startServe(t, store, nil)
	_, secret := newToken(t, store, accesstoken.Spec{Human: "mallory"})
	for _, c := range []struct {
		site   string
		signed bool
	}{
		{"cross-site", false},
		{"same-site", false},
		{"none", true},
		{"same-origin", true},
		{"", true}, // a browser without fetch metadata, or a program
	} {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/ui/login?token="+url.QueryEscape(secret), nil)
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		signed := false
		for _, ck := range resp.Cookies() {
			signed = signed || (ck.Name == "engram_serve_login" && ck.Value != "")
		}
		if signed != c.signed {
			t.Errorf("Sec-Fetch-Site %q: signed in %v, want %v (status %d)", c.site, signed, c.signed, resp.StatusCode)
		}
	}
}
