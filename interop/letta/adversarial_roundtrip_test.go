package letta_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/engram-go/engram/interop/letta"
)

// Argument text with characters encoding/json HTML-escapes (<, >, &):
// kept text is written back, and compact text comes back as written.
func TestToolCallArgumentsWithHTMLCharactersKeepTheirText(t *testing.T) {
	ctx := context.Background()
	args := []string{
		`{"q": "a<b && c>d"}`, // not compact: kept
		`{"q":"a<b && c>d"}`,  // compact
	}
	doc := minimalDoc()
	a := doc["agents"].([]any)[0].(map[string]any)
	var msgs []any
	for i, arg := range args {
		msgs = append(msgs, map[string]any{"id": fmt.Sprintf("message-%d", i), "role": "assistant", "content": []any{},
			"created_at": fmt.Sprintf("2025-01-01T00:00:%02d+00:00", i),
			"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": "send_message", "arguments": arg}}}})
	}
	a["messages"] = msgs
	s, _, id := importDoc(t, doc)
	f, _, err := letta.Export(ctx, s, []string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, m := range f.Agents[0].Messages {
		for _, tc := range m.ToolCalls {
			if tc.Function.Arguments != args[i] {
				t.Errorf("call %d: arguments exported as %q, the file wrote %q", i, tc.Function.Arguments, args[i])
			}
			i++
		}
	}
}
