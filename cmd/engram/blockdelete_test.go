package main

import (
	"strings"
	"testing"
)

// "block delete" deletes as the system by default; --as-agent needs the
// agent's Admin on the block; a missing block or label is an error that
// says so, and nothing else is touched.
func TestCLIBlockDelete(t *testing.T) {
	db := t.TempDir() + "/s.db"
	ok(t, db, "block", "create", "--agent", "ada", "--label", "scratch", "--value", "temp")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "keep", "--value", "stays")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "mine", "--perm", "Admin", "--value", "mine")

	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"block", "delete", "--agent", "ada", "--as-agent", "scratch"}, 1, "permission ReadWrite cannot delete"},
		{[]string{"block", "delete", "--agent", "ada"}, 2, "want LABEL"},
		{[]string{"block", "delete", "scratch"}, 2, "--agent"},
		{[]string{"block", "delete", "--agent", "ada", "nothing"}, 1, "not found"},
		{[]string{"block", "delete", "--agent", "ada", "scratch"}, 0, ""},
		{[]string{"block", "delete", "--agent", "ada", "scratch"}, 1, "not found"},
		{[]string{"block", "delete", "--agent", "ada", "--as-agent", "mine"}, 0, ""},
	} {
		_, errs, code := cli(t, db, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.err) {
			t.Errorf("engram %v: exit %d (%q), want %d with %q", tc.args, code, errs, tc.code, tc.err)
		}
	}
	if out := ok(t, db, "blocks", "list", "--agent", "ada"); !strings.Contains(out, "keep") || strings.Contains(out, "scratch") || strings.Contains(out, "mine") {
		t.Errorf("blocks left:\n%s", out)
	}
}
