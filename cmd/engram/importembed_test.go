package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// remoteEmbedder stands for an OpenAI-compatible model: a store that
// recorded it can't have it rebuilt by the CLI without its key.
type remoteEmbedder struct{}

func (remoteEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0, 0, 0}
	}
	return out, nil
}
func (remoteEmbedder) Dimensions() int { return 4 }
func (remoteEmbedder) Name() string    { return "acme-embed/4" }

// engram import into a store whose recorded embedder the CLI cannot
// rebuild here (an OpenAI-compatible model, no key set) committed the
// import, then tried to embed it with the dump's embedder, which the store
// refused as a mismatch: exit 1 after a successful import, and running it
// again failed with "exists". The import succeeds; the imported content
// waits for a reembed with the store's embedder, and stderr says so.
func TestCLIImportIntoStoreWithUnavailableEmbedder(t *testing.T) {
	for _, v := range []string{envBaseURL, envBaseURL2, envKey, envKey2} {
		t.Setenv(v, "")
	}
	ctx := context.Background()
	dir := t.TempDir()
	dst := filepath.Join(dir, "dst.db")
	s, err := memory.Open(ctx, dst, &memory.Options{Embedder: remoteEmbedder{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Agent("zed").Archival().Insert(ctx, memory.ArchivalEntry{Content: "zed's fact"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	src, dump := filepath.Join(dir, "src.db"), filepath.Join(dir, "d.json")
	ok(t, src, "--embedder", "offline", "archival", "add", "--agent", "ada", "ada's fact")
	ok(t, src, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am Ada.")
	ok(t, src, "export", "--out", dump)
	if b, _ := os.ReadFile(dump); !strings.Contains(string(b), "offline-hash-v1/384") {
		t.Fatalf("the dump records no embedder: %s", b)
	}
	out, errs, code := cli(t, dst, "", "import", "--in", dump)
	if code != 0 || !strings.Contains(out, "imported 1 blocks") {
		t.Fatalf("import: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if !strings.Contains(errs, "acme-embed/4") || !strings.Contains(errs, "reembed") {
		t.Errorf("import: stderr %q does not say the content waits for the store's embedder", errs)
	}
	if got := ok(t, dst, "block", "show", "--agent", "ada", "persona"); !strings.Contains(got, "I am Ada.") {
		t.Fatalf("persona:\n%s", got)
	}
	if got := ok(t, dst, "stats"); !strings.Contains(got, "acme-embed/4") {
		t.Errorf("the store's embedder changed:\n%s", got)
	}
}
