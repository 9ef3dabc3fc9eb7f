package main

import (
	"os"
	"strings"
	"testing"
)

// A --db value that holds a password is never printed
// whole, whether or not it parses, and a keyword DSN is PostgreSQL (it
// used to become a SQLite file, and directories, named after it).
func TestCLIHidesStoreSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, db := range []string{
		"postgres://user:SECRET%PW@127.0.0.1:1/db",
		"host=127.0.0.1 port=1 dbname=x password=SECRET/x connect_timeout=1",
		"mysql://u:SECRET@h/db",
	} {
		for _, cmd := range [][]string{{"stats"}, {"block", "create", "--agent", "a", "--label", "x"}} {
			out, errs, code := cli(t, db, "", cmd...)
			if code == 0 {
				t.Fatalf("engram --db %q %s succeeded:\n%s", db, cmd[0], out)
			}
			if strings.Contains(out+errs, "SECRET") || !strings.Contains(errs, "xxxxx") {
				t.Errorf("engram --db %q %s: stdout %q stderr %q", db, cmd[0], out, errs)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("connection strings made files: %v", entries)
	}
}
