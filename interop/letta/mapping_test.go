package letta_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

// A real file, decoded as a generic document the tests below change: the
// parts they add (sources, secrets, rules) sit beside real agents, blocks
// and tools.
func realDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile(agentFiles(t)[0])
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if json.Unmarshal(data, &s) == nil {
		data = []byte(s)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func firstAgent(doc map[string]any) map[string]any {
	return doc["agents"].([]any)[0].(map[string]any)
}

func importDoc(t *testing.T, doc map[string]any) (*memory.Store, *letta.Report, string) {
	t.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	rep, err := letta.Import(context.Background(), s, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, rep, rep.Agents[0].Agent
}

// Each Letta rule type maps to engram's rule where one exists, and back;
// those without an engram counterpart are kept as metadata, named in the
// report, and written back as they were.
func TestToolRulesMapping(t *testing.T) {
	for _, tc := range []struct {
		rule   string // a Letta rule as JSON
		engram []toolrules.Rule
	}{
		{`{"type": "run_first", "tool_name": "a"}`, []toolrules.Rule{toolrules.StartConstraint("a")}},
		{`{"type": "exit_loop", "tool_name": "a"}`, []toolrules.Rule{toolrules.ExitLoop("a")}},
		{`{"type": "continue_loop", "tool_name": "a"}`, []toolrules.Rule{toolrules.ContinueLoop("a")}},
		{`{"type": "max_count_per_step", "tool_name": "a", "max_count_limit": 3}`, []toolrules.Rule{toolrules.MaxCalls("a", 3)}},
		{`{"type": "required_before_exit", "tool_name": "a"}`, []toolrules.Rule{toolrules.RequiredBeforeExit("a")}},
		{`{"type": "requires_approval", "tool_name": "a"}`, []toolrules.Rule{toolrules.RequiresConsent("a")}},
		{`{"type": "constrain_child_tools", "tool_name": "a", "children": ["b"]}`, []toolrules.Rule{toolrules.RequiresFollowing("a", "b")}},
		{`{"type": "parent_last_tool", "tool_name": "a", "children": ["b", "c"]}`, []toolrules.Rule{toolrules.RequiresPrior("b", "a"), toolrules.RequiresPrior("c", "a")}},
		{`{"type": "constrain_child_tools", "tool_name": "a", "children": ["b", "c"]}`, nil},
		{`{"type": "conditional", "tool_name": "a", "child_output_mapping": {"x": "b"}, "default_child": "c"}`, nil},
		{`{"type": "a_future_rule", "tool_name": "a"}`, nil},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			ctx := context.Background()
			doc := realDoc(t)
			var r map[string]any
			if err := json.Unmarshal([]byte(tc.rule), &r); err != nil {
				t.Fatal(err)
			}
			a := firstAgent(doc)
			a["tool_rules"] = []any{r}
			s, rep, id := importDoc(t, doc)
			p, err := s.Agent(id).Profile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(p.ToolRules, tc.engram, func(x, y toolrules.Rule) bool { return x.String() == y.String() }) {
				t.Fatalf("engram rules %v, want %v", p.ToolRules, tc.engram)
			}
			text := reportText(rep)
			if tc.engram == nil && !strings.Contains(text, "kept only as metadata") {
				t.Fatalf("an unmapped rule is not in the report:\n%s", text)
			}
			// Back to Letta: the same rule.
			f, _, err := letta.Export(ctx, s, []string{id}, nil)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := json.Marshal(f.Agents[0].ToolRules)
			var got []map[string]any
			_ = json.Unmarshal(out, &got)
			if len(got) != 1 {
				t.Fatalf("exported rules %s, want the one rule", out)
			}
			for k, v := range r {
				if g, _ := json.Marshal(got[0][k]); string(g) != mustJSON(v) {
					t.Errorf("exported rule %s: %s = %s, want %s", out, k, g, mustJSON(v))
				}
			}
		})
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Sources and their files become archival entries of the agents that
// list the sources, a long file in chunks, tagged and with their origin in
// the metadata; which files were open is reported as not kept.
func TestFilesAndSourcesBecomeArchival(t *testing.T) {
	ctx := context.Background()
	doc := realDoc(t)
	// The files hold the real file's block values: real text.
	var long strings.Builder
	for long.Len() < 9000 {
		for _, b := range doc["blocks"].([]any) {
			long.WriteString(b.(map[string]any)["value"].(string))
			long.WriteString("\n\n")
		}
	}
	doc["sources"] = []any{map[string]any{"id": "source-0", "name": "handbook", "description": "The team handbook.", "instructions": nil}}
	doc["files"] = []any{
		map[string]any{"id": "file-0", "source_id": "source-0", "file_name": "long.md", "file_path": "handbook/long.md", "file_type": "text/markdown", "content": long.String()},
		map[string]any{"id": "file-1", "source_id": "source-0", "file_name": "empty.pdf", "content": nil},
	}
	a := firstAgent(doc)
	a["source_ids"] = []any{"source-0"}
	a["files_agents"] = []any{map[string]any{"id": "file_agent-0", "agent_id": a["id"], "file_id": "file-0", "source_id": "source-0", "file_name": "long.md", "is_open": true}}
	s, rep, id := importDoc(t, doc)
	entries, err := s.Agent(id).Archival().List(ctx, &memory.ArchivalQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var fileText strings.Builder
	chunks, sources := 0, 0
	for i := len(entries) - 1; i >= 0; i-- { // oldest first
		e := entries[i]
		if e.Metadata["origin"] != "letta" || !slices.Contains(e.Tags, "letta") {
			t.Fatalf("entry without its origin: %+v", e)
		}
		switch e.Metadata["letta_kind"] {
		case "file":
			chunks++
			fileText.WriteString(e.Content)
			if e.Metadata["file_name"] != "long.md" || e.Metadata["source"] != "handbook" || !slices.Contains(e.Tags, "letta-file") {
				t.Fatalf("file entry: %+v", e)
			}
			if n := len([]rune(e.Content)); n > 4000 {
				t.Fatalf("a chunk of %d characters", n)
			}
		case "source":
			sources++
			if !strings.Contains(e.Content, "The team handbook.") {
				t.Fatalf("source entry: %q", e.Content)
			}
		}
	}
	if chunks < 3 || fileText.String() != long.String() || sources != 1 {
		t.Fatalf("%d chunks (text equal: %v), %d source entries", chunks, fileText.String() == long.String(), sources)
	}
	text := reportText(rep)
	for _, want := range []string{`file "empty.pdf"`, "files_agents"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report does not name %s:\n%s", want, text)
		}
	}
	// The export names the entries it cannot write.
	_, erep, err := letta.Export(ctx, s, []string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reportText(erep), "archival entries") {
		t.Errorf("the export report does not name the archival entries:\n%s", reportText(erep))
	}
}

// Secrets and tool environment variables are never stored nor exported;
// the report names their keys, never their values.
func TestSecretsNeverStoredOrExported(t *testing.T) {
	ctx := context.Background()
	doc := realDoc(t)
	a := firstAgent(doc)
	a["secrets"] = map[string]any{"EXA_API_KEY": "sk-secret-value-1"}
	a["tool_exec_environment_variables"] = map[string]any{"OPENAI_API_KEY": "sk-secret-value-2"}
	s, rep, id := importDoc(t, doc)
	text := reportText(rep)
	if !strings.Contains(text, "EXA_API_KEY") || !strings.Contains(text, "OPENAI_API_KEY") || strings.Contains(text, "sk-secret") {
		t.Fatalf("report:\n%s", text)
	}
	d, err := s.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dump, _ := json.Marshal(d)
	f, _, err := letta.Export(ctx, s, []string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	af, _ := json.Marshal(f)
	for _, b := range [][]byte{dump, af} {
		if strings.Contains(string(b), "sk-secret") {
			t.Fatal("a secret value was stored or exported")
		}
	}
}

// Messages Letta kept outside the context window are in the history,
// covered by a summary, and written back outside the window.
func TestOutOfContextMessages(t *testing.T) {
	ctx := context.Background()
	doc := realDoc(t)
	a := firstAgent(doc)
	msgs, _ := a["messages"].([]any)
	inCtx := strs(a["in_context_message_ids"])
	// Two earlier exchanges, evicted from the context window: real text
	// from the file's blocks.
	var blocks []string
	for _, b := range doc["blocks"].([]any) {
		blocks = append(blocks, b.(map[string]any)["value"].(string))
	}
	var early []any
	for i, role := range []string{"user", "assistant"} {
		early = append(early, map[string]any{"id": "early-" + role, "role": role, "content": []any{map[string]any{"type": "text", "text": blocks[i%len(blocks)]}},
			"created_at": "2025-01-01T00:00:0" + string(rune('0'+i)) + "+00:00"})
	}
	rest := append([]any{}, msgs...)
	a["messages"] = append(append(rest[:1:1], early...), rest[1:]...)
	a["in_context_message_ids"] = inCtx
	s, rep, id := importDoc(t, doc)
	if rep.Agents[0].OutOfContext != 2 {
		t.Fatalf("%d messages out of context, want 2:\n%s", rep.Agents[0].OutOfContext, reportText(rep))
	}
	sum, err := s.Agent(id).Messages().LatestSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := s.Agent(id).Messages().List(ctx, nil)
	if sum.FirstMessageID != all[0].ID || sum.LastMessageID != all[1].ID {
		t.Fatalf("summary covers %d..%d, want the first two messages %d..%d", sum.FirstMessageID, sum.LastMessageID, all[0].ID, all[1].ID)
	}
	f, _, err := letta.Export(ctx, s, []string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ea := f.Agents[0]
	if len(ea.Messages) != len(ea.InContextMessageIDs)+2 {
		t.Fatalf("exported %d messages, %d in context: want 2 outside", len(ea.Messages), len(ea.InContextMessageIDs))
	}
}

// Parse tells agent files from other JSON, and reads a document held in a
// JSON string.
func TestParseRecognisesAgentFiles(t *testing.T) {
	for _, path := range agentFiles(t) {
		data, _ := os.ReadFile(path)
		if !letta.IsAgentFile(data) {
			t.Errorf("%s is not recognised", path)
		}
		var inner string
		if json.Unmarshal(data, &inner) == nil {
			continue // already a document held in a string
		}
		wrapped, _ := json.Marshal(string(data))
		if !letta.IsAgentFile(wrapped) {
			t.Errorf("%s held in a JSON string is not recognised", path)
		}
	}
	for _, in := range []string{``, `[]`, `{}`, `{"version": 3, "blocks": []}`, `"{\"agents\": 1}"`, `{"agents": {}, "blocks": []}`, `{"agents": []}`, "\x00"} {
		if letta.IsAgentFile([]byte(in)) {
			t.Errorf("%q recognised as an agent file", in)
		}
		if _, err := letta.Parse([]byte(in)); !errors.Is(err, letta.ErrNotAgentFile) {
			t.Errorf("Parse(%q): %v, want ErrNotAgentFile", in, err)
		}
	}
}

// in_context_message_ids is Letta's context window. engram's context is
// the messages after a summary, so the import covers the prefix that
// agrees best with Letta's window: messages outside it after the first one
// inside are covered too when more of them follow than messages in
// context would be covered (each disagreement reported), and a stray one
// at the end does not cover the window.
func TestContextWindowCut(t *testing.T) {
	ctx := context.Background()
	msg := func(id, role string, sec int) map[string]any {
		return map[string]any{"id": id, "role": role, "content": []any{map[string]any{"type": "text", "text": "text of " + id}},
			"created_at": fmt.Sprintf("2025-01-01T00:00:%02d+00:00", sec)}
	}
	for _, tc := range []struct {
		name    string
		roles   []string // messages m1.. after the compiled prompt
		inCtx   []int    // which of them are in context
		covered int      // the summary covers m1..m<covered> (0: no summary)
		out     int      // OutOfContext in the report
	}{
		{"evicted prefix", []string{"user", "assistant", "user", "assistant"}, []int{3, 4}, 2, 2},
		{"evicted after the first in context", []string{"user", "assistant", "user", "assistant", "user", "assistant"}, []int{2, 6}, 5, 5},
		{"stray message at the end", []string{"user", "assistant", "user", "assistant"}, []int{1, 2, 3}, 0, 0},
		{"all in context", []string{"user", "assistant"}, []int{1, 2}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := minimalDoc()
			a := doc["agents"].([]any)[0].(map[string]any)
			msgs := []any{msg("message-0", "system", 0)}
			ids := []any{"message-0"}
			for i, role := range tc.roles {
				msgs = append(msgs, msg(fmt.Sprintf("message-%d", i+1), role, i+1))
			}
			for _, n := range tc.inCtx {
				ids = append(ids, fmt.Sprintf("message-%d", n))
			}
			a["messages"], a["in_context_message_ids"] = msgs, ids
			s, rep, id := importDoc(t, doc)
			if got := rep.Agents[0].OutOfContext; got != tc.out {
				t.Errorf("%d messages out of context, want %d:\n%s", got, tc.out, reportText(rep))
			}
			all, err := s.Agent(id).Messages().List(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := s.Agent(id).Messages().LatestSummary(ctx)
			switch {
			case tc.covered == 0 && err == nil:
				t.Fatalf("summary covers %d..%d, want none", sum.FirstMessageID, sum.LastMessageID)
			case tc.covered == 0:
			case err != nil:
				t.Fatalf("no summary, want one covering m1..m%d: %v", tc.covered, err)
			case sum.FirstMessageID != all[0].ID || sum.LastMessageID != all[tc.covered-1].ID:
				t.Fatalf("summary covers %d..%d, want %d..%d", sum.FirstMessageID, sum.LastMessageID, all[0].ID, all[tc.covered-1].ID)
			}
		})
	}
}

// A tool call's arguments come back as the file wrote them (spacing, key
// order, escapes), while engram holds them as JSON; arguments changed in
// engram since are written as engram holds them.
func TestToolCallArgumentsKeepTheirText(t *testing.T) {
	ctx := context.Background()
	args := []string{
		`{"message": "I'm here", "b": 1}`,
		"{\n  \"q\": \"caf\\u00e9\"\n}",
		`{"a":1}`,
		`not json`,
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
	var got []string
	for _, m := range f.Agents[0].Messages {
		for _, tc := range m.ToolCalls {
			got = append(got, tc.Function.Arguments)
		}
	}
	if !slices.Equal(got, args) {
		t.Fatalf("arguments exported as\n%q\nwant\n%q", got, args)
	}
}

// The kept argument texts are capped per agent: past the cap, calls are
// written back compact, and the report says so.
func TestKeptArgumentTextIsCapped(t *testing.T) {
	ctx := context.Background()
	doc := minimalDoc()
	a := doc["agents"].([]any)[0].(map[string]any)
	arg := `{"text": "` + strings.Repeat("x", 1000) + `"}` // not compact: kept
	n := letta.MaxKeptArgumentBytes/len(arg) + 10
	var msgs []any
	for i := 0; i < n; i++ {
		msgs = append(msgs, map[string]any{"id": fmt.Sprintf("message-%d", i), "role": "assistant", "content": []any{},
			"created_at": "2025-01-01T00:00:00+00:00",
			"tool_calls": []any{map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": "send_message", "arguments": arg}}}})
	}
	a["messages"] = msgs
	s, rep, id := importDoc(t, doc)
	if !strings.Contains(reportText(rep), "tool-call arguments' formatting") {
		t.Errorf("the report does not name the arguments past the cap:\n%s", reportText(rep))
	}
	p, err := s.Agent(id).Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ext := len(p.Extensions[letta.ExtensionName]); ext > letta.MaxKeptArgumentBytes+64<<10 {
		t.Errorf("extension of %d bytes, over the cap of %d", ext, letta.MaxKeptArgumentBytes)
	}
	f, _, err := letta.Export(ctx, s, []string{id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kept, compact := 0, 0
	for _, m := range f.Agents[0].Messages {
		for _, tc := range m.ToolCalls {
			if tc.Function.Arguments == arg {
				kept++
			} else if json.Valid([]byte(tc.Function.Arguments)) {
				compact++
			}
		}
	}
	if kept == 0 || compact == 0 || kept+compact != n {
		t.Errorf("%d calls written as the file wrote them, %d compact, of %d", kept, compact, n)
	}
}
