//go:build unix

package workspace_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/workspace"
)

// A workspace with one file Import refuses used to be imported up to that
// file: SOUL.md became (or replaced) block persona, then AGENTS.md, a
// FIFO, failed the command. Import reads and checks every file before it
// writes a block: a refused file leaves every block as it was. Plan
// refuses the same files and names the blocks the rest would become.
func TestImportAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, w string)
		want  error
		file  string
	}{
		{"AGENTS.md is a FIFO", func(t *testing.T, w string) {
			if err := syscall.Mkfifo(filepath.Join(w, "AGENTS.md"), 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		}, workspace.ErrUnsafeFile, "AGENTS.md"},
		{"MEMORY.md is too large", func(t *testing.T, w string) {
			write(t, w, "MEMORY.md", strings.Repeat("a", blocks.MaxCharLimit+1))
		}, workspace.ErrTooLarge, "MEMORY.md"},
		{"a skill is not UTF-8", func(t *testing.T, w string) {
			write(t, w, "skills/z/SKILL.md", "\xff\xfe")
		}, workspace.ErrInvalidFile, "skills/z/SKILL.md"},
		{"TOOLS.md links out", func(t *testing.T, w string) {
			symlink(t, "/etc/passwd", filepath.Join(w, "TOOLS.md"))
		}, workspace.ErrUnsafeFile, "TOOLS.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			w := t.TempDir()
			write(t, w, "SOUL.md", "new soul\n")
			write(t, w, "skills/a/SKILL.md", "a skill\n")
			tc.setup(t, w)
			store, err := memory.Open(ctx, ":memory:", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if _, err := store.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Value: "old soul"}); err != nil {
				t.Fatal(err)
			}
			if _, err := workspace.Plan(w); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Plan: err = %v, want %v naming %s", err, tc.want, tc.file)
			}
			if _, err := workspace.Import(ctx, store.Agent("ada"), w); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Import: err = %v, want %v naming %s", err, tc.want, tc.file)
			}
			if r, _ := store.Agent("ada").Block("persona").Render(ctx); r != "old soul" {
				t.Errorf("persona = %q after a refused import, want the old text", r)
			}
			metas, _ := store.Agent("ada").Blocks(ctx)
			if len(metas) != 1 {
				t.Errorf("%d blocks after a refused import, want 1", len(metas))
			}
		})
	}
	t.Run("plan", func(t *testing.T) {
		w := t.TempDir()
		write(t, w, "SOUL.md", "soul\n")
		write(t, w, "skills/My Skill/SKILL.md", "a skill\n")
		files, err := workspace.Plan(w)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			got = append(got, f.Path+"→"+f.Label)
		}
		if want := "SOUL.md→persona skills/My Skill/SKILL.md→" + blocks.SuggestLabel(blocks.SkillLabelPrefix+"My Skill"); strings.Join(got, " ") != want {
			t.Fatalf("Plan = %q, want %q", got, want)
		}
	})
}
