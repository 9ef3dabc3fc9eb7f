package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// An agent a block is shared with writes it from the CLI
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

// a write kept as a proposal succeeded: it says so on stdout and
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

// a package prefix is printed once however many of its errors the
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

// --version and "version" print the module version.
func TestCLIVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errs, code := cliRaw(t, args...)
		if code != 0 || errs != "" || !strings.HasPrefix(out, "engram ") || !strings.Contains(out, buildVersion()) {
			t.Errorf("engram %s: exit %d, stdout %q, stderr %q", args[0], code, out, errs)
		}
	}
}

// every usage error exits 2; a typo gets "did you mean".
func TestCLIUsageErrorsExit2(t *testing.T) {
	db := filepath.Join(t.TempDir(), "u.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"blcok", "show"}, `did you mean "block"?`},
		{[]string{"profil", "show"}, `did you mean "profile"?`},
		{[]string{"blocks", "lst"}, `did you mean "list"?`},
		{[]string{"block", "apend", "--agent", "ada", "notes", "x"}, `did you mean "append"?`},
		{[]string{"block", "show", "--agnt", "ada", "notes"}, `did you mean "--agent"?`},
		{[]string{"block", "show", "--agent", "ada"}, "want one LABEL"},
		{[]string{"block", "append", "--agent", "ada", "notes"}, "want LABEL TEXT"},
		{[]string{"block", "create", "--label", "x"}, "--agent is required"},
		{[]string{"search", "q"}, "--agent or --all is required"},
		{[]string{"proposals", "approve"}, "want one proposal ID"},
		{[]string{"stats", "--db"}, "--db needs a value"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		_, errs, code := cli(t, db, "", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("engram %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	// A command that ran and failed is exit 1.
	if _, errs, code := cli(t, db, "", "block", "show", "--agent", "ada", "missing"); code != 1 {
		t.Errorf("block show of a missing block: exit %d, %s", code, errs)
	}
}

// global flags after the command.
func TestCLIGlobalFlagsAfterCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "notes", "--value", "hi")
	out, errs, code := cliRaw(t, "blocks", "list", "--agent", "ada", "--db", db, "--json")
	var bs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &bs) != nil || len(bs) != 1 || bs[0]["label"] != "notes" {
		t.Fatalf("blocks list --db X --json: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, errs, code = cliRaw(t, "stats", "--db="+db); code != 0 || !strings.Contains(out, "blocks") {
		t.Fatalf("stats --db=X: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// After "--" it is text.
	ok(t, db, "block", "append", "--agent", "ada", "notes", "--", "--json")
	if out := ok(t, db, "block", "show", "--agent", "ada", "notes"); !strings.Contains(out, "hi--json") {
		t.Fatalf("text after --:\n%s", out)
	}
}

// a bad --schema lists the valid kinds.
func TestCLISchemaKinds(t *testing.T) {
	db := filepath.Join(t.TempDir(), "k.db")
	_, errs, code := cli(t, db, "", "block", "create", "--agent", "ada", "--label", "l", "--schema", `{"kind":"lst"}`)
	if code != 2 || !strings.Contains(errs, `"lst"`) || !strings.Contains(errs, "text, map, list, log, composite") {
		t.Fatalf(`--schema {"kind":"lst"}: exit %d, stderr %q`, code, errs)
	}
}

// a sqlite:// URL to a missing file is refused by a command that
// only reads, like a plain path, and nothing is created.
func TestCLISQLiteURLMissingStore(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	for _, target := range []string{"sqlite://" + missing, missing} {
		_, errs, code := cliRaw(t, "--db", target, "stats")
		if code != 1 || !strings.Contains(errs, "no store at "+missing) {
			t.Errorf("stats --db %s: exit %d, stderr %q", target, code, errs)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("a read-only command created the store")
	}
}

// a store named by --db or $ENGRAM_DB is created only in a
// directory that exists; the default location's directory is made.
func TestCLIStoreDirectory(t *testing.T) {
	data := t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("ENGRAM_DB", "")
	ok(t, "", "block", "create", "--agent", "ada", "--label", "l")
	if _, err := os.Stat(filepath.Join(data, "engram", "engram.db")); err != nil {
		t.Fatalf("the default store was not made: %v", err)
	}
	missing := filepath.Join(data, "nonexistent", "dir", "x.db")
	t.Setenv("ENGRAM_DB", missing)
	for _, args := range [][]string{{"block", "create", "--agent", "ada", "--label", "l"}, {"--db", missing, "block", "create", "--agent", "ada", "--label", "l"}} {
		_, errs, code := cliRaw(t, args...)
		if code != 1 || !strings.Contains(errs, "directory "+filepath.Dir(missing)+" does not exist") {
			t.Errorf("engram %s: exit %d, stderr %q", strings.Join(args, " "), code, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(data, "nonexistent")); err == nil {
		t.Fatal("a write made the missing directories")
	}
}

// --json output is snake_case across blocks list, stats, context
// and proposals list (the library's untagged fields included).
func TestCLIJSONSnakeCase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "j.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--perm", "Partner", "--value", "I am Ada.")
	ok(t, db, "block", "append", "--agent", "ada", "--as-agent", "persona", " More.")
	snake := regexp.MustCompile(`^[a-z0-9_]+$`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if !snake.MatchString(k) {
					t.Errorf("%s: key %q is not snake_case", path, k)
				}
				if k != "parameters" { // a tool's JSON Schema: its own names
					walk(path+"."+k, x)
				}
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	for _, args := range [][]string{
		{"blocks", "list", "--agent", "ada"}, {"stats"}, {"context", "--agent", "ada"}, {"proposals", "list", "--diff"},
	} {
		out := ok(t, db, append([]string{"--json"}, args...)...)
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("engram --json %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		walk(strings.Join(args[:min(2, len(args))], " "), v)
	}
	var ps []map[string]any
	json.Unmarshal([]byte(ok(t, db, "--json", "proposals", "list")), &ps)
	if len(ps) != 1 || ps[0]["id"] != float64(1) || ps[0]["created_at"] == nil {
		t.Fatalf("proposals list --json: %v", ps)
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"ID": "id", "CreatedAt": "created_at", "StablePrefixHash": "stable_prefix_hash",
		"BM25": "bm25", "URLPath": "url_path", "MessagesKept": "messages_kept", "ProposalID": "proposal_id", "System": "system"} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// files import names each existing block before it replaces it,
// --dry-run only says so, and --help gives the file → block mapping.
func TestCLIFilesImportWarnsBeforeReplacing(t *testing.T) {
	dir := t.TempDir()
	db, ws := filepath.Join(dir, "w.db"), filepath.Join(dir, "ws")
	for p, text := range map[string]string{"SOUL.md": "I am Ada, from the file.", "MEMORY.md": "notes", "skills/Tea Time/SKILL.md": "brew"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "I am Ada, typed by hand.")
	out, errs, code := cli(t, db, "", "files", "import", "--agent", "ada", "--dry-run", ws)
	if code != 0 || !strings.Contains(errs, "would replace block persona of ada (24 chars) with SOUL.md") ||
		!strings.Contains(out, "would create memory from MEMORY.md") || !strings.Contains(out, "would create skill.Tea_Time from skills/Tea Time/SKILL.md") {
		t.Fatalf("--dry-run: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if got := ok(t, db, "block", "show", "--agent", "ada", "persona"); !strings.Contains(got, "typed by hand") {
		t.Fatalf("--dry-run wrote:\n%s", got)
	}
	out, errs, code = cli(t, db, "", "files", "import", "--agent", "ada", ws)
	if code != 0 || !strings.Contains(errs, "replacing block persona of ada (24 chars) with SOUL.md") || strings.Contains(errs, "memory") ||
		!strings.Contains(out, "updated  persona") || !strings.Contains(out, "created  skill.Tea_Time") {
		t.Fatalf("files import: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	help := ok(t, db, "files", "import", "--help")
	for _, want := range []string{`SOUL.md                 → Core block "persona"`, `AGENTS.md`, `MEMORY.md`, `TOOLS.md`, `skills/NAME/SKILL.md`, "--dry-run"} {
		if !strings.Contains(help, want) {
			t.Errorf("files import --help lacks %q:\n%s", want, help)
		}
	}
}

// "engram archival" lists every subcommand.
func TestCLIArchivalListsSubcommands(t *testing.T) {
	_, errs, code := cliRaw(t, "archival")
	for _, sub := range []string{"archival add", "archival load", "archival list"} {
		if code != 2 || !strings.Contains(errs, "engram "+sub) {
			t.Errorf("engram archival: exit %d, lacks %q:\n%s", code, sub, errs)
		}
	}
	for _, g := range commands {
		for _, s := range g.sub {
			name := g.name + " " + s.name
			if out := ok(t, "", g.name, "--help"); !strings.Contains(out, "engram "+name) {
				t.Errorf("engram %s --help lacks %s", g.name, name)
			}
		}
	}
}
