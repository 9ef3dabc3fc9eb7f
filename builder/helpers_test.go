package builder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
)

// fixedClock ticks one second per call from a fixed instant.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func openStore(t testing.TB) *memory.Store {
	t.Helper()
	st, err := memory.Open(context.Background(), ":memory:", &memory.Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// openFile opens a store on a database file, as one process would; call
// it again for another process on the same file.
func openFile(t testing.TB, path string) *memory.Store {
	t.Helper()
	c, err := memory.Open(context.Background(), path, &memory.Options{Now: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func mustBlock(t testing.TB, st *memory.Store, agent string, spec memory.BlockSpec) {
	t.Helper()
	if _, err := st.Agent(agent).CreateBlock(context.Background(), spec); err != nil {
		t.Fatalf("create %s/%s: %v", agent, spec.Label, err)
	}
}

func mustMsg(t testing.TB, st *memory.Store, agent string, m memory.Message) memory.Message {
	t.Helper()
	m, err := st.Agent(agent).Messages().Append(context.Background(), m)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return m
}

func complete(t testing.TB, st *memory.Store, agent, batch string) {
	t.Helper()
	if err := st.Agent(agent).Messages().CompleteBatch(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
}

// exchange stores a complete batch: a user message and an answer.
func exchange(t testing.TB, st *memory.Store, agent, batch, question, answer string) {
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleUser, BatchID: batch, Content: question})
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleAssistant, BatchID: batch, Content: answer})
	complete(t, st, agent, batch)
}

// toolExchange stores a complete batch with a tool call and its result.
func toolExchange(t testing.TB, st *memory.Store, agent, batch, question, tool, result, answer string) {
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleUser, BatchID: batch, Content: question})
	id := "call_" + batch
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleAssistant, BatchID: batch,
		ToolCalls: []memory.ToolCall{{ID: id, Name: tool, Arguments: json.RawMessage(`{"query":"` + question + `"}`)}}})
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleTool, BatchID: batch, Name: tool, ToolCallID: id, Content: result})
	mustMsg(t, st, agent, memory.Message{Role: memory.RoleAssistant, BatchID: batch, Content: answer})
	complete(t, st, agent, batch)
}

// stableMetadata drops what depends on the clock and on earlier builds
// (timings, the comparison with the previous build).
func stableMetadata(md builder.Metadata) builder.Metadata {
	md.Timings = builder.Timings{}
	md.PrefixChange = nil
	return md
}

// dump renders a request for golden files.
func dump(req *builder.Request) string {
	var b strings.Builder
	b.WriteString("=== system ===\n")
	b.WriteString(req.System)
	b.WriteString("\n=== messages ===\n")
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "[%d] %s", m.ID, m.Role)
		if m.Name != "" {
			fmt.Fprintf(&b, " name=%s", m.Name)
		}
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " tool_call_id=%s", m.ToolCallID)
		}
		if m.BatchID != "" {
			fmt.Fprintf(&b, " batch=%s", m.BatchID)
		}
		b.WriteString(":")
		if m.Content != "" {
			b.WriteString(" " + m.Content)
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, " <call %s %s %s>", tc.ID, tc.Name, tc.Arguments)
		}
		b.WriteString("\n")
	}
	b.WriteString("=== tools ===\n")
	for _, t := range req.Tools {
		fmt.Fprintf(&b, "%s: %s %s\n", t.Name, t.Description, t.Parameters)
	}
	b.WriteString("=== sections ===\n")
	for _, s := range req.Sections {
		fmt.Fprintf(&b, "%s tokens=%d stable=%v bytes=%d\n", s.Name, s.Tokens, s.Stable, len(s.Text))
	}
	b.WriteString("=== metadata ===\n")
	js, _ := json.MarshalIndent(stableMetadata(req.Metadata), "", "  ")
	b.Write(js)
	b.WriteString("\n")
	return b.String()
}

// seedEntropy sets up the "entropy" agent used by several tests: two Core
// blocks, a pinned and two unpinned Working blocks, a block shared by
// "archive", and a history with a tool exchange and an active batch.
func seedEntropy(t testing.TB, st *memory.Store) {
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "persona", Description: "Who you are.", Type: blocks.Core,
		Value: "You are Entropy. You break big tasks into small, checkable steps."})
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "human", Description: "What you know about the user.", Type: blocks.Core,
		Value: "Name: Sam. Prefers short answers."})
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "plan", Description: "The current plan.", Type: blocks.Working, Pinned: true, Priority: 2,
		Value: "1. Collect requirements\n2. Draft the outline"})
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "scratch", Description: "Scratch space.", Type: blocks.Working,
		Value: "unpinned, not named: stays out"})
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "ticket-42", Description: "The ticket this event is about.", Type: blocks.Working, Priority: 7,
		Value: "Ticket 42: the export button does nothing."})
	mustBlock(t, st, "archive", memory.BlockSpec{Label: "shared_notes", Description: "Notes the archivist keeps.", Type: blocks.Core,
		Permission: blocks.Admin, Value: "Project codename: Tidepool."})
	if err := st.Agent("archive").Block("shared_notes").Share(context.Background(), "entropy", blocks.Append); err != nil {
		t.Fatal(err)
	}
	exchange(t, st, "entropy", "b1", "Hi, I need help planning a release.", "Sure. What is in the release?")
	toolExchange(t, st, "entropy", "b2", "Look up ticket 42.", "search_tickets", "Ticket 42: export button broken.", "Ticket 42 is about the export button.")
	mustMsg(t, st, "entropy", memory.Message{Role: memory.RoleUser, BatchID: "b3", Content: "Break the fix for ticket 42 into steps."})
}
