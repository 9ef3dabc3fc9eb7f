package builder_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

// providerRequest is a request with every part a conversion handles: a
// stable prefix, memory, per-request sections, a tool exchange with an
// object result and a text result, and the current user message.
func providerRequest(t *testing.T) *builder.Request {
	st := openStore(t)
	seedLayers(t, st)
	toolExchange(t, st, "ada", "b2", "find kettle tickets", "search_tickets", `{"tickets":[42]}`, "Ticket 42 is open.")
	mustMsg(t, st, "ada", memory.Message{Role: memory.RoleUser, BatchID: "b3", Content: "Close it."})
	mustMsg(t, st, "ada", memory.Message{Role: memory.RoleAssistant, BatchID: "b3", ToolCalls: []memory.ToolCall{{ID: "call_x", Name: "context"}}})
	mustMsg(t, st, "ada", memory.Message{Role: memory.RoleTool, BatchID: "b3", Name: "context", ToolCallID: "call_x", Content: "plain text result"})
	cfg := builder.DefaultConfig()
	cfg.PrefixCacheOrder = true
	cfg.Clock = novemberClock
	cfg.Recall = &builder.RecallOptions{Limit: 2}
	mustBlock(t, st, "ada", memory.BlockSpec{Label: "tasks", Type: blocks.Working, Pinned: true, Value: "close ticket 42"})
	return build(t, builder.New(st.Agent("ada"), cfg).WithMessages(st.Agent("ada").Messages()).WithTools(testTools).
		WithBaseInstructions("You are Ada.").WithToolRules(toolrules.ExitLoop("send_message")).
		WithModelInfo(builder.ModelInfoFor("claude-sonnet-4")).WithActiveBatch("b3").
		WithEnvironment(builder.Environment{Version: "v1.2.3"}))
}

func TestProviderConversionsGolden(t *testing.T) {
	req := providerRequest(t)
	for _, tc := range []struct {
		name string
		body any
	}{
		{"openai", req.OpenAI(&builder.OpenAIOptions{Model: "gpt-4.1"})},
		{"anthropic", req.Anthropic(nil)},
		{"gemini", req.Gemini(nil)},
		{"gemini_cached", req.Gemini(&builder.GeminiOptions{CachedContent: "cachedContents/abc123"})},
		{"gemini_cache_create", req.GeminiCache("gemini-2.5-flash", time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tc.body, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", "provider_"+tc.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if string(got) != string(want) {
				t.Fatalf("%s differs from the golden file (go test -run TestProviderConversionsGolden -update rewrites it):\n%s", path, got)
			}
		})
	}
}

// TestProviderShapes checks the documented rules of each API on the
// converted bodies, beyond the golden bytes.
func TestProviderShapes(t *testing.T) {
	req := providerRequest(t)

	oa := req.OpenAI(nil)
	if oa.Model != "claude-sonnet-4" || oa.PromptCacheKey != "engram:ada" || oa.Messages[0].Role != "system" || *oa.Messages[0].Content != req.System {
		t.Fatalf("openai head: %+v", oa.Messages[0])
	}
	calls := map[string]bool{}
	for _, m := range oa.Messages {
		switch m.Role {
		case "assistant":
			for _, c := range m.ToolCalls {
				if c.Type != "function" || !json.Valid([]byte(c.Function.Arguments)) {
					t.Fatalf("openai tool call %+v", c)
				}
				calls[c.ID] = true
			}
			if len(m.ToolCalls) > 0 && m.Content != nil {
				t.Fatalf("openai: a tool-call-only message has content %q", *m.Content)
			}
		case "tool":
			if !calls[m.ToolCallID] || m.Name != "" {
				t.Fatalf("openai tool message %+v answers no earlier call", m)
			}
		}
	}
	for _, tool := range oa.Tools {
		if tool.Type != "function" || tool.Function.Name == "" {
			t.Fatalf("openai tool %+v", tool)
		}
	}

	an := req.Anthropic(nil)
	breakpoints := 0
	var sys strings.Builder
	for _, b := range an.System {
		sys.WriteString(b.Text)
		if b.CacheControl != nil {
			breakpoints++
		}
	}
	if sys.String() != req.System || len(an.System) != 3 || an.System[0].Text != req.System[:req.Metadata.StablePrefixEnd] {
		t.Fatalf("anthropic system blocks do not rebuild the prompt or miss the prefix cut: %+v", an.System)
	}
	if !strings.HasPrefix(an.System[2].Text, "\n\n<recalled_memories>") && !strings.HasPrefix(an.System[2].Text, "\n\n<environment>") {
		t.Fatalf("anthropic: the uncached block is not the per-request tail: %q", an.System[2].Text)
	}
	uses := map[string]bool{}
	for i, m := range an.Messages {
		if (i == 0 && m.Role != "user") || (i > 0 && an.Messages[i-1].Role == m.Role) {
			t.Fatalf("anthropic: roles must alternate from user: %d %s", i, m.Role)
		}
		for _, b := range m.Content {
			if b.CacheControl != nil {
				breakpoints++
			}
			switch b.Type {
			case "text":
				if b.Text == "" {
					t.Fatal("anthropic: empty text block")
				}
			case "tool_use":
				uses[b.ID] = true
				if m.Role != "assistant" || !json.Valid(b.Input) || b.Input[0] != '{' {
					t.Fatalf("anthropic tool_use %+v", b)
				}
			case "tool_result":
				if m.Role != "user" || !uses[b.ToolUseID] {
					t.Fatalf("anthropic tool_result %+v answers no earlier tool_use", b)
				}
			default:
				t.Fatalf("anthropic block type %q", b.Type)
			}
		}
	}
	if breakpoints < 3 || breakpoints > 4 {
		t.Fatalf("anthropic: %d cache breakpoints (the API allows 4)", breakpoints)
	}
	for _, tool := range an.Tools {
		if !json.Valid(tool.InputSchema) || tool.InputSchema[0] != '{' {
			t.Fatalf("anthropic tool %+v", tool)
		}
	}

	ge := req.Gemini(nil)
	if ge.SystemInstruction == nil || ge.SystemInstruction.Parts[0].Text != req.System || len(ge.Tools) != 1 || len(ge.Tools[0].FunctionDeclarations) != len(req.Tools) {
		t.Fatalf("gemini head: %+v", ge)
	}
	for i, c := range ge.Contents {
		if (c.Role != "user" && c.Role != "model") || (i == 0 && c.Role != "user") || (i > 0 && ge.Contents[i-1].Role == c.Role) {
			t.Fatalf("gemini content %d role %q", i, c.Role)
		}
		for _, p := range c.Parts {
			if r := p.FunctionResponse; r != nil && (r.Name == "" || r.Response[0] != '{') {
				t.Fatalf("gemini function response %+v", r)
			}
		}
	}
	cached := req.Gemini(&builder.GeminiOptions{CachedContent: "cachedContents/x"})
	if cached.SystemInstruction != nil || cached.Tools != nil || !strings.Contains(cached.Contents[0].Parts[0].Text, "<block:human") {
		t.Fatalf("gemini with cached content: %+v", cached.Contents[0])
	}
	cc := req.GeminiCache("", 90*time.Second)
	if cc.Model != "models/claude-sonnet-4" || cc.TTL != "90s" || cc.SystemInstruction.Parts[0].Text != req.System[:req.Metadata.StablePrefixEnd] {
		t.Fatalf("gemini cache body %+v", cc)
	}
}
