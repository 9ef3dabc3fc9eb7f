package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
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

// Item 5: a write kept as a proposal succeeded: it says so on stdout and
// exits 0.
func TestCLIWriteKeptAsProposal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--perm", "Partner", "--value", "I am Ada.")
	out, errs, code := cli(t, db, "", "block", "append", "--agent", "ada", "--as-agent", "persona", " I like tea.")
	if code != 0 || errs != "" || !strings.Contains(out, "proposal #1 queued for approval") {
		t.Fatalf("append to a Partner block as the agent: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	js := ok(t, db, "--json", "block", "set", "--agent", "ada", "--as-agent", "persona", "I am someone else.")
	var v struct {
		Proposal int64  `json:"proposal"`
		Status   string `json:"status"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil || v.Proposal != 2 || v.Status != "pending" {
		t.Fatalf("--json proposal output %q: %+v %v", js, v, err)
	}
	if out := ok(t, db, "proposals", "list"); !strings.Contains(out, "append_text") || !strings.Contains(out, "set_text") {
		t.Fatalf("proposals list:\n%s", out)
	}
}

// Item 5: a package prefix is printed once however many of its errors the
// chain wraps.
func TestCLIErrorPrefixOnce(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("%w: %w: agent %q append on block %q needs approval", blocks.ErrPermission, blocks.ErrNeedsApproval, "ada", "persona"),
		fmt.Errorf("block set: %w", &memory.ProposalError{ProposalID: 3, Err: fmt.Errorf("%w: %w", blocks.ErrPermission, blocks.ErrNeedsApproval)}),
	} {
		got := tidyError(err)
		if strings.Count(got, "blocks: ") != 1 || !strings.Contains(got, "permission denied: write needs approval") {
			t.Errorf("tidyError(%q) = %q", err, got)
		}
	}
	if got := tidyError(fmt.Errorf("memory: not found: block %q", "x")); got != `memory: not found: block "x"` {
		t.Errorf("tidyError changed a single prefix: %q", got)
	}
}
