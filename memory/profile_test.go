package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

// A profile is stored whole, replaced whole, deleted; an agent without one
// is ErrNotFound; setting one changes the agent's BlocksStamp (builders
// cache under it) and makes the agent one Admin.Agents lists.
func TestProfileSetGetDelete(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	ada := c.Agent("ada")
	if _, err := ada.Profile(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("no profile: %v", err)
	}
	before, err := ada.BlocksStamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := memory.Profile{System: "You are Ada.", Model: "gpt-4o-mini", ContextWindow: 128000,
		Tools:      []memory.ToolDefinition{{Name: "send_message", Description: "Say it.", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ToolRules:  []toolrules.Rule{toolrules.ExitLoop("send_message"), toolrules.MaxCalls("search", 0)},
		Extensions: map[string]json.RawMessage{"letta": json.RawMessage(`{"agent":{"agent_type":"memgpt_agent"}}`)}}
	if err := ada.SetProfile(ctx, p); err != nil {
		t.Fatal(err)
	}
	got, err := ada.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.UpdatedAt.IsZero() || time.Since(got.UpdatedAt) > time.Minute {
		t.Fatalf("updated at %v", got.UpdatedAt)
	}
	got.UpdatedAt = time.Time{}
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("profile read back differs:\n%s\n%s", a, b)
	}
	after, err := ada.BlocksStamp(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("SetProfile left the agent's BlocksStamp as it was")
	}
	agents, err := c.Admin().Agents(ctx)
	if err != nil || len(agents) != 1 || agents[0] != "ada" {
		t.Fatalf("agents %v, %v", agents, err)
	}
	if err := ada.SetProfile(ctx, memory.Profile{System: "Replaced."}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ada.Profile(ctx); got.System != "Replaced." || len(got.Tools) != 0 {
		t.Fatalf("replaced profile: %+v", got)
	}
	if _, err := c.Agent("bob").Profile(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("bob sees a profile: %v", err)
	}
	if err := ada.DeleteProfile(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ada.DeleteProfile(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

// A profile the store could not give back or a builder could not use is
// refused with ErrInvalidArgument naming what is wrong, and nothing is
// stored.
func TestProfileRefused(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	for _, tc := range []struct {
		name string
		p    memory.Profile
		want string
	}{
		{"tool without a name", memory.Profile{Tools: []memory.ToolDefinition{{Description: "x"}}}, "no name"},
		{"two tools of one name", memory.Profile{Tools: []memory.ToolDefinition{{Name: "a"}, {Name: "a"}}}, `two tools named "a"`},
		{"parameters not an object", memory.Profile{Tools: []memory.ToolDefinition{{Name: "a", Parameters: json.RawMessage(`[1]`)}}}, "not a JSON Schema object"},
		{"rule without a tool", memory.Profile{ToolRules: []toolrules.Rule{toolrules.ExitLoop("")}}, "tool rule"},
		{"negative count", memory.Profile{ToolRules: []toolrules.Rule{toolrules.MaxCalls("a", -1)}}, "tool rule"},
		{"extension not JSON", memory.Profile{Extensions: map[string]json.RawMessage{"x": json.RawMessage(`{`)}}, `extension "x"`},
		{"NUL in the prompt", memory.Profile{System: "a\x00b"}, "NUL"},
		{"negative window", memory.Profile{ContextWindow: -1}, "negative"},
		{"over the cap", memory.Profile{System: strings.Repeat("x", memory.MaxProfileBytes)}, "over the cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Agent("ada").SetProfile(ctx, tc.p)
			if !errors.Is(err, memory.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrInvalidArgument mentioning %q", err, tc.want)
			}
			if _, err := c.Agent("ada").Profile(ctx); !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("a refused profile was stored: %v", err)
			}
			// Import refuses the same profile.
			if _, err := c.Import(ctx, &memory.Dump{Version: memory.DumpVersion, Profiles: []memory.DumpProfile{{Agent: "ada", Profile: tc.p}}}); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Fatalf("import: %v", err)
			}
		})
	}
	if err := c.Agent("").SetProfile(ctx, memory.Profile{}); !errors.Is(err, memory.ErrInvalidArgument) {
		t.Fatalf("empty agent: %v", err)
	}
}

// Import refuses a profile for an agent that has one (all or nothing).
func TestImportProfileExists(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, ":memory:", nil)
	if err := c.Agent("ada").SetProfile(ctx, memory.Profile{System: "kept"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Import(ctx, &memory.Dump{Version: memory.DumpVersion, Profiles: []memory.DumpProfile{{Agent: "ada", Profile: memory.Profile{System: "new"}}},
		Archival: []memory.ArchivalEntry{{ID: 1, Agent: "ada", Content: "x"}}})
	if !errors.Is(err, memory.ErrExists) {
		t.Fatalf("import over a profile: %v", err)
	}
	if p, _ := c.Agent("ada").Profile(ctx); p.System != "kept" {
		t.Fatalf("profile %q", p.System)
	}
	if es, _ := c.Agent("ada").Archival().List(ctx, nil); len(es) != 0 {
		t.Fatal("a refused import stored an archival entry")
	}
}
