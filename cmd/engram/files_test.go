//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// "export --out" replaces a link at its path instead of
// truncating the link's target, and writes the export 0600.
func TestCLIExportOutReplacesLinks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am Ada.")
	for _, tc := range []struct{ name, out string }{
		{"link to a victim", "link.json"},
		{"new file", "new.json"},
		{"existing file", "old.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			victim := filepath.Join(dir, "victim.txt")
			os.WriteFile(victim, []byte("precious\n"), 0o644)
			out := filepath.Join(dir, tc.out)
			switch tc.name {
			case "link to a victim":
				if err := os.Symlink(victim, out); err != nil {
					t.Skip(err)
				}
			case "existing file":
				os.WriteFile(out, []byte("old export"), 0o644)
			}
			ok(t, db, "export", "--out", out)
			if got, _ := os.ReadFile(victim); string(got) != "precious\n" {
				t.Fatalf("the link's target became %q", got)
			}
			fi, err := os.Lstat(out)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v, %v (want a regular file, 0600)", tc.out, fi.Mode(), err)
			}
			if got, _ := os.ReadFile(out); !strings.Contains(string(got), "I am Ada.") {
				t.Fatalf("export = %q", got)
			}
		})
	}
	if entries, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(entries) != 0 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

// Through the CLI: "files import" refuses a link out of
// the workspace and names the file; "files export" does not write through
// one.
func TestCLIFilesRefuseLinksOut(t *testing.T) {
	base := t.TempDir()
	db := filepath.Join(base, "s.db")
	w, outside := filepath.Join(base, "w"), filepath.Join(base, "outside")
	os.MkdirAll(w, 0o755)
	os.MkdirAll(outside, 0o755)
	secret := filepath.Join(outside, "passwd")
	os.WriteFile(secret, []byte("root:OUTSIDE-SECRET\n"), 0o644)
	if err := os.Symlink(secret, filepath.Join(w, "SOUL.md")); err != nil {
		t.Skip(err)
	}
	_, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", w)
	if code == 0 || !strings.Contains(errs, "SOUL.md") || !strings.Contains(errs, "not a regular file inside") {
		t.Fatalf("files import of a link out: exit %d, %s", code, errs)
	}
	// The files are checked before the store is opened: a refused import
	// leaves no store behind, let alone a block.
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a refused import made the store: %v", err)
	}
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "AGENT-TEXT")
	exp := filepath.Join(base, "exp")
	os.MkdirAll(exp, 0o755)
	os.Symlink(filepath.Join("..", "outside", "passwd"), filepath.Join(exp, "SOUL.md"))
	ok(t, db, "files", "export", "--agent", "ada", exp)
	if got, _ := os.ReadFile(secret); string(got) != "root:OUTSIDE-SECRET\n" {
		t.Fatalf("files export wrote through a link: %q", got)
	}
}

// The store's directory is made 0700 and a new store file
// 0600. Only the default location's directories are made (a --db in a
// missing directory is refused).
func TestCLINewStoreIsPrivate(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", filepath.Join(t.TempDir(), "data"))
	t.Setenv("ENGRAM_DB", "")
	db := filepath.Join(os.Getenv("XDG_DATA_HOME"), "engram", "engram.db")
	ok(t, "", "block", "create", "--agent", "ada", "--label", "x")
	for p, want := range map[string]os.FileMode{db: 0o600, filepath.Dir(db): 0o700, filepath.Dir(filepath.Dir(db)): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v (want %v)", p, fi.Mode().Perm(), err, want)
		}
	}
}

// "export --out" into a directory that does not exist named a temporary
// file the user never asked for ("open dir/.x.json.tmp-123: no such file
// or directory"); it names the file asked for.
func TestCLIExportOutMissingDirectory(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am Ada.")
	out := filepath.Join(dir, "missing", "x.json")
	_, errs, code := cli(t, db, "", "export", "--out", out)
	if code == 0 || !strings.Contains(errs, out) || strings.Contains(errs, ".tmp") {
		t.Fatalf("export --out %s: code %d, stderr %q", out, code, errs)
	}
}
