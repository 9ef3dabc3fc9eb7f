package main

import (
	"os"
	"strings"
	"testing"
)

// --db postgres://… used to create a directory named
// "postgres:" holding a SQLite file. Now a PostgreSQL URL goes to the
// PostgreSQL backend (here: no server, so an error without the password),
// an unknown scheme is an error, and neither creates anything.
func TestCLIStoreURLs(t *testing.T) {
	dir := t.TempDir()
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	for _, c := range []struct{ db, want string }{
		{"postgres://user:pw@127.0.0.1:1/engram", "connect to postgres://user:xxxxx@127.0.0.1:1/engram"},
		{"mysql://user:pw@localhost/engram", "scheme"},
	} {
		_, errs, code := cli(t, c.db, "", "blocks", "list", "--agent", "ada")
		if code == 0 || !strings.Contains(errs, c.want) || strings.Contains(errs, ":pw@") {
			t.Fatalf("--db %s: exit %d, stderr %q", c.db, code, errs)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("created %v", entries)
	}
}
