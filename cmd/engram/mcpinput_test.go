package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// rawInputCases are requests whose strings an error reply might echo:
// control characters, a non-printable rune beyond U+FFFF and invalid
// UTF-8 in every field the server or the SDK names in an error (the
// SDK's resource-not-found error puts the URI in its data as Go's %q,
// which is not JSON for these). wantCode is the code the reply must
// carry, 0 for any JSON-RPC error code but 0.
var rawInputCases = []struct {
	name     string
	body     string // %d is the id
	httpOnly bool   // stdio refuses a line that is not UTF-8 before it is a request
	wantCode int
}{
	{"read NUL", `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"engram://x/y\u0000"}}`, false, codeInvalidParams},
	{"read BEL", `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"engram://x/y\u0007"}}`, false, codeInvalidParams},
	{"read DEL own block", `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"engram://ada/notes\u007f"}}`, false, codeInvalidParams},
	{"read tag character", `{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"engram://x/\udb40\udc01"}}`, false, codeInvalidParams},
	// The SDK's JSON decoder reads invalid UTF-8 as U+FFFD.
	{"read invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"resources/read\",\"params\":{\"uri\":\"engram://x/\xff\"}}", true, 0},
	{"subscribe NUL", `{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"engram://x/y\u0000"}}`, false, codeInvalidParams},
	{"subscribe BEL", `{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"engram://x/y\u0007"}}`, false, codeInvalidParams},
	{"unsubscribe NUL", `{"jsonrpc":"2.0","id":%d,"method":"resources/unsubscribe","params":{"uri":"engram://x/y\u0000"}}`, false, codeInvalidParams},
	{"tool name", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x\u0000\u0007","arguments":{}}}`, false, 0},
	{"tool name invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"x\xff\",\"arguments\":{}}}", true, 0},
	{"tool argument", `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"archival_search","arguments":{"query":"\u0000\u0007","nope\u0000":1}}}`, false, 0},
	{"prompt name", `{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"x\u0000\u0007"}}`, false, 0},
	{"prompt argument", `{"jsonrpc":"2.0","id":%d,"method":"prompts/get","params":{"name":"context","arguments":{"model":"\u0000\u0007"}}}`, false, 0},
	{"method", `{"jsonrpc":"2.0","id":%d,"method":"x\u0000\u0007"}`, false, 0},
	{"completion ref", `{"jsonrpc":"2.0","id":%d,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"engram://x/\u0000"},"argument":{"name":"\u0007","value":"\u0000"}}}`, false, 0},
	{"log level", `{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel","params":{"level":"\u0000\u0007"}}`, false, 0},
}

// checkRawInputReply checks the reply to a rawInputCases request: one
// JSON-RPC message under the request's id, with the code wanted.
func checkRawInputReply(t *testing.T, line string, id, wantCode int) {
	t.Helper()
	var rep rpcReply
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("reply %q is not JSON: %v", line, err)
	}
	if fmt.Sprint(rep.ID) != fmt.Sprint(id) {
		t.Fatalf("reply %q: id %v, want %d", line, rep.ID, id)
	}
	if wantCode != 0 && (rep.Error == nil || rep.Error.Code != wantCode) {
		t.Fatalf("reply %q: want error %d", line, wantCode)
	}
	if rep.Error != nil && rep.Error.Code == 0 {
		t.Fatalf("reply %q: error code 0", line)
	}
	if wantCode == codeInvalidParams && !strings.Contains(rep.Error.Message, "control character") {
		t.Errorf("reply %q: the message does not say what is wrong with the URI", line)
	}
}

// No string in a request ends an engram mcp session: each gets its reply
// and the next request is answered.
func TestMCPRawInputStdio(t *testing.T) {
	in, out, done := pipeServer(t)
	initialize(t, in, out)
	for i, c := range rawInputCases {
		if c.httpOnly {
			continue
		}
		ok := t.Run(c.name, func(t *testing.T) {
			id := 100 + i
			send(t, in, fmt.Sprintf(c.body, id))
			select {
			case line, ok := <-out:
				if !ok {
					t.Fatalf("the server ended: %v", <-done)
				}
				checkRawInputReply(t, line, id, c.wantCode)
			case <-time.After(10 * time.Second):
				t.Fatal("no reply within 10s")
			}
			ping(t, in, out, 1000+i)
		})
		if !ok {
			break // the session may be gone
		}
	}
}

// The same over engram serve's /mcp: each request gets its reply and the
// session answers the next one.
func TestServeRawInput(t *testing.T) {
	store := openServeStore(t)
	f := startServe(t, store, nil)
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	resp := post(t, f.url, secret, "", initializeBody, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	io.Copy(io.Discard, resp.Body)
	post(t, f.url, secret, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	exchange := func(t *testing.T, body string) (string, int) {
		t.Helper()
		resp := post(t, f.url, secret, session, body, nil)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return s, resp.StatusCode
			}
		}
		return "", resp.StatusCode
	}
	for i, c := range rawInputCases {
		t.Run(c.name, func(t *testing.T) {
			id := 100 + i
			line, st := exchange(t, fmt.Sprintf(c.body, id))
			switch {
			case c.name == "method" && st == http.StatusBadRequest:
				// The SDK refuses a method it does not know before the
				// session sees it: a plain-text 400 (%q-quoted name).
			case st != http.StatusOK || line == "":
				t.Fatalf("status %d, reply %q", st, line)
			default:
				checkRawInputReply(t, line, id, c.wantCode)
			}
			line, st = exchange(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 1000+i))
			var rep rpcReply
			if st != http.StatusOK || json.Unmarshal([]byte(line), &rep) != nil || rep.Error != nil {
				t.Fatalf("ping after it: status %d, reply %q", st, line)
			}
		})
	}
}

// A reply that cannot be encoded (an error whose data is not JSON) would
// end the session if Write failed: the request gets an internal error
// instead, and Write succeeds.
func TestFramedConnUnencodableReply(t *testing.T) {
	var out strings.Builder
	conn, err := (&framedTransport{r: strings.NewReader(""), w: &out}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, _ := jsonrpc.MakeID(float64(7))
	resp := &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: -32002, Message: "Resource not found", Data: json.RawMessage(`{"uri":"\x00"}`)}}
	if err := conn.Write(context.Background(), resp); err != nil {
		t.Fatalf("Write: %v (the session would end)", err)
	}
	checkRawInputReply(t, strings.TrimSpace(out.String()), 7, codeInternalError)
}
