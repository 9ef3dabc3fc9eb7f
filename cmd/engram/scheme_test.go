package main

import (
	"os"
	"strings"
	"testing"
)

// Issue 13 item 3: --db postgres://… used to create a directory named
// "postgres:" holding a SQLite file; an unknown scheme is now an error.
func TestCLIRefusesUnknownStoreURL(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	_, errs, code := cli(t, "postgres://user:pw@localhost/engram", "", "blocks", "list", "--agent", "ada")
	if code == 0 || !strings.Contains(errs, "scheme") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("created %v", entries)
	}
}
