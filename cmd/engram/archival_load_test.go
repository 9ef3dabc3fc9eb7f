package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// archival load: JSON Lines in, one batch call, progress on stderr; a bad
// line anywhere stores nothing and names the line.
func TestCLIArchivalLoad(t *testing.T) {
	db := filepath.Join(t.TempDir(), "cli.db")
	var in strings.Builder
	for i := range 12 {
		fmt.Fprintf(&in, `{"content": "dock note %d", "tags": ["dock"], "metadata": {"n": %d}}`+"\n", i, i)
	}
	in.WriteString(`{"content": "the ferry leaves at dawn"}` + "\n\n")

	bad := in.String() + `{"content": "x", "colour": "red"}` + "\n"
	_, errs, code := cli(t, db, bad, "archival", "load", "--agent", "ada")
	if code == 0 || !strings.Contains(errs, "line 15") {
		t.Fatalf("unknown field: exit %d, stderr %q", code, errs)
	}
	_, errs, code = cli(t, db, in.String()+`{"content": "  "}`+"\n", "archival", "load", "--agent", "ada")
	if code == 0 || !strings.Contains(errs, "line 15") { // the 14th entry, after the blank line 14
		t.Fatalf("empty content: exit %d, stderr %q", code, errs)
	}
	if _, errs, code := cli(t, db, in.String(), "archival", "load", "--agent", "ada", "--batch", "-3"); code == 0 || !strings.Contains(errs, "--batch") {
		t.Fatalf("negative --batch: exit %d, stderr %q", code, errs)
	}
	if out := ok(t, db, "archival", "list", "--agent", "ada"); strings.Contains(out, "dock note") {
		t.Fatalf("a refused load stored entries:\n%s", out)
	}

	out, errs, code := cli(t, db, in.String(), "--embedder", "offline", "archival", "load", "--agent", "ada", "--tags", "import", "--batch", "5")
	if code != 0 || !strings.Contains(out, "13 archival entries loaded for ada") || !strings.Contains(errs, "13/13") {
		t.Fatalf("load: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if out := ok(t, db, "archival", "list", "--agent", "ada", "--tags", "dock,import"); strings.Count(out, "dock note") != 12 {
		t.Fatalf("listed by tags:\n%s", out)
	}
	if out := ok(t, db, "--embedder", "offline", "search", "--agent", "ada", "ferry dawn"); !strings.Contains(out, "archival 13") {
		t.Fatalf("search after load:\n%s", out)
	}
}
