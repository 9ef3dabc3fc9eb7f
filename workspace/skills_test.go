package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
	"github.com/engram-go/engram/workspace"
)

// Imported skills are listed in the prompt by name and
// description, and load_skill returns a skill's body on demand.
func TestSkillsAreListedAndLoadable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("skills/deploy/SKILL.md", "---\nname: deploy\ndescription: Ship a service to production safely.\n---\n# Deploy\n\nRun the canary first. ZEBRA-STEP.\n")
	write("skills/code review/SKILL.md", "# Review\n\nRead the diff twice before you comment.\n")
	write("skills/code_review/SKILL.md", "clash\n")
	store, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := workspace.Import(ctx, store.Agent("ada"), dir); err == nil || !strings.Contains(err.Error(), "skill.code_review") {
		t.Fatalf("two skills mapping to one label: err = %v", err)
	}
	os.RemoveAll(filepath.Join(dir, "skills", "code_review"))
	if _, err := workspace.Import(ctx, store.Agent("ada"), dir); err != nil {
		t.Fatal(err)
	}
	req, err := builder.New(store.Agent("ada"), builder.ContextConfig{}).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Available skills", "- `deploy`: Ship a service to production safely.", "- `code_review`: Read the diff twice before you comment."} {
		if !strings.Contains(req.System, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, req.System)
		}
	}
	if strings.Contains(req.System, "ZEBRA-STEP") {
		t.Error("an unpinned skill's body is in the prompt")
	}
	ts, err := tools.New(store.Agent("ada"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := ts.Call(ctx, tools.LoadSkill, json.RawMessage(`{"name":"deploy"}`))
	if err != nil || res.IsError || !strings.Contains(res.Content, "ZEBRA-STEP") {
		t.Fatalf("load_skill deploy: %+v, %v", res, err)
	}
	res, err = ts.Call(ctx, tools.LoadSkill, json.RawMessage(`{"name":"nope"}`))
	if err != nil || !res.IsError || !strings.Contains(res.Content, "deploy") {
		t.Fatalf("load_skill of a missing skill: %+v, %v", res, err)
	}
}
