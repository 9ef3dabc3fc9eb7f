package letta_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
)

// minimalDoc is a synthetic agent file of one agent "ada" with one block.
func minimalDoc() map[string]any {
	return map[string]any{
		"agents": []any{map[string]any{
			"id": "agent-0", "name": "ada", "system": "You are ada.",
			"block_ids": []any{"block-0"}, "tool_ids": []any{}, "messages": []any{},
		}},
		"blocks":      []any{map[string]any{"id": "block-0", "label": "persona", "value": "I am ada.", "limit": 5000}},
		"tools":       []any{},
		"groups":      []any{},
		"files":       []any{},
		"sources":     []any{},
		"mcp_servers": []any{},
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Secrets are never stored or exported, whatever the case of their key:
// encoding/json reads "Secrets" into the secrets field (so the report says
// it is not kept), and it must not also land in the agent's extension.
func TestSecretsNeverStoredInAnyKeyCase(t *testing.T) {
	ctx := context.Background()
	for _, key := range []string{"Secrets", "SECRETS", "Tool_Exec_Environment_Variables", "TOOL_EXEC_ENVIRONMENT_VARIABLES"} {
		t.Run(key, func(t *testing.T) {
			doc := minimalDoc()
			firstAgent(doc)[key] = map[string]any{"OPENAI_API_KEY": "sk-secret-value-3"}
			s := openStore(t)
			rep, err := letta.Import(ctx, s, marshal(t, doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(reportText(rep), "sk-secret") {
				t.Fatal("the report holds a secret value")
			}
			d, err := s.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			f, _, err := letta.Export(ctx, s, []string{"ada"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for what, b := range map[string][]byte{"engram dump": marshal(t, d), "letta export": marshal(t, f)} {
				if strings.Contains(string(b), "sk-secret") {
					t.Errorf("%s holds the secret value given under %q", what, key)
				}
			}
		})
	}
}

// An import never merges into an agent the store already has: an agent
// that only sees blocks other agents share with it is in use too (the
// imported agent would see another agent's memory it never had).
func TestImportRefusesAnAgentWithOnlyShares(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	b, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "diary", Type: blocks.Core, Value: "alice's private diary"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Share(ctx, "ada", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	_, err = letta.Import(ctx, s, marshal(t, minimalDoc()), nil)
	if !errors.Is(err, memory.ErrExists) {
		sh, _ := s.Agent("ada").SharedBlocks(ctx)
		t.Fatalf("import of a Letta agent %q over an engram agent that has shares: err %v; the imported agent now sees %d blocks of other agents", "ada", err, len(sh))
	}
}

// A tool call Letta never answered (an interrupted step) must not glue
// the rest of the conversation into one batch: compression keeps or drops
// whole batches, so one batch of the whole history can only go whole.
func TestUnansweredCallDoesNotGlueBatches(t *testing.T) {
	ctx := context.Background()
	doc := minimalDoc()
	msg := func(id, role, text string, extra map[string]any) map[string]any {
		m := map[string]any{"id": id, "role": role, "content": []any{map[string]any{"type": "text", "text": text}},
			"created_at": "2025-01-01T00:00:00Z"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	var msgs []any
	msgs = append(msgs, msg("m0", "user", "hi", nil),
		msg("m1", "assistant", "", map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "type": "function",
			"function": map[string]any{"name": "send_message", "arguments": `{"message":"hello"}`}}}}))
	for i := 0; i < 10; i++ {
		msgs = append(msgs, msg("u"+string(rune('a'+i)), "user", "turn", nil), msg("a"+string(rune('a'+i)), "assistant", "answer", nil))
	}
	firstAgent(doc)["messages"] = msgs
	s := openStore(t)
	if _, err := letta.Import(ctx, s, marshal(t, doc), nil); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Agent("ada").Messages().List(ctx, &memory.MessageQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	batches := map[string]bool{}
	for _, m := range ms {
		batches[m.BatchID] = true
	}
	if len(batches) < 11 {
		t.Fatalf("%d messages after one unanswered call are in %d batch(es), want one per user turn (11)", len(ms), len(batches))
	}
}

// Blocks given inline (memory_blocks) belong to their agent alone: a
// file block whose id looks like an inline block's must not make another
// agent see it.
func TestInlineBlocksStayWithTheirAgent(t *testing.T) {
	ctx := context.Background()
	doc := minimalDoc()
	a := firstAgent(doc)
	a["memory_blocks"] = []any{map[string]any{"label": "secret_plan", "value": "ada's inline block", "limit": 5000}}
	doc["agents"] = append(doc["agents"].([]any), map[string]any{"id": "agent-1", "name": "eve", "system": "",
		"block_ids": []any{"agent-0/memory_blocks/0"}, "messages": []any{}})
	doc["blocks"] = append(doc["blocks"].([]any), map[string]any{"id": "agent-0/memory_blocks/0", "label": "decoy", "value": "eve's own", "limit": 5000})
	s := openStore(t)
	if _, err := letta.Import(ctx, s, marshal(t, doc), nil); err != nil {
		t.Fatal(err)
	}
	sh, err := s.Agent("eve").SharedBlocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range sh {
		if b.Owner == "ada" {
			t.Errorf("eve sees ada's inline block %q", b.Label)
		}
	}
}
