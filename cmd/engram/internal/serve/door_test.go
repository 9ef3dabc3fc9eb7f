package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// door is a Handler over a real SQLite store on a real loopback server,
// with a plain MCP server (one tool, "echo") for every agent.
type door struct {
	store   *memory.Store
	h       *serve.Handler
	url     string
	lookups *atomic.Int64 // the store's token and login-link lookups
	calls   *atomic.Int64 // echo calls run
	hold    *holdTool     // the "hold" tool's calls
}

// holdTool is a tool whose calls run until released (or their request
// ends), counting how many run at once.
type holdTool struct {
	release       chan struct{} // closed: every call returns
	running, most atomic.Int64
}

func (h *holdTool) call(ctx context.Context) {
	n := h.running.Add(1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	defer h.running.Add(-1)
	select {
	case <-h.release:
	case <-ctx.Done():
	}
}

// countingTokens counts the lookups a credential costs the store.
type countingTokens struct {
	*accesstoken.Tokens
	n *atomic.Int64
}

func (c countingTokens) Verify(ctx context.Context, secret string) (accesstoken.Token, error) {
	c.n.Add(1)
	return c.Tokens.Verify(ctx, secret)
}

func (c countingTokens) UseLoginLink(ctx context.Context, secret string) (accesstoken.Token, error) {
	c.n.Add(1)
	return c.Tokens.UseLoginLink(ctx, secret)
}

func newDoor(t testing.TB, opts *serve.Options) *door {
	t.Helper()
	return newDoorAt(t, filepath.Join(t.TempDir(), "door.db"), opts)
}

// newDoorAt is newDoor on the store at target (a SQLite path or a
// PostgreSQL URL).
func newDoorAt(t testing.TB, target string, opts *serve.Options) *door {
	t.Helper()
	store, err := memory.Open(context.Background(), target, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o := serve.Options{}
	if opts != nil {
		o = *opts
	}
	lookups := &atomic.Int64{}
	o.Tokens = countingTokens{Tokens: accesstoken.Of(store), n: lookups}
	if o.SyncStore == nil {
		o.SyncStore = store
	}
	calls := &atomic.Int64{}
	hold := &holdTool{release: make(chan struct{})}
	o.MCPServer = func(context.Context, string, bool) (*mcp.Server, error) {
		s := mcp.NewServer(&mcp.Implementation{Name: "door-test", Version: "0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "hold"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			hold.call(ctx)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "held"}}}, nil, nil
		})
		return s, nil
	}
	if o.UI == nil {
		o.UI = func(context.Context, string) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ui "+r.URL.Path) }), nil
		}
	}
	h, err := serve.New(&o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Shutdown(context.Background())
		srv.Close()
	})
	t.Cleanup(func() {
		select {
		case <-hold.release:
		default:
			close(hold.release)
		}
	})
	return &door{store: store, h: h, url: srv.URL, lookups: lookups, calls: calls, hold: hold}
}

func (d *door) token(t testing.TB, spec accesstoken.Spec) string {
	t.Helper()
	_, secret, err := accesstoken.Of(d.store).Create(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// do sends one request; header values are set as given ("Host" sets the
// request's Host).
func (d *door) do(t testing.TB, method, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func mcpHeader(token, session string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	if session != "" {
		h["Mcp-Session-Id"] = session
		h["Mcp-Protocol-Version"] = "2025-06-18"
	}
	return h
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

type rpcReply struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

// reply reads the one JSON-RPC message of a response, JSON or an event
// stream.
func reply(t testing.TB, resp *http.Response) rpcReply {
	t.Helper()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(s)
				break
			}
		}
	} else {
		data, _ = io.ReadAll(resp.Body)
	}
	var r rpcReply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("status %d, reply %q: %v", resp.StatusCode, data, err)
	}
	return r
}

// session opens an initialized MCP session with raw requests and returns
// its id.
func (d *door) session(t testing.TB, token string) string {
	t.Helper()
	resp := d.do(t, "POST", "/mcp", initBody, mcpHeader(token, ""))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	if r := reply(t, resp); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	resp = d.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, mcpHeader(token, id))
	if resp.StatusCode/100 != 2 {
		t.Fatalf("initialized: status %d", resp.StatusCode)
	}
	return id
}

// A second initialize on a session is the client's mistake: JSON-RPC
// -32600 (Invalid Request, as the TypeScript SDK answers it) under the
// call's id, and the session keeps working.
func TestSecondInitialize(t *testing.T) {
	d := newDoor(t, nil)
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, tok)
	r := reply(t, d.do(t, "POST", "/mcp", strings.Replace(initBody, `"id":1`, `"id":7`, 1), mcpHeader(tok, sid)))
	if r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "7" {
		t.Fatalf("second initialize: id %s, error %+v", r.ID, r.Error)
	}
	if !strings.Contains(r.Error.Message, "already initialized") {
		t.Errorf("second initialize: message %q does not say why", r.Error.Message)
	}
	r = reply(t, d.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`, mcpHeader(tok, sid)))
	if r.Error != nil || !strings.Contains(string(r.Result), "still here") {
		t.Fatalf("the session after a second initialize: %+v %s", r.Error, r.Result)
	}
}

// postMCP posts body to /mcp with header, under ctx.
func (d *door) postMCP(ctx context.Context, header map[string]string, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", d.url+"/mcp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}
