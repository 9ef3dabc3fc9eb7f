package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/memory"
)

// resources/subscribe accepted a block's URI in any spelling the reader
// resolves (engram://ada/%6Eotes for engram://ada/notes), but the SDK
// matches notifications/resources/updated to subscriptions by the exact
// string, and the server sends the canonical URI: such a subscriber never
// heard of a change. A non-canonical spelling is refused, naming the
// block's URI; the canonical one is accepted.
func TestMCPSubscribeNonCanonicalURI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	inR, in := io.Pipe()
	outR, outW := io.Pipe()
	go func() { srv.Run(ctx, &framedTransport{r: inR, w: outW}); outW.Close() }()
	defer in.Close()
	br := bufio.NewReader(outR)
	reply := func(t *testing.T) rpcReply {
		t.Helper()
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var r rpcReply
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			if r.ID != nil {
				return r
			}
		}
	}
	send(t, in, initLine)
	reply(t)
	send(t, in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range []struct {
		uri string
		ok  bool
	}{
		{"engram://ada/%6Eotes", false},
		{"engram://%61da/notes", false},
		{"engram://ada/notes", true},
	} {
		send(t, in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, 10+i, tc.uri))
		r := reply(t)
		switch {
		case tc.ok && r.Error != nil:
			t.Errorf("subscribe %s: %+v", tc.uri, r.Error)
		case !tc.ok && r.Error == nil:
			t.Errorf("subscribe %s accepted: no notification would ever match it", tc.uri)
		case !tc.ok && !strings.Contains(r.Error.Message, "engram://ada/notes"):
			t.Errorf("subscribe %s: error %q does not name the block's URI", tc.uri, r.Error.Message)
		}
	}
}

// The context prompt built with the builder's defaults alone: every model
// got the 128k default window (gemini-2.5-pro, gpt-4's 8k alike), where
// engram context and the UI use the known families' limits, and an
// unknown model was not mentioned. The prompt uses the known limits and
// its description gives the window and the model notes.
func TestMCPContextPromptModelLimits(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "ctx.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	cs := connectClient(t, srv)
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"gpt-4", []string{"window 8192 tokens"}},
		{"gemini-2.5-pro", []string{"window 1048576 tokens", "estimates"}},
		{"llama-3.3-70b", []string{"window 128000 tokens", "not one engram knows"}},
	} {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "context", Arguments: map[string]string{"model": tc.model}})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(res.Description, w) {
				t.Errorf("%s: description %q lacks %q", tc.model, res.Description, w)
			}
		}
	}
}
