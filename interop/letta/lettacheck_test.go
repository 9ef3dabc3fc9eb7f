package letta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/toolrules"
)

// lettaCheck is Letta's own import code run on agent files
// (testdata/lettaschema/check.py: the endpoint's parsing,
// AgentFileSchema.model_validate, AgentSerializationManager.import_file
// with in-memory managers; see its README).
type lettaCheck struct {
	python string
	script string
}

// checkResult is Letta's verdict on one file.
type checkResult struct {
	File    string `json:"file"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// newLettaCheck finds a Python 3.10+ with pydantic 2: $ENGRAM_PYTHON,
// python3 on PATH, then pyenv's versions (newest first). Without one it
// skips, or fails under CI=true.
func newLettaCheck(t testing.TB) *lettaCheck {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "lettaschema", "check.py"))
	if err != nil {
		t.Fatal(err)
	}
	var candidates []string
	if p := os.Getenv("ENGRAM_PYTHON"); p != "" {
		candidates = append(candidates, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var pyenv []string
	for _, root := range []string{os.Getenv("PYENV_ROOT"), filepath.Join(os.Getenv("HOME"), ".pyenv"), "/root/.pyenv"} {
		if root == "" {
			continue
		}
		m, _ := filepath.Glob(filepath.Join(root, "versions", "*", "bin", "python3"))
		pyenv = append(pyenv, m...)
	}
	slices.SortFunc(pyenv, func(a, b string) int { return -compareVersionPaths(a, b) })
	candidates = append(candidates, pyenv...)
	const probe = `import sys, pydantic; sys.exit(0 if sys.version_info >= (3, 10) and int(pydantic.VERSION.split(".")[0]) >= 2 else 1)`
	var tried []string
	for _, py := range candidates {
		if slices.Contains(tried, py) {
			continue
		}
		tried = append(tried, py)
		if exec.Command(py, "-c", probe).Run() == nil {
			return &lettaCheck{python: py, script: script}
		}
	}
	testenv.Missing(t, "no Python 3.10+ with pydantic 2 to run Letta's agent-file import (tried %v; set ENGRAM_PYTHON)", tried)
	return nil
}

// compareVersionPaths orders .../versions/3.11.7/bin/python3 paths by
// their version numbers.
func compareVersionPaths(a, b string) int {
	va := strings.Split(filepath.Base(filepath.Dir(filepath.Dir(a))), ".")
	vb := strings.Split(filepath.Base(filepath.Dir(filepath.Dir(b))), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		var x, y int
		fmt.Sscan(va[i], &x)
		fmt.Sscan(vb[i], &y)
		if x != y {
			return x - y
		}
	}
	return len(va) - len(vb)
}

// run checks the files (name → content) in one Python process and returns
// the verdict on each by name.
func (c *lettaCheck) run(t testing.TB, files map[string][]byte) map[string]checkResult {
	t.Helper()
	dir := t.TempDir()
	args := []string{c.script, "--json"}
	byPath := map[string]string{}
	for _, name := range sortedNames(files) {
		p := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
		byPath[p] = name
	}
	cmd := exec.Command(c.python, args...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 {
		t.Fatalf("%s %s: %v\n%s", c.python, c.script, err, stderr.String())
	}
	t.Logf("Letta's import checked %d files in %v", len(files), time.Since(start).Round(time.Millisecond))
	var results []checkResult
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		t.Fatalf("check.py output: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	out := map[string]checkResult{}
	for _, r := range results {
		r.File = byPath[r.File]
		out[r.File] = r
	}
	if len(out) != len(files) {
		t.Fatalf("check.py answered for %d files of %d", len(out), len(files))
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// exportAll imports the agent file at path into a new store and exports
// every agent of it again.
func exportAll(t *testing.T, path string) []byte {
	t.Helper()
	s, rep, _, _ := importFile(t, path)
	var agents []string
	for _, a := range rep.Agents {
		agents = append(agents, a.Agent)
	}
	f, _, err := letta.Export(context.Background(), s, agents, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// edit returns data (an agent file) changed by fn.
func edit(t *testing.T, data []byte, fn func(doc map[string]any)) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	fn(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Letta's own import code accepts every real agent file, and engram's
// export of each; it refuses the export broken in ways Letta checks, so
// the check can fail.
func TestLettaAcceptsExportOfRealAgentFiles(t *testing.T) {
	check := newLettaCheck(t)
	paths := agentFiles(t)
	files := map[string][]byte{}
	for _, path := range paths {
		base := filepath.Base(path)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files["original/"+base] = orig
		exp := exportAll(t, path)
		files["export/"+base] = exp
		if path != paths[0] {
			continue
		}
		files["broken/block-without-label"] = edit(t, exp, func(doc map[string]any) {
			delete(doc["blocks"].([]any)[0].(map[string]any), "label")
		})
		files["broken/unknown-in-context-message"] = edit(t, exp, func(doc map[string]any) {
			a := doc["agents"].([]any)[0].(map[string]any)
			a["in_context_message_ids"] = append(a["in_context_message_ids"].([]any), "message-99999")
		})
		files["broken/block-id-format"] = edit(t, exp, func(doc map[string]any) {
			doc["blocks"].([]any)[0].(map[string]any)["id"] = "blk-0"
		})
		files["broken/no-llm-config"] = edit(t, exp, func(doc map[string]any) {
			doc["agents"].([]any)[0].(map[string]any)["llm_config"] = nil
		})
		files["broken/unknown-tool"] = edit(t, exp, func(doc map[string]any) {
			a := doc["agents"].([]any)[0].(map[string]any)
			a["tool_ids"] = append(a["tool_ids"].([]any), "tool-99999")
		})
	}
	res := check.run(t, files)
	for _, name := range sortedNames(files) {
		r := res[name]
		switch {
		case strings.HasPrefix(name, "broken/") && r.OK:
			t.Errorf("%s: Letta's import accepted it (%s): the check cannot fail", name, r.Message)
		case strings.HasPrefix(name, "broken/"):
			t.Logf("%s: refused as expected: %.200s", name, r.Message)
		case !r.OK:
			t.Errorf("%s: Letta's import refuses it:\n%s", name, r.Message)
		default:
			t.Logf("%s: %s", name, r.Message)
		}
	}
}

// Agents made in engram, not imported from Letta (no "letta" extension):
// with and without a profile, blocks of every type and schema and
// permission, a share, tool calls and results, a summary. Letta's import
// accepts their export.
func TestLettaAcceptsExportOfEngramAgents(t *testing.T) {
	check := newLettaCheck(t)
	ctx := context.Background()
	s := openStore(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

	// ada: blocks only, no profile.
	ada := s.Agent("ada")
	for _, spec := range []memory.BlockSpec{
		{Label: "persona", Type: blocks.Core, Value: "I am Ada."},
		{Label: "rules", Type: blocks.Core, Permission: blocks.ReadOnly, CharLimit: 300, Value: "Be brief."},
		{Label: "notes", Type: blocks.Working, Permission: blocks.Append, Value: "first note"},
		{Label: "log", Type: blocks.Log, Schema: schema.Log{}},
		{Label: "facts", Type: blocks.Archival, Value: "Paris is in France."},
	} {
		if _, err := ada.CreateBlock(ctx, spec); err != nil {
			t.Fatalf("block %q: %v", spec.Label, err)
		}
	}
	if err := s.Agent("ada").Block("persona").Share(ctx, "bo", blocks.ReadOnly); err != nil {
		t.Fatal(err)
	}

	// bo: a profile without Letta fields, a conversation with tool calls
	// and a summary covering its start.
	bo := s.Agent("bo")
	if _, err := bo.CreateBlock(ctx, memory.BlockSpec{Label: "human", Type: blocks.Core, Value: "The user is Sam."}); err != nil {
		t.Fatal(err)
	}
	if err := s.Agent("bo").SetProfile(ctx, memory.Profile{
		System: "You are Bo.",
		Model:  "gpt-4o-mini",
		Tools: []memory.ToolDefinition{
			{Name: "search", Description: "Search the web.", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)},
			{Name: "done"},
		},
		ToolRules: []toolrules.Rule{toolrules.ExitLoop("done")},
	}); err != nil {
		t.Fatal(err)
	}
	msgs, err := bo.Messages().AppendMany(ctx, []memory.Message{
		{Role: memory.RoleUser, Content: "hello", BatchID: "b1", CreatedAt: t0},
		{Role: memory.RoleAssistant, Content: "hi", BatchID: "b1", CreatedAt: t0.Add(time.Second)},
		{Role: memory.RoleUser, Content: "find x", BatchID: "b2", CreatedAt: t0.Add(time.Minute)},
		{Role: memory.RoleAssistant, BatchID: "b2", CreatedAt: t0.Add(61 * time.Second),
			ToolCalls: []memory.ToolCall{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"q": "x"}`)}}},
		{Role: memory.RoleTool, Content: `{"results": []}`, Name: "search", ToolCallID: "call_1", BatchID: "b2", CreatedAt: t0.Add(62 * time.Second)},
		{Role: memory.RoleAssistant, Content: "nothing found", BatchID: "b2", CreatedAt: t0.Add(63 * time.Second),
			ToolCalls: []memory.ToolCall{{ID: "call_2", Name: "done"}}},
		{Role: memory.RoleTool, Content: "ok", Name: "done", ToolCallID: "call_2", BatchID: "b2", CreatedAt: t0.Add(64 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bo.Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: msgs[0].ID, LastMessageID: msgs[1].ID, Content: "They greeted."}); err != nil {
		t.Fatal(err)
	}

	files := map[string][]byte{}
	for name, agents := range map[string][]string{"ada": {"ada"}, "bo": {"bo"}, "ada+bo": {"ada", "bo"}} {
		f, _, err := letta.Export(ctx, s, agents, nil)
		if err != nil {
			t.Fatalf("export %v: %v", agents, err)
		}
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = data
	}
	res := check.run(t, files)
	for _, name := range sortedNames(files) {
		if r := res[name]; !r.OK {
			t.Errorf("export of %s: Letta's import refuses it:\n%s", name, r.Message)
		} else {
			t.Logf("export of %s: %s", name, r.Message)
		}
	}
}
