package builder_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

func toolNames(req *builder.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Name)
	}
	return out
}

// The agent's stored profile fills what the caller leaves unset: base
// instructions, tools (after the registry's; the registry's definition
// wins a name), rules (after the caller's) and the model; what the caller
// sets wins; WithProfile replaces the stored profile, WithoutProfile
// drops it.
func TestBuildUsesTheAgentProfile(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	mustBlock(t, st, "ada", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am Ada."})
	prof := memory.Profile{System: "You are Ada, the profile's agent.", Model: "claude-sonnet-4-5",
		Tools: []memory.ToolDefinition{
			{Name: "send_message", Description: "Say it.", Parameters: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
			{Name: "search", Description: "the profile's search"},
		},
		ToolRules: []toolrules.Rule{toolrules.ExitLoop("send_message")}}
	if err := st.Agent("ada").SetProfile(ctx, prof); err != nil {
		t.Fatal(err)
	}
	reg := builder.ToolList{{Name: "search", Description: "the registry's search"}}
	b := builder.New(st.Agent("ada"), builder.DefaultConfig())

	req, err := b.WithTools(reg).WithToolRules(toolrules.MaxCalls("search", 2)).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.System, prof.System) || strings.Contains(req.System, builder.DefaultBaseInstructions) {
		t.Fatalf("system prompt does not start with the profile's:\n%s", req.System)
	}
	if got := toolNames(req); !slices.Equal(got, []string{"search", "send_message"}) {
		t.Fatalf("tools %v", got)
	}
	for _, tl := range req.Tools {
		if tl.Name == "search" && tl.Description != "the registry's search" {
			t.Fatalf("the profile's definition replaced the registry's: %+v", tl)
		}
	}
	for _, s := range []string{"The conversation will end after calling `send_message`", "Call `search` at most 2 times"} {
		if !strings.Contains(req.System, s) {
			t.Fatalf("rule %q missing:\n%s", s, req.System)
		}
	}
	if req.Metadata.Model != "claude-sonnet-4-5" {
		t.Fatalf("model %q, want the profile's", req.Metadata.Model)
	}
	want := []string{builder.ProfileSystem, builder.ProfileTools, builder.ProfileToolRules, builder.ProfileModel}
	if !slices.Equal(req.Metadata.Profile, want) {
		t.Fatalf("profile parts %v, want %v", req.Metadata.Profile, want)
	}

	// What the caller sets wins.
	req, err = b.WithBaseInstructions("Caller's.").WithModelInfo(builder.ModelInfoFor("gpt-4o")).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.System, "Caller's.") || strings.Contains(req.System, prof.System) || req.Metadata.Model != "gpt-4o" {
		t.Fatalf("caller's settings lost: model %q\n%s", req.Metadata.Model, req.System)
	}
	// WithProfile replaces, WithoutProfile drops.
	req, err = b.WithProfile(memory.Profile{System: "Given profile."}).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.System, "Given profile.") || len(req.Tools) != 0 {
		t.Fatalf("WithProfile: tools %v\n%s", toolNames(req), req.System)
	}
	req, err = b.WithoutProfile().Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.System, builder.DefaultBaseInstructions) || len(req.Tools) != 0 || len(req.Metadata.Profile) != 0 {
		t.Fatalf("WithoutProfile used a profile: %v\n%s", req.Metadata.Profile, req.System)
	}
}

// A warm build reads the profile only when the agent's stamp changed, and
// a profile set by another process on the same file is seen by the next
// build.
func TestProfileChangeReachesWarmBuilds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	p1, p2 := openFile(t, path), openFile(t, path)
	mustBlock(t, p1, "ada", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am Ada."})
	b := builder.New(p1.Agent("ada"), builder.DefaultConfig())
	for i, sys := range []string{"First prompt.", "Second prompt.", ""} {
		var err error
		if sys == "" {
			err = p2.Agent("ada").DeleteProfile(ctx)
		} else {
			err = p2.Agent("ada").SetProfile(ctx, memory.Profile{System: sys})
		}
		if err != nil {
			t.Fatal(err)
		}
		req, err := b.Build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := sys
		if sys == "" {
			want = builder.DefaultBaseInstructions
		}
		if !strings.HasPrefix(req.System, want) {
			t.Fatalf("build %d: system prompt does not start with %q:\n%s", i, want, req.System)
		}
	}
}
