package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/internal/accesstoken"
)

// sessionAt opens an initialized MCP session of protocol version v.
func (d *door) sessionAt(t testing.TB, token, v string) string {
	t.Helper()
	resp := d.do(t, "POST", "/mcp", strings.Replace(initBody, "2025-06-18", v, 1), mcpHeader(token, ""))
	if r := reply(t, resp); r.Error != nil || !strings.Contains(string(r.Result), `"protocolVersion":"`+v+`"`) {
		t.Fatalf("initialize at %s: %+v %s", v, r.Error, r.Result)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	h := mcpHeader(token, id)
	h["Mcp-Protocol-Version"] = v
	if st := d.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h).StatusCode; st/100 != 2 {
		t.Fatalf("initialized: status %d", st)
	}
	return id
}

// replies reads every JSON-RPC message of a response: the events of a
// stream, a JSON array or one JSON object.
func replies(t testing.TB, resp *http.Response) []rpcReply {
	t.Helper()
	var out []rpcReply
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var r rpcReply
				if err := json.Unmarshal([]byte(s), &r); err != nil {
					t.Fatalf("event %q: %v", s, err)
				}
				out = append(out, r)
			}
		}
		return out
	}
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &out); err == nil {
		return out
	}
	var r rpcReply
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("status %d, body %q is no JSON-RPC reply: %v", resp.StatusCode, data, err)
	}
	return []rpcReply{r}
}

// echoBatch is a batch of n echo calls with ids from first.
func echoBatch(first, n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b%d"}}}`, first+i, first+i)
	}
	b.WriteByte(']')
	return b.String()
}

// A JSON-RPC batch is refused, before any of its calls runs, whenever the
// protocol has none: a session negotiated at 2025-06-18 or later, whatever
// Mcp-Protocol-Version header the request carries (or none), and a new
// session (initialize goes alone). The refusal is one JSON-RPC -32600
// error, and the session goes on.
func TestBatchRefusedWithoutBatchProtocol(t *testing.T) {
	d := newDoor(t, nil)
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.session(t, tok)
	huge := "[" + strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"tools/list"},`, 60000)
	huge = strings.TrimSuffix(huge, ",") + "]"
	for _, c := range []struct {
		name, session, header, body string
	}{
		{"no header", sid, "", echoBatch(10, 3)},
		{"header 2025-06-18", sid, "2025-06-18", echoBatch(10, 3)},
		{"header 2025-03-26 on a 2025-06-18 session", sid, "2025-03-26", echoBatch(10, 3)},
		{"60,000 calls", sid, "", huge},
		{"new session", "", "", "[" + initBody + "]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := mcpHeader(tok, c.session)
			delete(h, "Mcp-Protocol-Version")
			if c.header != "" {
				h["Mcp-Protocol-Version"] = c.header
			}
			before := d.calls.Load()
			resp := d.do(t, "POST", "/mcp", c.body, h)
			if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("status %d, Content-Type %q; want 400 application/json", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			rs := replies(t, resp)
			if len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != -32600 || string(rs[0].ID) != "null" {
				t.Fatalf("replies %+v; want one -32600 error with id null", rs)
			}
			if !strings.Contains(rs[0].Error.Message, "batch") {
				t.Errorf("message %q does not say what was refused", rs[0].Error.Message)
			}
			if n := d.calls.Load() - before; n != 0 {
				t.Errorf("%d calls of the refused batch ran", n)
			}
		})
	}
	r := reply(t, d.do(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`, mcpHeader(tok, sid)))
	if r.Error != nil || !strings.Contains(string(r.Result), "after") {
		t.Fatalf("the session after the refused batches: %+v %s", r.Error, r.Result)
	}
}

// Where the protocol has batches (2025-03-26), a batch of n messages
// costs n requests of the token's rate budget, paid before any runs, and
// is at most MaxBatch long.
func TestBatchChargedPerCall(t *testing.T) {
	d := newDoor(t, &serve.Options{Rate: 1e-3, Burst: 10, MaxBatch: 4, TokenConcurrency: 4})
	tok := d.token(t, accesstoken.Spec{Agent: "ada"})
	sid := d.sessionAt(t, tok, "2025-03-26") // 2 requests: 8 left
	h := mcpHeader(tok, sid)
	h["Mcp-Protocol-Version"] = "2025-03-26"

	// Beyond MaxBatch: refused whole (the request costs one: 7 left).
	resp := d.do(t, "POST", "/mcp", echoBatch(10, 5), h)
	rs := replies(t, resp)
	if resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != -32600 ||
		!strings.Contains(rs[0].Error.Message, "4") {
		t.Fatalf("a batch of 5 over MaxBatch 4: status %d, %+v", resp.StatusCode, rs)
	}
	if n := d.calls.Load(); n != 0 {
		t.Fatalf("%d calls of a batch over MaxBatch ran", n)
	}

	// Within it: every call answered, 4 requests paid (3 left).
	resp = d.do(t, "POST", "/mcp", echoBatch(20, 4), h)
	rs = replies(t, resp)
	if resp.StatusCode != http.StatusOK || len(rs) != 4 {
		t.Fatalf("a batch of 4: status %d, %d replies", resp.StatusCode, len(rs))
	}
	for _, r := range rs {
		if r.Error != nil {
			t.Fatalf("a batch of 4: %+v", r.Error)
		}
	}

	// 4 more cannot be paid: 429 before any runs (the request costs one:
	// 2 left).
	resp = d.do(t, "POST", "/mcp", echoBatch(30, 4), h)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a batch of 4 with 3 requests left: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := d.calls.Load(); n != 4 {
		t.Fatalf("%d calls ran, want the 4 of the paid batch", n)
	}
	// What is left pays for single calls, then no more.
	for i, want := range []int{200, 200, 429} {
		resp := d.do(t, "POST", "/mcp", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 40+i), h)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != want {
			t.Fatalf("single call %d after the batches: status %d, want %d", i, resp.StatusCode, want)
		}
	}
}

// MaxBatch defaults to 32, and is never more than Burst: a batch the
// bucket could never pay is refused as too long.
func TestBatchDefaultCap(t *testing.T) {
	for _, c := range []struct {
		opts     serve.Options
		ok, over int
	}{
		{serve.Options{TokenConcurrency: 64}, 32, 33},
		{serve.Options{Burst: 5, TokenConcurrency: 64}, 0, 6},
		{serve.Options{MaxBatch: 1000, Burst: 6, TokenConcurrency: 64}, 0, 7},
	} {
		t.Run(fmt.Sprintf("MaxBatch %d Burst %d", c.opts.MaxBatch, c.opts.Burst), func(t *testing.T) {
			d := newDoor(t, &c.opts)
			tok := d.token(t, accesstoken.Spec{Agent: "ada"})
			sid := d.sessionAt(t, tok, "2025-03-26")
			h := mcpHeader(tok, sid)
			h["Mcp-Protocol-Version"] = "2025-03-26"
			resp := d.do(t, "POST", "/mcp", echoBatch(100, c.over), h)
			if rs := replies(t, resp); resp.StatusCode != http.StatusBadRequest || len(rs) != 1 || rs[0].Error == nil || rs[0].Error.Code != -32600 {
				t.Fatalf("a batch of %d: status %d, %+v", c.over, resp.StatusCode, rs)
			}
			if c.opts.Burst != 0 {
				return
			}
			if rs := replies(t, d.do(t, "POST", "/mcp", echoBatch(200, c.ok), h)); len(rs) != c.ok {
				t.Fatalf("a batch of %d: %d replies", c.ok, len(rs))
			}
		})
	}
}
