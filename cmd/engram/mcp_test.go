package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestMCPServer drives the server with the SDK's own client over in-memory
// transports.
func TestMCPServer(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "mcp.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "Likes tea."})
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "board", Value: "Bob's board."})
	store.Agent("bob").Block("board").Share(ctx, "ada", blocks.ReadOnly)
	store.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "secret", Value: "hidden"})

	srv, err := newMCPServer(store, "ada")
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"block_append", "block_replace", "archival_insert", "archival_search", "conversation_search"} {
		if !names[want] {
			t.Errorf("tool %s not listed (%v)", want, names)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block_append", Arguments: map[string]any{"label": "notes", "text": "Reads sci-fi."}})
	if err != nil || res.IsError {
		t.Fatalf("block_append: %v %+v", err, res)
	}
	if r, _ := store.Agent("ada").Block("notes").Render(ctx); !strings.Contains(r, "Reads sci-fi.") {
		t.Fatalf("tool call did not reach the store: %q", r)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "block_append", Arguments: map[string]any{"label": "board", "owner": "bob", "text": "x"}})
	if err != nil || !res.IsError {
		t.Fatalf("append to a ReadOnly share should be an error result: %v %+v", err, res)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rl.Resources {
		uris = append(uris, r.URI)
	}
	if got := strings.Join(uris, " "); got != "engram://ada/notes engram://bob/board" {
		t.Fatalf("resources = %s", got)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://bob/board"})
	if err != nil || rr.Contents[0].Text != "Bob's board." {
		t.Fatalf("read shared resource: %v %+v", err, rr)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://bob/secret"}); err == nil {
		t.Fatal("unshared block readable as a resource")
	}
}
