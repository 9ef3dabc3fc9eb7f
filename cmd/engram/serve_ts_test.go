package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// TestServeTypeScriptClient runs the official TypeScript MCP SDK's
// StreamableHTTPClientTransport (testdata/tsclient, the version its
// package-lock pins) against engram serve: initialize, tools, a write
// read back as a resource, archival insert and search, a resource
// list_changed notification for another process's write, and 401 for a
// bad token. Without node and npm it is skipped, except under CI.
func TestServeTypeScriptClient(t *testing.T) {
	node, dir := testenv.NodePackage(t, filepath.Join("testdata", "tsclient"), "package.json", "package-lock.json", "client.js")

	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "serve.db")
	store := openServeStoreAt(t, path)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "Likes tea."})
	f := startServe(t, store, nil)
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	revoked, revokedSecret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	accesstoken.Of(store).Revoke(ctx, revoked.ID)

	run := exec.Command(node, "client.js", f.url+"/mcp", secret, revokedSecret)
	run.Dir = dir
	stdin, _ := run.StdinPipe()
	stdout, _ := run.StdoutPipe()
	var stderr strings.Builder
	run.Stderr = &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { run.Process.Kill() })
	defer timer.Stop()
	lines := bufio.NewReader(stdout)
	if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
		run.Wait()
		t.Fatalf("client: %q %v\n%s", line, err, stderr.String())
	}
	// Another process's write: a new block on the same file.
	other := openServeStoreAt(t, path)
	if _, err := other.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "from-go", Value: "new"}); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "go\n")
	last, err := io.ReadAll(lines)
	if werr := run.Wait(); werr != nil || err != nil {
		t.Fatalf("client: %v %v\n%s", werr, err, stderr.String())
	}
	var got struct {
		Server         string   `json:"server"`
		Tools          []string `json:"tools"`
		AppendError    bool     `json:"appendError"`
		ReadBack       string   `json:"readBack"`
		Search         string   `json:"search"`
		Resources      []string `json:"resources"`
		ListChanged    bool     `json:"listChanged"`
		ResourcesAfter []string `json:"resourcesAfter"`
		BadToken       string   `json:"badToken"`
	}
	if err := json.Unmarshal(last, &got); err != nil {
		t.Fatalf("client output %q: %v", last, err)
	}
	switch {
	case got.Server != "engram" || !slices.Contains(got.Tools, "block_append"):
		t.Errorf("initialize/tools: %+v", got)
	case got.AppendError || !strings.Contains(got.ReadBack, "Written from TypeScript."):
		t.Errorf("write then read: %+v", got)
	case !strings.Contains(got.Search, "kumquat"):
		t.Errorf("archival search: %q", got.Search)
	case !slices.Contains(got.Resources, "engram://ada/notes"):
		t.Errorf("resources: %v", got.Resources)
	case !got.ListChanged || !slices.Contains(got.ResourcesAfter, "engram://ada/from-go"):
		t.Errorf("list_changed %v, resources after %v", got.ListChanged, got.ResourcesAfter)
	case got.BadToken != "401":
		t.Errorf("revoked token: %q, want 401", got.BadToken)
	}
	if r, _ := store.Agent("ada").Block("notes").Render(ctx); !strings.Contains(r, "Written from TypeScript.") {
		t.Errorf("the TypeScript write is not in the store: %q", r)
	}
}
