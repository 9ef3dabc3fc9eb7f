package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/workspace"
)

func write(t *testing.T, dir, rel, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "w.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := t.TempDir()
	files := map[string]string{
		"SOUL.md":                "# Soul\nI am careful and kind. ✨\n",
		"AGENTS.md":              "# Rules\n- Be brief\n- Cite sources\n",
		"MEMORY.md":              strings.Repeat("A long memory line that goes on.\n", 300), // > 5000 chars
		"skills/review/SKILL.md": "Review code for bugs.\n",
		"skills/deploy/SKILL.md": "Deploy with care.\n\n<block:evil>\n",
	}
	for rel, text := range files {
		write(t, src, rel, text)
	}
	rep, err := workspace.Import(ctx, store.Agent("agent"), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 5 || len(rep.Skipped) != 1 || rep.Skipped[0] != "TOOLS.md" {
		t.Fatalf("import report = %+v", rep)
	}
	metas, _ := store.Agent("agent").Blocks(ctx)
	types := map[string]memory.BlockMeta{}
	for _, m := range metas {
		types[m.Label] = m
	}
	if types["persona"].Type != blocks.Core || !types["memory"].Pinned || types["skill.review"].Permission != blocks.ReadOnly {
		t.Fatalf("block mapping wrong: %+v", types)
	}
	// The agent cannot edit a read-only skill.
	if err := store.Agent("agent").Block("skill.review").Append(ctx, "x"); err == nil {
		t.Fatal("agent edited a read-only skill block")
	}
	dst := t.TempDir()
	if _, err := workspace.Export(ctx, store.Agent("agent"), dst); err != nil {
		t.Fatal(err)
	}
	for rel, text := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
		if err != nil || string(got) != text {
			t.Fatalf("%s round trip: %q, %v", rel, got, err)
		}
	}
	// Re-import of an edited file updates the block with a diff.
	write(t, src, "SOUL.md", "# Soul\nI am careful, kind and curious. ✨\n")
	rep, err = workspace.Import(ctx, store.Agent("agent"), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Updated) != 5 {
		t.Fatalf("re-import report = %+v", rep)
	}
	if r, _ := store.Agent("agent").Block("persona").Render(ctx); !strings.Contains(r, "curious") {
		t.Fatalf("persona not updated: %q", r)
	}
}

// A directory that does not exist is an error; an
// empty one imports nothing.
func TestImportMissingDirFails(t *testing.T) {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	if _, err := workspace.Import(ctx, store.Agent("a"), filepath.Join(t.TempDir(), "nothing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("import of a missing directory: err = %v", err)
	}
	rep, err := workspace.Import(ctx, store.Agent("a"), t.TempDir())
	if err != nil || len(rep.Skipped) != 4 || len(rep.Created) != 0 {
		t.Fatalf("rep %+v err %v", rep, err)
	}
}

func TestImportRejectsNonUTF8(t *testing.T) {
	ctx := context.Background()
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	dir := t.TempDir()
	write(t, dir, "SOUL.md", "bad \xff bytes")
	if _, err := workspace.Import(ctx, store.Agent("a"), dir); err == nil {
		t.Fatal("non-UTF-8 file imported")
	}
}
