package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/memory"
)

// TestCLIArchivalCaps: archival add and archival load past a per-entry
// cap exit non-zero with the cap's message and store nothing.
func TestCLIArchivalCaps(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "caps.db")
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", 2<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errs, code := cli(t, db, "", "archival", "add", "--agent", "ada", "@"+big)
	if code == 0 || !strings.Contains(errs, "too large") || !strings.Contains(errs, `"ada"`) ||
		!strings.Contains(errs, "content is 2097152 bytes") || !strings.Contains(errs, "cap of 1048576") {
		t.Fatalf("archival add of 2 MiB: exit %d, %q", code, errs)
	}
	tags := make([]string, 65)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	_, errs, code = cli(t, db, "", "archival", "add", "--agent", "ada", "--tags", strings.Join(tags, ","), "fine text")
	if code == 0 || !strings.Contains(errs, "more than 64 distinct tags") {
		t.Fatalf("archival add with 65 tags: exit %d, %q", code, errs)
	}
	lines := `{"content":"fine"}` + "\n" + fmt.Sprintf(`{"content":"c","metadata":{"blob":%q}}`, strings.Repeat("m", 70_000)) + "\n"
	_, errs, code = cli(t, db, lines, "archival", "load", "--agent", "ada")
	if code == 0 || !strings.Contains(errs, "line 2") || !strings.Contains(errs, "metadata is 70011 bytes") || !strings.Contains(errs, "nothing was stored") {
		t.Fatalf("archival load with an over-cap line: exit %d, %q", code, errs)
	}
	if out := ok(t, db, "--json", "archival", "list", "--agent", "ada"); strings.Contains(out, "content") {
		t.Fatalf("refused writes stored entries: %s", out)
	}
}

// TestCLIImportCaps: import refuses a dump holding an entry past a cap,
// naming it, and imports nothing; --no-caps imports it.
func TestCLIImportCaps(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "import.db")
	d := memory.Dump{Version: memory.DumpVersion, Archival: []memory.ArchivalEntry{
		{ID: 1, Agent: "ada", Content: "small"},
		{ID: 2, Agent: "ada", Content: strings.Repeat("x", 3<<20)},
	}}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	_, errs, code := cli(t, db, string(b), "import")
	if code == 0 || !strings.Contains(errs, "archival entry 1 (id 2)") || !strings.Contains(errs, "content is 3145728 bytes") {
		t.Fatalf("import of an over-cap entry: exit %d, %q", code, errs)
	}
	if out := ok(t, db, "--json", "archival", "list", "--agent", "ada"); strings.Contains(out, "small") {
		t.Fatalf("a refused import stored entries: %s", out)
	}
	if _, errs, code := cli(t, db, string(b), "import", "--no-caps"); code != 0 {
		t.Fatalf("import --no-caps: exit %d, %q", code, errs)
	}
	if out := ok(t, db, "--json", "archival", "list", "--agent", "ada"); !strings.Contains(out, "small") {
		t.Fatalf("import --no-caps stored nothing: %s", out)
	}
}

func TestByteSizeFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0"}, {in: "1048576", want: 1 << 20}, {in: "500MiB", want: 500 << 20}, {in: "2GiB", want: 2 << 30},
		{in: "64K", want: 64 << 10}, {in: "3 M", want: 3 << 20}, {in: "12B", want: 12},
		{in: "", bad: true}, {in: "-1", bad: true}, {in: "1.5GiB", bad: true}, {in: "2TiB", bad: true},
		{in: "9999999999999GiB", bad: true}, {in: "lots", bad: true},
	} {
		var b byteSize
		err := b.Set(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && int64(b) != tc.want) {
			t.Errorf("Set(%q) = %d, %v; want %d (error %v)", tc.in, b, err, tc.want, tc.bad)
		}
	}
}

// TestServeAgentQuota: engram serve --agent-quota holds each agent to its
// quota: once full, archival_insert over MCP is a tool error naming the
// quota, and another agent still writes.
func TestServeAgentQuota(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := filepath.Join(t.TempDir(), "serve.db")
	store := openServeStoreAt(t, db)
	_, ada := newToken(t, store, accesstoken.Spec{Agent: "ada", Name: "ada"})
	_, bob := newToken(t, store, accesstoken.Spec{Agent: "bob", Name: "bob"})

	pr, pw := io.Pipe()
	var stderr lockedBuilder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--db", db, "--json", "serve", "--addr", "127.0.0.1:0", "--agent-quota", "3KiB"}, strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	var info map[string]string
	if err := json.NewDecoder(bufio.NewReader(pr)).Decode(&info); err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSuffix(info["mcp"], "/mcp")
	cs, err := connectMCP(ctx, base, ada)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var text string
	isErr := false
	for i := 0; !isErr && i < 20; i++ {
		text, isErr = callTool(t, cs, "archival_insert", map[string]any{"content": fmt.Sprintf("fact %d %s", i, strings.Repeat("w", 400))})
	}
	if !isErr || !strings.Contains(text, "quota of 3072 bytes") || !strings.Contains(text, `"ada"`) {
		t.Fatalf("archival_insert past the quota: error %v, %q", isErr, text)
	}
	if used, err := store.Agent("ada").StorageUsed(ctx); err != nil || used > 3072 {
		t.Fatalf("ada uses %d bytes (%v), past the quota", used, err)
	}
	cb, err := connectMCP(ctx, base, bob)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	if text, isErr := callTool(t, cb, "archival_insert", map[string]any{"content": "bob's own fact"}); isErr {
		t.Fatalf("another agent's insert: %s", text)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
}
