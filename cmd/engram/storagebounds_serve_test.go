package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// TestServeChildWithArgs is "engram serve" with the extra flags in
// ENGRAM_SERVE_ARGS (a JSON array), in a child process of the tests below.
func TestServeChildWithArgs(t *testing.T) {
	db := os.Getenv("ENGRAM_SERVE_ARGS_DB")
	if db == "" {
		t.Skip("run by the serve process tests")
	}
	var extra []string
	if err := json.Unmarshal([]byte(os.Getenv("ENGRAM_SERVE_ARGS")), &extra); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--db", db, "--json", "serve", "--addr", "127.0.0.1:0"}, extra...)
	os.Exit(run(context.Background(), args, strings.NewReader(""), os.Stdout, os.Stderr))
}

// startServeArgs runs engram serve on db with extra flags in a child
// process and returns its base URL.
func startServeArgs(t *testing.T, db string, extra ...string) string {
	t.Helper()
	x, _ := json.Marshal(extra)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChildWithArgs$")
	cmd.Env = append(os.Environ(), "ENGRAM_SERVE_ARGS_DB="+db, "ENGRAM_SERVE_ARGS="+string(x))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var info map[string]string
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&info); err != nil {
		t.Fatalf("serve process: %v\n%s", err, stderr.String())
	}
	return strings.TrimSuffix(info["mcp"], "/mcp")
}

// fileBytes is the size of a SQLite database and its WAL.
func fileBytes(path string) int64 {
	var n int64
	for _, s := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + s); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestServeProposalsWithinQuota: an agent token of a server run with
// --agent-quota cannot store past it through propose_edit (a block the
// agent holds with permission Human, as a "human" block is): each
// proposal's reason is free text of up to the request body's size.
func TestServeProposalsWithinQuota(t *testing.T) {
	if os.Getenv("ENGRAM_SERVE_ARGS_DB") != "" {
		t.Skip("child")
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "p.db")
	store, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Agent("mallory").CreateBlock(ctx, memory.BlockSpec{Label: "human", Permission: blocks.Human, Value: "likes tea"}); err != nil {
		t.Fatal(err)
	}
	_, secret := newToken(t, store, accesstoken.Spec{Agent: "mallory"})
	store.Close()

	const quota = 1 << 20
	base := startServeArgs(t, db, "--agent-quota", "1MiB")
	cs := mustConnectURL(t, base, secret, nil)
	before := fileBytes(db)
	reason := strings.Repeat("why ", (3<<20)/4) // 3 MiB, under the 4 MiB body limit
	start := time.Now()
	stored := 0
	for range 8 {
		text, isErr := callTool(t, cs, "propose_edit", map[string]any{"label": "human", "op": "append_text", "text": ".", "reason": reason})
		if isErr {
			t.Logf("refused: %.200s", text)
			break
		}
		stored++
	}
	took := time.Since(start)
	grew := fileBytes(db) - before
	t.Logf("%d proposals in %v: the database grew %d bytes (%.1f MB/s), quota %d", stored, took.Round(time.Millisecond), grew,
		float64(grew)/took.Seconds()/1e6, quota)
	if grew > 2*quota {
		t.Fatalf("an agent with --agent-quota 1MiB grew the database by %d bytes with %d proposals", grew, stored)
	}
}
