package mcpguard_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/cmd/engram/internal/mcpguard"
)

func TestCheckURI(t *testing.T) {
	for _, c := range []struct {
		uri string
		ok  bool
	}{
		{"engram://ada/notes", true},
		{"engram://ada/caf%C3%A9", true},
		{"engram://ada/café", true},
		{"engram://ada/a b", true},
		{"engram://ada/\ufffd", true}, // U+FFFD itself is printable
		{"", true},
		{"engram://x/y\x00", false},
		{"engram://x/y\a", false},
		{"engram://x/y\x7f", false},
		{"engram://x/y\u0085", false},
		{"engram://x/\U000e0001", false},
		{"engram://x/\xff", false},
		{"engram://x/\xe2\x82", false},
	} {
		err := mcpguard.CheckURI(c.uri)
		if (err == nil) != c.ok {
			t.Errorf("CheckURI(%q) = %v, want ok %v", c.uri, err, c.ok)
		}
		if err != nil && (!utf8Clean(err.Error()) || strings.Contains(err.Error(), c.uri)) {
			t.Errorf("CheckURI(%q): message %q echoes the URI", c.uri, err)
		}
	}
}

func utf8Clean(s string) bool {
	b, _ := json.Marshal(s)
	return json.Valid(b) && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' })
}

// FuzzCheckURI: whatever CheckURI accepts, Go's %q quotes as valid JSON
// (what the SDK's resource-not-found error data does with it).
func FuzzCheckURI(f *testing.F) {
	for _, s := range []string{"engram://a/b", "\x00", "\xff", "\U000e0001", "é", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		if mcpguard.CheckURI(uri) != nil {
			return
		}
		if data := fmt.Sprintf(`{"uri":%q}`, uri); !json.Valid([]byte(data)) {
			t.Fatalf("CheckURI accepted %q, whose %%q quoting is not JSON: %s", uri, data)
		}
	})
}

// An error whose data is not JSON (what the SDK's resource-not-found
// error makes of an unchecked URI) loses its data, keeping its code and
// message: the reply stays encodable.
func TestMiddlewareDropsDataThatIsNotJSON(t *testing.T) {
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return nil, mcp.ResourceNotFoundError("x\x00")
	}
	_, err := mcpguard.Middleware(next)(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message == "" || len(we.Data) != 0 {
		t.Fatalf("error %#v", err)
	}
	if _, err := json.Marshal(we); err != nil {
		t.Fatalf("not encodable: %v", err)
	}
	// A URI the middleware refuses never reaches the handler.
	called := false
	next = func(context.Context, string, mcp.Request) (mcp.Result, error) { called = true; return nil, nil }
	_, err = mcpguard.Middleware(next)(context.Background(), "resources/read", &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "engram://x/\a"}})
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || called {
		t.Fatalf("resources/read of a URI with BEL: %v (handler called: %v)", err, called)
	}
}
