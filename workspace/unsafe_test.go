//go:build unix

package workspace_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/workspace"
)

// An attacker who can write into a workspace directory
// cannot make Import read outside it, hang it, or run it out of memory.
// Each case must fail with its sentinel, name the file, and import none of
// what lies outside.
func TestImportRefusesUnsafeFiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, w, outside string)
		want  error
		file  string // the path the error names
	}{
		{"SOUL.md links out", func(t *testing.T, w, outside string) {
			symlink(t, filepath.Join(outside, "passwd"), filepath.Join(w, "SOUL.md"))
		}, workspace.ErrUnsafeFile, "SOUL.md"},
		{"SOUL.md links out, relative", func(t *testing.T, w, outside string) {
			rel, _ := filepath.Rel(w, filepath.Join(outside, "passwd"))
			symlink(t, rel, filepath.Join(w, "SOUL.md"))
		}, workspace.ErrUnsafeFile, "SOUL.md"},
		{"a skill directory links out", func(t *testing.T, w, outside string) {
			os.MkdirAll(filepath.Join(w, "skills"), 0o755)
			symlink(t, outside, filepath.Join(w, "skills", "x"))
		}, workspace.ErrUnsafeFile, "skills/x/SKILL.md"},
		{"skills links out", func(t *testing.T, w, outside string) {
			symlink(t, filepath.Dir(outside), filepath.Join(w, "skills"))
		}, workspace.ErrUnsafeFile, "skills"},
		{"MEMORY.md links to /dev/zero", func(t *testing.T, w, outside string) {
			symlink(t, "/dev/zero", filepath.Join(w, "MEMORY.md"))
		}, workspace.ErrUnsafeFile, "MEMORY.md"},
		{"MEMORY.md is a FIFO", func(t *testing.T, w, outside string) {
			if err := syscall.Mkfifo(filepath.Join(w, "MEMORY.md"), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, workspace.ErrUnsafeFile, "MEMORY.md"},
		{"MEMORY.md has more bytes than a block may hold", func(t *testing.T, w, outside string) {
			write(t, w, "MEMORY.md", strings.Repeat("é", 2*blocks.MaxCharLimit+1)) // 4 MiB + 2 bytes
		}, workspace.ErrTooLarge, "MEMORY.md"},
		{"MEMORY.md has more characters than a block may hold", func(t *testing.T, w, outside string) {
			write(t, w, "MEMORY.md", strings.Repeat("a", blocks.MaxCharLimit+1))
		}, workspace.ErrTooLarge, "MEMORY.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			w, outside := filepath.Join(base, "w"), filepath.Join(base, "outside", "dir")
			os.MkdirAll(w, 0o755)
			os.MkdirAll(outside, 0o755)
			write(t, outside, "passwd", "root:x:0:0:OUTSIDE-SECRET\n")
			write(t, outside, "SKILL.md", "OUTSIDE-SECRET skill\n")
			tc.setup(t, w, outside)
			store, err := memory.Open(ctx, ":memory:", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			done := make(chan error, 1)
			go func() {
				_, err := workspace.Import(ctx, store.Agent("ada"), w)
				done <- err
			}()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Import hangs")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Import: err = %v, want %v naming %s", err, tc.want, tc.file)
			}
			metas, _ := store.Agent("ada").Blocks(ctx)
			for _, m := range metas {
				if r, _ := store.Agent("ada").Block(m.Label).Render(ctx); strings.Contains(r, "OUTSIDE-SECRET") {
					t.Fatalf("block %s holds a file from outside the workspace", m.Label)
				}
			}
		})
	}
}

