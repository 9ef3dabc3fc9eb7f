package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Help is printed on stdout with exit 0, for the program,
// command groups and every command (with its flags and an example).
func TestCLIHelp(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"block", "--help"}, {"archival", "-h"},
		{"block", "create", "--help"}, {"block", "append", "-h"}, {"search", "--help"},
		{"share", "--help"}, {"files", "import", "--help"}, {"mcp", "--help"}, {"context", "--help"},
	} {
		var out, errs string
		var code int
		if args[0] == "--help" || args[0] == "-h" {
			out, errs, code = cliRaw(t, args...)
		} else {
			out, errs, code = cli(t, db, "", args...)
		}
		if code != 0 || errs != "" || !strings.Contains(out, "Usage") {
			t.Errorf("engram %s: exit %d, stderr %q, stdout %q", strings.Join(args, " "), code, errs, out)
		}
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") && args[1] != "help" && !strings.Contains(out, "Example:") {
			t.Errorf("engram %s: no example:\n%s", strings.Join(args, " "), out)
		}
	}
	out, _, _ := cli(t, db, "", "block", "create", "--help")
	for _, want := range []string{"-perm", "-type", "-value", "@FILE"} {
		if !strings.Contains(out, want) {
			t.Errorf("block create --help lacks %q:\n%s", want, out)
		}
	}
}

// Typos in enum flags say what is valid.
func TestCLIUnknownValues(t *testing.T) {
	db := filepath.Join(t.TempDir(), "v.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"block", "create", "--agent", "a", "--label", "x", "--perm", "rw"}, "ReadOnly, Partner, Human, Append, ReadWrite, Admin"},
		{[]string{"block", "create", "--agent", "a", "--label", "x", "--type", "cor"}, "core, working, archival, log"},
	} {
		_, errs, code := cli(t, db, "", tc.args...)
		if code == 0 || !strings.Contains(errs, "unknown") || !strings.Contains(errs, tc.want) || strings.Contains(errs, "permission denied") {
			t.Errorf("engram %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, errs)
		}
	}
}

// Text from stdin ("-"), a file ("@FILE") and text that starts
// with "-".
func TestCLITextSources(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "t.db")
	file := filepath.Join(dir, "note.txt")
	os.WriteFile(file, []byte("from a file"), 0o644)
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes", "--value", "@"+file)
	if out := ok(t, db, "block", "show", "--agent", "ada", "--raw", "notes"); !strings.Contains(out, "from a file") {
		t.Fatalf("--value @FILE: %q", out)
	}
	if _, errs, code := cli(t, db, "piped text", "block", "set", "--agent", "ada", "notes", "-"); code != 0 {
		t.Fatalf("block set -: %s", errs)
	}
	if out := ok(t, db, "block", "show", "--agent", "ada", "--raw", "notes"); !strings.Contains(out, "piped text") {
		t.Fatalf("stdin text: %q", out)
	}
	ok(t, db, "block", "append", "--agent", "ada", "notes", "- a dash item")
	ok(t, db, "block", "append", "--agent", "ada", "notes", "--", "-x")
	ok(t, db, "block", "append", "--agent", "ada", "notes", "@@handle")
	out := ok(t, db, "block", "show", "--agent", "ada", "--raw", "notes")
	for _, want := range []string{"- a dash item", "-x", "@handle"} {
		if !strings.Contains(out, want) {
			t.Errorf("block lacks %q:\n%s", want, out)
		}
	}
	// A new epoch keeps the text; the history shows both epochs.
	ok(t, db, "compact", "--rebase", "--agent", "ada")
	if st := ok(t, db, "--json", "stats"); !strings.Contains(st, `"archived_epochs": 1`) {
		t.Fatalf("stats after one rebase:\n%s", st)
	}
	hist := ok(t, db, "block", "show", "--agent", "ada", "--history", "notes")
	if !strings.Contains(hist, "@handle") || !strings.Contains(hist, "EPOCH") || !regexp.MustCompile(`rebase .* 1\n`).MatchString(hist) ||
		!regexp.MustCompile(`create .* 0\n`).MatchString(hist) {
		t.Fatalf("history after compact --rebase:\n%s", hist)
	}
	if _, errs, code := cli(t, db, "archived from stdin", "archival", "add", "--agent", "ada", "-"); code != 0 {
		t.Fatal(errs)
	}
	if out := ok(t, db, "archival", "list", "--agent", "ada"); !strings.Contains(out, "archived from stdin") {
		t.Fatalf("archival add -: %q", out)
	}
	if _, errs, code := cli(t, db, "", "block", "append", "--agent", "ada", "notes", "@"+filepath.Join(dir, "missing")); code == 0 || !strings.Contains(errs, "missing") {
		t.Fatalf("@missing file: exit %d %q", code, errs)
	}
	if _, errs, code := cli(t, db, "", "block", "append", "--agent", "ada", "notes", "-y"); code == 0 || !strings.Contains(errs, `"--"`) {
		t.Fatalf("unknown flag -y: exit %d %q", code, errs)
	}
}

// Importing a directory that does not exist fails.
func TestCLIFilesImportMissingDir(t *testing.T) {
	dir := t.TempDir()
	_, errs, code := cli(t, filepath.Join(dir, "f.db"), "", "files", "import", "--agent", "ada", filepath.Join(dir, "no-such-dir"))
	if code == 0 || !strings.Contains(errs, "no-such-dir") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

// --value on a map block keeps the defaults of omitted fields.
func TestCLIMapValueKeepsDefaults(t *testing.T) {
	db := filepath.Join(t.TempDir(), "m.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "stats",
		"--schema", `{"kind":"map","fields":[{"name":"name","type":"string"},{"name":"count","type":"counter"}]}`,
		"--value", `{"name":"x"}`)
	if out := ok(t, db, "block", "show", "--agent", "ada", "--raw", "stats"); !strings.Contains(out, "count: 0") {
		t.Fatalf("omitted counter:\n%s", out)
	}
}

// cliRaw runs engram with args and no --db.
func cliRaw(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cliArgs(t, "", args...)
}
