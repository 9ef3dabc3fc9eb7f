//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// files import --dry-run said what the import would do without checking
// the files the import refuses, missed skills whose directory is a link
// inside the workspace (which the import reads), and failed on a store
// that does not exist yet ("no store at …"), the one a first import
// creates.
func TestCLIFilesImportDryRunPlansAsImportReads(t *testing.T) {
	mk := func(t *testing.T, files map[string]string) string {
		t.Helper()
		ws := filepath.Join(t.TempDir(), "ws")
		for p, text := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, p), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return ws
	}
	t.Run("no store yet", func(t *testing.T) {
		ws := mk(t, map[string]string{"SOUL.md": "I am Ada."})
		db := filepath.Join(t.TempDir(), "new.db")
		out, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", "--dry-run", ws)
		if code != 0 || !strings.Contains(out, "would create persona from SOUL.md") {
			t.Fatalf("--dry-run on a new store: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("--dry-run created the store: %v", err)
		}
	})
	t.Run("a file the import refuses", func(t *testing.T) {
		ws := mk(t, map[string]string{"SOUL.md": "I am Ada."})
		if err := syscall.Mkfifo(filepath.Join(ws, "AGENTS.md"), 0o644); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		db := filepath.Join(t.TempDir(), "w.db")
		ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "typed by hand")
		out, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", "--dry-run", ws)
		if code == 0 || !strings.Contains(errs, "AGENTS.md") {
			t.Fatalf("--dry-run: exit %d, stdout %q, stderr %q; want the import's refusal of AGENTS.md", code, out, errs)
		}
		if _, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", ws); code == 0 || !strings.Contains(errs, "AGENTS.md") {
			t.Fatalf("files import: exit %d, stderr %q", code, errs)
		}
		if got := ok(t, db, "block", "show", "--agent", "ada", "persona"); !strings.Contains(got, "typed by hand") {
			t.Fatalf("a refused import replaced persona:\n%s", got)
		}
	})
	t.Run("a skill directory linked inside", func(t *testing.T) {
		ws := mk(t, map[string]string{"shared/brew/SKILL.md": "brew tea"})
		if err := os.MkdirAll(filepath.Join(ws, "skills"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "shared", "brew"), filepath.Join(ws, "skills", "brew")); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(t.TempDir(), "w.db")
		out, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", "--dry-run", ws)
		if code != 0 || !strings.Contains(out, "would create skill.brew from skills/brew/SKILL.md") {
			t.Fatalf("--dry-run: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		if out := ok(t, db, "files", "import", "--agent", "ada", ws); !strings.Contains(out, "created  skill.brew") {
			t.Fatalf("files import: %q", out)
		}
	})
}