// A link that stays inside the workspace is followed (os.Root's rule).
func TestImportFollowsLinksInside(t *testing.T) {
	ctx := context.Background()
	w := t.TempDir()
	write(t, w, "notes/soul.md", "I am Ada.\n")
	symlink(t, filepath.Join("notes", "soul.md"), filepath.Join(w, "SOUL.md"))
	store, _ := memory.Open(ctx, ":memory:", nil)
	defer store.Close()
	if _, err := workspace.Import(ctx, store.Agent("ada"), w); err != nil {
		t.Fatal(err)
	}
	if r, _ := store.Agent("ada").Block("persona").Render(ctx); !strings.Contains(r, "I am Ada.") {
		t.Fatalf("persona = %q", r)
	}
}

// Export writes only inside its directory and never
// through a link, and what it creates is private (files 0600, directories
// 0700).
func TestExportWritesOnlyInside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, exp, outside string)
		want  error // nil: Export succeeds and replaces the links
	}{
		{"SOUL.md links to a victim", func(t *testing.T, exp, outside string) {
			symlink(t, filepath.Join("..", "outside", "victim.txt"), filepath.Join(exp, "SOUL.md"))
		}, nil},
		{"SKILL.md links to a victim", func(t *testing.T, exp, outside string) {
			os.MkdirAll(filepath.Join(exp, "skills", "deploy"), 0o755)
			symlink(t, filepath.Join(outside, "victim.txt"), filepath.Join(exp, "skills", "deploy", "SKILL.md"))
		}, nil},
		{"skills links out", func(t *testing.T, exp, outside string) {
			symlink(t, outside, filepath.Join(exp, "skills"))
		}, workspace.ErrUnsafeFile},
		{"a skill directory links out", func(t *testing.T, exp, outside string) {
			os.MkdirAll(filepath.Join(exp, "skills"), 0o755)
			symlink(t, outside, filepath.Join(exp, "skills", "deploy"))
		}, workspace.ErrUnsafeFile},
		{"a new directory", func(t *testing.T, exp, outside string) { os.Remove(exp) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			base := t.TempDir()
			exp, outside := filepath.Join(base, "exp"), filepath.Join(base, "outside")
			os.MkdirAll(exp, 0o755)
			os.MkdirAll(outside, 0o755)
			write(t, outside, "victim.txt", "precious\n")
			tc.setup(t, exp, outside)
			store, _ := memory.Open(ctx, ":memory:", nil)
			defer store.Close()
			src := t.TempDir()
			write(t, src, "SOUL.md", "AGENT-TEXT soul\n")
			write(t, src, "skills/deploy/SKILL.md", "AGENT-TEXT deploy\n")
			if _, err := workspace.Import(ctx, store.Agent("ada"), src); err != nil {
				t.Fatal(err)
			}
			_, err := workspace.Export(ctx, store.Agent("ada"), exp)
			if got, _ := os.ReadFile(filepath.Join(outside, "victim.txt")); string(got) != "precious\n" {
				t.Fatalf("the file outside became %q", got)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Fatalf("Export wrote outside: %v", entries)
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "skills") {
					t.Fatalf("Export: err = %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for rel, want := range map[string]string{"SOUL.md": "AGENT-TEXT soul\n", "skills/deploy/SKILL.md": "AGENT-TEXT deploy\n"} {
				p := filepath.Join(exp, filepath.FromSlash(rel))
				fi, err := os.Lstat(p)
				if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
					t.Fatalf("%s: %v, %v (want a regular file, 0600)", rel, fi.Mode(), err)
				}
				if got, _ := os.ReadFile(p); string(got) != want {
					t.Fatalf("%s = %q", rel, got)
				}
			}
			if tc.name == "a new directory" {
				for _, d := range []string{exp, filepath.Join(exp, "skills"), filepath.Join(exp, "skills", "deploy")} {
					if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
						t.Fatalf("%s: %v, %v (want 0700)", d, fi.Mode(), err)
					}
				}
			}
			// No temporary file is left behind.
			if entries, _ := os.ReadDir(exp); len(entries) != 2 {
				t.Fatalf("exp holds %v", entries)
			}
		})
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
}
