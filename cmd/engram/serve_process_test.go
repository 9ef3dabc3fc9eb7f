package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// TestServeChild is "engram serve" in a child process of the tests below
// (the test binary run again with ENGRAM_SERVE_CHILD set to the store).
func TestServeChild(t *testing.T) {
	db := os.Getenv("ENGRAM_SERVE_CHILD")
	if db == "" {
		t.Skip("run by the serve process tests")
	}
	os.Exit(run(context.Background(), []string{"--db", db, "--json", "serve", "--addr", "127.0.0.1:0"}, strings.NewReader(""), os.Stdout, os.Stderr))
}

// startServeProcess runs engram serve on db in a child process and
// returns its base URL and the process.
func startServeProcess(t *testing.T, db string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeChild$")
	cmd.Env = append(os.Environ(), "ENGRAM_SERVE_CHILD="+db)
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
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("serve process: %v\n%s", err, stderr.String())
	}
	return strings.TrimSuffix(info["mcp"], "/mcp"), cmd
}

// TestServePostgresTwoProcesses: two engram serve processes on one
// PostgreSQL database behave as one: a write through one is read back
// through the other, a share made through either holds on both, and a
// block created elsewhere reaches the other's session as
// resources/list_changed.
func TestServePostgresTwoProcesses(t *testing.T) {
	if os.Getenv("ENGRAM_SERVE_CHILD") != "" {
		t.Skip("child")
	}
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	store, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start"})
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "private", Value: "ada only"})
	store.Agent("ada").Block("notes").Share(ctx, "bob", blocks.Append)
	_, adaSecret := newToken(t, store, accesstoken.Spec{Agent: "ada"})
	_, bobSecret := newToken(t, store, accesstoken.Spec{Agent: "bob"})

	url1, _ := startServeProcess(t, dsn)
	url2, _ := startServeProcess(t, dsn)
	ada := mustConnectURL(t, url1, adaSecret, nil)
	changed := make(chan struct{}, 16)
	bob := mustConnectURL(t, url2, bobSecret, &mcp.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
		changed <- struct{}{}
	}})

	if text, isErr := callTool(t, ada, "block_append", map[string]any{"label": "notes", "text": " ada on process 1"}); isErr {
		t.Fatal(text)
	}
	waitFor(t, "ada's write read through process 2", func() bool {
		rr, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/notes"})
		return err == nil && strings.Contains(rr.Contents[0].Text, "ada on process 1")
	})
	if text, isErr := callTool(t, bob, "block_append", map[string]any{"label": "notes", "owner": "ada", "text": " bob on process 2"}); isErr {
		t.Fatal(text)
	}
	waitFor(t, "bob's write read through process 1", func() bool {
		rr, err := ada.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/notes"})
		return err == nil && strings.Contains(rr.Contents[0].Text, "bob on process 2")
	})
	if _, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "engram://ada/private"}); err == nil {
		t.Fatal("bob read ada's private block on process 2")
	}
	// A share made elsewhere: bob's session on process 2 hears of it.
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "plans", Value: "shared later"})
	store.Agent("ada").Block("plans").Share(ctx, "bob", blocks.ReadOnly)
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no resources/list_changed on process 2")
	}
	waitFor(t, "the new share listed on process 2", func() bool {
		return slices.Contains(resourceURIs(t, bob), "engram://ada/plans")
	})
}

func mustConnectURL(t *testing.T, base, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "0"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}
	cs, err := client.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestServeKillDuringWrites: kill -9 of a serve process while four
// sessions write loses no write it acknowledged.
func TestServeKillDuringWrites(t *testing.T) {
	if os.Getenv("ENGRAM_SERVE_CHILD") != "" {
		t.Skip("child")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kill.db")
	store := openServeStoreAt(t, path)
	store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start", CharLimit: 1 << 20})
	// A token per writer: each has its own rate limit.
	secrets := make([]string, 4)
	for i := range secrets {
		_, secrets[i] = newToken(t, store, accesstoken.Spec{Agent: "ada"})
	}
	store.Close()

	base, cmd := startServeProcess(t, path)
	var acked sync.Map
	var n atomic.Int64
	var refused atomic.Value
	var killed atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		cs := mustConnectURL(t, base, secrets[w], nil)
		wg.Go(func() {
			for i := 0; ; i++ {
				mark := fmt.Sprintf("[w%d-%d]", w, i)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block_append", Arguments: map[string]any{"label": "notes", "text": mark}})
				if err != nil {
					if !killed.Load() {
						refused.CompareAndSwap(nil, err.Error())
					}
					return // the process is gone
				}
				if res.IsError {
					refused.CompareAndSwap(nil, fmt.Sprint(res.Content[0].(*mcp.TextContent).Text))
					return
				}
				acked.Store(mark, true)
				n.Add(1)
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < 200 && refused.Load() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	killed.Store(true)
	cmd.Process.Signal(syscall.SIGKILL)
	wg.Wait()
	if r := refused.Load(); r != nil {
		t.Fatalf("a write was refused before the kill: %v", r)
	}

	store = openServeStoreAt(t, path)
	got := rendered(t, store, "ada", "notes")
	lost := 0
	acked.Range(func(k, _ any) bool {
		if !strings.Contains(got, k.(string)) {
			lost++
		}
		return true
	})
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost after kill -9", lost, n.Load())
	}
	t.Logf("%d acknowledged writes, all kept", n.Load())
}

// TestServeReadyz: engram serve prewarms its store and says when it is
// done at /readyz (200 "ready"), while /healthz answers from the start.
func TestServeReadyz(t *testing.T) {
	db := filepath.Join(t.TempDir(), "ready.db")
	st, err := memory.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := st.Agent("ada").Archival().Insert(context.Background(), memory.ArchivalEntry{Content: fmt.Sprintf("note %d on the harbour cranes", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	base, _ := startServeProcess(t, db)
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			if string(body) != "ready\n" {
				t.Fatalf("/readyz 200 with %q, want ready", body)
			}
			return
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want 503 then 200 within a minute", resp.StatusCode, body)
		}
	}
}

// TestServeSearchCacheMetrics: engram serve --text-cache sizes the
// full-text cache, and /metrics reports the store's search cache series.
func TestServeSearchCacheMetrics(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "cache.db")
	st, err := memory.Open(context.Background(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "metrics-token")
	if err := os.WriteFile(tokenFile, []byte("metrics-secret-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startServeArgs(t, db, "--text-cache", "96KiB", "--metrics-token-file", tokenFile)
	req, err := http.NewRequest("GET", base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer metrics-secret-0123456789abcdef")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	for _, want := range []string{
		`engram_search_cache_limit_bytes{cache="text"} 98304` + "\n",
		`engram_search_text_partition_loads_total{from="rows"} 0` + "\n",
		`engram_search_prewarming `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
