package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// engram serve's --metrics-token-file turns /metrics on for that token,
// and --trusted-proxies makes the failed-login limit count the client
// named by the proxy's X-Forwarded-For; a bad token file stops serve.
func TestServeHardenFlags(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "serve.db")
	ok(t, db, "token", "create", "--agent", "ada")
	tokenFile := filepath.Join(dir, "metrics-token")
	const metricsToken = "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(tokenFile, []byte(metricsToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short-token")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := cli(t, db, "", "serve", "--addr", "127.0.0.1:0", "--metrics-token-file", short); code == 0 || !strings.Contains(errs, "metrics token") {
		t.Fatalf("a short metrics token: exit %d, %s", code, errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stdout, _, done := runAsync(t, ctx, "--db", db, "--json", "serve", "--addr", "127.0.0.1:0",
		"--metrics-token-file", tokenFile, "--trusted-proxies", "127.0.0.1")
	var info map[string]string
	if err := json.NewDecoder(stdout).Decode(&info); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stdout)
	base := info["url"]
	get := func(path string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if st := get("/metrics", map[string]string{"Authorization": "Bearer " + metricsToken}).StatusCode; st != 200 {
		t.Fatalf("/metrics with its token: %d", st)
	}
	// The default budget is 20 failures per address.
	guess := func(client string, i int) int {
		return get(fmt.Sprintf("/sync?token=engram_guess%d", i), map[string]string{"X-Forwarded-For": client}).StatusCode
	}
	for i := range 20 {
		if st := guess("192.0.2.1", i); st != 401 {
			t.Fatalf("guess %d: %d", i, st)
		}
	}
	if st := guess("192.0.2.1", 20); st != 429 {
		t.Fatalf("the 21st guess from one client: %d, want 429", st)
	}
	if st := guess("192.0.2.2", 21); st != 401 {
		t.Fatalf("another client behind the proxy: %d, want 401", st)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exit %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}
