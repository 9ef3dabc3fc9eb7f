package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
)

func lettaFiles(t *testing.T) []string {
	t.Helper()
	dir := eval.FindLettaAF()
	if dir == "" {
		testenv.Missing(t, "Letta agent files not found (set ENGRAM_LETTA_AF or place them at ../shared/datasets/letta-af)")
	}
	files, err := eval.LettaAgentFiles(dir)
	if err != nil || len(files) == 0 {
		testenv.Missing(t, "no .af file in %s (%v)", dir, err)
	}
	return files
}

// The README's "Coming from Letta" commands, run as written on each real
// agent file (the file copied to the name the README uses, its agent's
// name put where the README names the agent): the import reports, the
// context shows the agent's own system prompt, the export writes a file
// that imports again.
func TestReadmeComingFromLetta(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(readme)
	i := strings.Index(sec, "## Coming from Letta")
	if i < 0 {
		t.Fatal(`README has no "Coming from Letta" section`)
	}
	sec = sec[i:]
	sec = sec[strings.Index(sec, "```sh")+len("```sh") : strings.Index(sec, "```\n\n")]
	var cmds [][]string
	for _, l := range strings.Split(strings.TrimSpace(sec), "\n") {
		l, _, _ = strings.Cut(l, "#")
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "engram" {
			t.Fatalf("README line %q is not an engram command", l)
		}
		cmds = append(cmds, f[1:])
	}
	if len(cmds) != 3 {
		t.Fatalf("the section has %d commands, want 3", len(cmds))
	}
	for _, path := range lettaFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "s.db")
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Agents []struct{ Agent, Letta string }
			}
			// The file's first agent, named as the import names it.
			probe := filepath.Join(dir, "probe.db")
			out := ok(t, probe, "--json", "import", "--in", path)
			if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Agents) == 0 {
				t.Fatalf("import --json: %v\n%s", err, out)
			}
			agent := rep.Agents[0].Agent
			for n, c := range cmds {
				args := make([]string, len(c))
				for j, a := range c {
					a = strings.ReplaceAll(a, "memgpt_agent.af", filepath.Join(dir, "memgpt_agent.af"))
					if a == "memgpt_agent" {
						a = agent
					}
					args[j] = a
				}
				if n == 0 {
					if err := os.WriteFile(filepath.Join(dir, "memgpt_agent.af"), data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
				out, errs, code := cli(t, db, "", args...)
				if code != 0 {
					t.Fatalf("engram %s: exit %d: %s", strings.Join(args, " "), code, errs)
				}
				switch n {
				case 0:
					if !strings.Contains(out, "mapped:") || !strings.Contains(out, "not kept:") || !strings.Contains(out, "imported ") {
						t.Fatalf("import printed no report:\n%s", out)
					}
				case 1:
					if !strings.Contains(out, "=== system ===") || strings.Contains(out, "You are a helpful assistant with persistent memory.") {
						t.Fatalf("context does not show the agent's own system prompt:\n%s", out)
					}
					if !regexp.MustCompile(`blocks included: \S`).MatchString(out) {
						t.Fatalf("context shows no block:\n%s", out)
					}
				case 2:
					if !strings.Contains(errs, "not kept:") {
						t.Fatalf("export --format letta reported nothing on stderr:\n%s", errs)
					}
				}
			}
			// The exported file imports into a new store.
			out = ok(t, filepath.Join(dir, "again.db"), "import", "--in", filepath.Join(dir, "memgpt_agent.af"))
			if !strings.Contains(out, "imported ") {
				t.Fatalf("re-import: %s", out)
			}
		})
	}
}

// import --json is the report as JSON; a second import of the same file
// fails naming the agent; --agent renames a one-agent file; profile show
// and set edit the profile that context uses.
func TestCLILettaImportAndProfile(t *testing.T) {
	path := lettaFiles(t)[0]
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	out := ok(t, db, "--json", "import", "--in", path)
	var rep struct {
		Direction string
		Agents    []struct {
			Agent  string
			Blocks int
		}
		Mapped   []struct{ What, Why string }
		NotKept  []struct{ What, Why string } `json:"not_kept"`
		Duration int64                        `json:"duration_ns"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Direction != "import" || len(rep.Agents) == 0 || len(rep.Mapped) == 0 || rep.Duration <= 0 {
		t.Fatalf("report: %+v", rep)
	}
	agent := rep.Agents[0].Agent
	_, errs, code := cli(t, db, "", "import", "--in", path)
	if code == 0 || !strings.Contains(errs, agent) || !strings.Contains(errs, "already") {
		t.Fatalf("second import: exit %d: %s", code, errs)
	}
	ok(t, db, "profile", "set", "--agent", agent, "--system", "You are the edited agent.", "--rules", `[{"kind": "max_calls", "tool": "web_search", "n": 2}]`)
	out = ok(t, db, "profile", "show", "--agent", agent)
	if !strings.Contains(out, "You are the edited agent.") || !strings.Contains(out, "at most 2 times") {
		t.Fatalf("profile show:\n%s", out)
	}
	out = ok(t, db, "context", "--agent", agent)
	if !strings.Contains(out, "You are the edited agent.") || !strings.Contains(out, "Call `web_search` at most 2 times") {
		t.Fatalf("context after profile set:\n%s", out)
	}
	out = ok(t, db, "context", "--agent", agent, "--no-profile")
	if strings.Contains(out, "You are the edited agent.") {
		t.Fatalf("context --no-profile used the profile:\n%s", out)
	}
	ok(t, db, "profile", "delete", "--agent", agent)
	if _, errs, code := cli(t, db, "", "profile", "show", "--agent", agent); code == 0 || !strings.Contains(errs, "not found") {
		t.Fatalf("profile show after delete: exit %d, %s", code, errs)
	}
}
