package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// Tools carry annotations hosts use to gate calls, and
// the three any-JSON properties have typed schemas.
func TestMCPToolAnnotationsAndTypedSchemas(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, srv)
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tool := range tl.Tools {
		byName[tool.Name] = tool
		a := tool.Annotations
		if a == nil || a.Title == "" || tool.Title == "" {
			t.Errorf("%s: no title annotation: %+v", tool.Name, a)
			continue
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint should be false (the agent's store only)", tool.Name)
		}
		if a.DestructiveHint == nil {
			t.Errorf("%s: destructiveHint left to its default (true)", tool.Name)
		}
	}
	tests := []struct {
		name                              string
		readOnly, destructive, idempotent bool
	}{
		{"archival_search", true, false, true},
		{"conversation_search", true, false, true},
		{"load_skill", true, false, true},
		{"block_append", false, false, false},
		{"block_replace", false, true, false},
		{"block_set_field", false, true, true},
		{"block_push_item", false, false, false},
		{"archival_insert", false, false, false},
		{"propose_edit", false, false, false},
	}
	for _, tc := range tests {
		tool := byName[tc.name]
		if tool == nil || tool.Annotations == nil || tool.Annotations.DestructiveHint == nil {
			t.Errorf("%s: not listed with annotations", tc.name)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint != tc.readOnly || *a.DestructiveHint != tc.destructive || a.IdempotentHint != tc.idempotent {
			t.Errorf("%s: readOnly %v destructive %v idempotent %v, want %v %v %v", tc.name,
				a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, tc.readOnly, tc.destructive, tc.idempotent)
		}
	}
	types := func(tool, prop string) []string {
		raw, err := json.Marshal(byName[tool].InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
				AnyOf       []struct {
					Type string `json:"type"`
				} `json:"anyOf"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		p := s.Properties[prop]
		if p.Description == "" {
			t.Errorf("%s.%s lost its description", tool, prop)
		}
		var out []string
		for _, a := range p.AnyOf {
			out = append(out, a.Type)
		}
		return out
	}
	for _, tc := range []struct {
		tool, prop string
		want       []string
	}{
		{"block_push_item", "item", []string{"string", "number", "boolean"}},
		{"block_set_field", "value", []string{"string", "number", "boolean", "array", "object", "null"}},
		{"propose_edit", "value", []string{"string", "number", "boolean", "array", "object", "null"}},
	} {
		if got := types(tc.tool, tc.prop); !slices.Equal(got, tc.want) {
			t.Errorf("%s.%s: anyOf types %v, want %v", tc.tool, tc.prop, got, tc.want)
		}
	}
}

// Results that carry a cache scope say "private" (the SDK's default is
// "public"), over the real stdio framing.
func TestMCPPrivateCacheScope(t *testing.T) {
	in, out, _ := pipeServer(t)
	initialize(t, in, out)
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"engram://ada/notes"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`,
	} {
		send(t, in, line)
		rep := readReply(t, out)
		var r struct {
			CacheScope *string `json:"cacheScope"`
		}
		if rep.Error != nil || json.Unmarshal(rep.Result, &r) != nil || r.CacheScope == nil || *r.CacheScope != "private" {
			t.Errorf("request %d: %s\n -> %+v %s", i+2, line, rep.Error, rep.Result)
		}
	}
}

// tools/call (and every method that needs params) without params, or with
// null params, is -32602 invalid params.
func TestMCPCallWithoutParamsIsInvalidParams(t *testing.T) {
	in, out, _ := pipeServer(t)
	initialize(t, in, out)
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":4,"method":"resources/read"}`,
		`{"jsonrpc":"2.0","id":5,"method":"prompts/get"}`,
	} {
		send(t, in, line)
		rep := readReply(t, out)
		if rep.Error == nil || rep.Error.Code != codeInvalidParams || !strings.Contains(rep.Error.Message, "params") {
			t.Errorf("%s -> %+v, want -32602", line, rep.Error)
		}
		ping(t, in, out, 100+i)
	}
}

// resources/subscribe over the real stdio framing (protocol 2025-06-18): a
// subscribed block that changes, here or in another process, brings
// notifications/resources/updated for its URI; other blocks do not, and
// unsubscribing stops them.
func TestMCPResourceSubscriptions(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	path := filepath.Join(t.TempDir(), "sub.db")
	store, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"})
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "other", Value: "y"})
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "bob's"})
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "secret", Value: "hidden"})
	store.Agent("bob").Block("board").Share(ctx, "ada", blocks.ReadOnly)
	srv, listed, err := newMCPServerListed(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	inR, in := io.Pipe()
	outR, outW := io.Pipe()
	go func() { srv.Run(ctx, &framedTransport{r: inR, w: outW}); outW.Close() }()
	defer in.Close()
	go watchResources(ctx, srv, store, "ada", listed, 20*time.Millisecond)
	var mu sync.Mutex
	var updated []string
	replies := make(chan rpcReply, 64)
	go func() {
		br := bufio.NewReader(outR)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				close(replies)
				return
			}
			var msg struct {
				rpcReply
				Method string `json:"method"`
				Params struct {
					URI string `json:"uri"`
				} `json:"params"`
			}
			if err := json.Unmarshal([]byte(l), &msg); err != nil {
				t.Errorf("output %q: %v", l, err)
				continue
			}
			switch msg.Method {
			case "notifications/resources/updated":
				mu.Lock()
				updated = append(updated, msg.Params.URI)
				mu.Unlock()
			case "":
				replies <- msg.rpcReply
			}
		}
	}()
	call := func(id int, method, params string) rpcReply {
		t.Helper()
		send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		select {
		case rep := <-replies:
			if fmt.Sprint(rep.ID) != fmt.Sprint(id) {
				t.Fatalf("reply %+v to request %d", rep, id)
			}
			return rep
		case <-time.After(10 * time.Second):
			t.Fatalf("no reply to %s", method)
		}
		return rpcReply{}
	}
	if rep := call(1, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`); rep.Error != nil ||
		!strings.Contains(string(rep.Result), `"subscribe":true`) {
		t.Fatalf("initialize: resources.subscribe not advertised: %+v %s", rep.Error, rep.Result)
	}
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 10
	for _, uri := range []string{"engram://bob/secret", "engram://ada/nope", "file:///etc/passwd"} {
		id++
		if rep := call(id, "resources/subscribe", `{"uri":"`+uri+`"}`); rep.Error == nil {
			t.Errorf("subscribed to %s, which ada cannot read", uri)
		}
	}
	for _, uri := range []string{"engram://ada/notes", "engram://bob/board"} {
		id++
		if rep := call(id, "resources/subscribe", `{"uri":"`+uri+`"}`); rep.Error != nil {
			t.Fatalf("subscribe %s: %+v", uri, rep.Error)
		}
	}
	wait := func(want ...string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mu.Lock()
			ok := slices.Equal(updated, want)
			cur := slices.Clone(updated)
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("updated notifications %q, want %q", cur, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// A change made through this process's store.
	if err := store.Agent("ada").Block("notes").SetText(ctx, "changed here"); err != nil {
		t.Fatal(err)
	}
	wait("engram://ada/notes")
	// A change to a block nobody subscribed to: nothing.
	if err := store.Agent("ada").Block("other").SetText(ctx, "changed too"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	wait("engram://ada/notes")
	// Another process changes the shared block (its own Cache on the file).
	other, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Agent("bob").Block("board").SetText(ctx, "bob changed it elsewhere"); err != nil {
		t.Fatal(err)
	}
	wait("engram://ada/notes", "engram://bob/board")
	// Unsubscribed: no more notifications for it.
	id++
	if rep := call(id, "resources/unsubscribe", `{"uri":"engram://ada/notes"}`); rep.Error != nil {
		t.Fatal(rep.Error)
	}
	if err := other.Agent("ada").Block("notes").SetText(ctx, "again, elsewhere"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	wait("engram://ada/notes", "engram://bob/board")
	// Revoking the share is a change for a subscriber too (the block went
	// away).
	if err := other.Agent("bob").Block("board").Unshare(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	wait("engram://ada/notes", "engram://bob/board", "engram://bob/board")
}

// The context prompt returns the agent's built context: its blocks, and
// with a message, the archival memories recalled for it.
func TestMCPContextPrompt(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "ctx.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am Ada, an analyst."})
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am Bob."})
	if _, err := store.Agent("ada").Archival().Insert(ctx, memory.ArchivalEntry{Content: "The zeppelin budget is 40 francs."}); err != nil {
		t.Fatal(err)
	}
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, srv)
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(pl.Prompts) != 1 || pl.Prompts[0].Name != "context" {
		t.Fatalf("prompts: %v %+v", err, pl)
	}
	text := func(args map[string]string) string {
		t.Helper()
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "context", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
			t.Fatalf("prompt messages: %+v", res.Messages)
		}
		return res.Messages[0].Content.(*mcp.TextContent).Text
	}
	plain := text(nil)
	for _, want := range []string{"I am Ada, an analyst.", "archival_search"} {
		if !strings.Contains(plain, want) {
			t.Errorf("context lacks %q:\n%s", want, plain)
		}
	}
	if strings.Contains(plain, "I am Bob.") || strings.Contains(plain, "zeppelin") {
		t.Errorf("context shows another agent's block or an unasked recall:\n%s", plain)
	}
	recalled := text(map[string]string{"message": "what is the zeppelin budget?", "model": "claude-sonnet-4-5"})
	if !strings.Contains(recalled, "40 francs") {
		t.Errorf("context for a message lacks the recalled memory:\n%s", recalled)
	}
}
