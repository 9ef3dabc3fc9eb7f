package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 31 item 3: an agent a block is shared with writes it from the CLI
// with --owner, at the share's permission; show and history take --owner too.
func TestCLISharedBlockOwner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "s.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes", "--value", "start")
	ok(t, db, "share", "--owner", "ada", "--label", "notes", "--with", "bob", "--perm", "Append")
	if out := ok(t, db, "block", "append", "--agent", "bob", "--owner", "ada", "notes", " from bob"); !strings.Contains(out, "start from bob") {
		t.Fatalf("block append --owner: %q", out)
	}
	out := ok(t, db, "block", "show", "--agent", "bob", "--owner", "ada", "--history", "notes")
	if !strings.Contains(out, "start from bob") || !strings.Contains(out, "bob") {
		t.Fatalf("block show --owner --history after the sharee's append:\n%s", out)
	}
	// The share's permission applies: Append does not allow set.
	_, errs, code := cli(t, db, "", "block", "set", "--agent", "bob", "--owner", "ada", "notes", "replaced")
	if code != 1 || !strings.Contains(errs, "permission denied") || !strings.Contains(errs, `"notes"`) || !strings.Contains(errs, `"bob"`) {
		t.Fatalf("block set --owner on an Append share: exit %d, stderr %q", code, errs)
	}
	// Not shared: not found, naming the block and the agents.
	_, errs, code = cli(t, db, "", "block", "append", "--agent", "carl", "--owner", "ada", "notes", "x")
	if code != 1 || !strings.Contains(errs, "not found") || !strings.Contains(errs, `"carl"`) {
		t.Fatalf("block append --owner by an agent without a share: exit %d, stderr %q", code, errs)
	}
	if out := ok(t, db, "block", "show", "--agent", "ada", "notes"); strings.Contains(out, "replaced") || !strings.Contains(out, "start from bob") {
		t.Fatalf("owner's view:\n%s", out)
	}
}
