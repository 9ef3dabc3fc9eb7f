// Command agentloop is a minimal agent loop on engram: each turn it builds
// the request from memory (builder) with recalled archival memories, the
// turn's attached file and the context library of earlier turns, converts
// it with builder's OpenAI conversion, sends it to an OpenAI-compatible
// chat endpoint, runs the tool calls the model makes through the memory
// tools as the agent (permissions, limits and tool rules apply), stores
// every message in the turn's batch, ends when the model calls
// send_message and promotes the turn's file into the library.
//
// Point it at a real model with ENGRAM_LLM_BASE_URL (e.g.
// http://localhost:11434/v1 for Ollama), ENGRAM_LLM_MODEL and
// ENGRAM_LLM_API_KEY (or OPENAI_API_KEY). Without them it runs against an
// in-process fake model, so it works offline.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
	"github.com/engram-go/engram/tools"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "agentloop:", err)
		os.Exit(1)
	}
}

const agent = "sage"

// sendMessage is the loop's own tool: the model's reply to the user.
var sendMessage = builder.Tool{Name: "send_message", Description: "Send your reply to the user. Ends the turn.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The reply."}},"required":["message"],"additionalProperties":false}`)}

// hives is the file the user attaches to both turns: in full the first
// time, as a reference to the context library the second.
var hives = builder.Artifact{ID: "notes/hives.md", Kind: "file", Recoverable: true,
	Content: "# Hives\n\n- Hive A: strong colony, 8 frames of brood.\n- Hive B: requeened in May."}

func run(ctx context.Context, out io.Writer) error {
	base, model, key := os.Getenv("ENGRAM_LLM_BASE_URL"), os.Getenv("ENGRAM_LLM_MODEL"), firstNonEmpty(os.Getenv("ENGRAM_LLM_API_KEY"), os.Getenv("OPENAI_API_KEY"))
	if base == "" {
		fake := httptest.NewServer(http.HandlerFunc(fakeModel))
		defer fake.Close()
		base, model = fake.URL, "fake-model"
		fmt.Fprintln(out, "(no ENGRAM_LLM_BASE_URL: using an in-process fake model)")
	}
	if model == "" {
		model = "gpt-4o-mini"
	}
	dir, err := os.MkdirTemp("", "engram-agentloop-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	store, err := memory.Open(ctx, filepath.Join(dir, "memory.db"), nil)
	if err != nil {
		return err
	}
	defer store.Close()
	sage := store.Agent(agent)
	for _, s := range []memory.BlockSpec{
		{Label: "persona", Type: blocks.Core, Permission: blocks.ReadOnly, Value: "I am Sage, a helpful assistant with long-term memory."},
		{Label: "human", Type: blocks.Core, Description: "Facts about the user. Keep it current.", Value: ""},
	} {
		if _, err := sage.CreateBlock(ctx, s); err != nil {
			return err
		}
	}
	// An archival memory from an earlier conversation: recalled when a
	// message is about it.
	if _, err := sage.Archival().Insert(ctx, memory.ArchivalEntry{Content: "Robin's bees swarmed last June; Robin wants to prevent another swarm.", Tags: []string{"robin", "bees"}}); err != nil {
		return err
	}
	rules := []toolrules.Rule{toolrules.ExitLoop("send_message"), toolrules.MaxCalls("archival_insert", 2)}
	cfg := builder.DefaultConfig()
	cfg.TokenCounts = store // token counts persist across runs
	cfg.Recall = &builder.RecallOptions{Limit: 4}
	cfg.Library = &builder.LibraryOptions{}
	client := &http.Client{Timeout: 60 * time.Second}
	for turn, userText := range []string{"Hi! I'm Robin and I keep bees.", "What do you remember about me and my bees?"} {
		batch := fmt.Sprintf("turn-%d", turn+1)
		fmt.Fprintf(out, "\nuser: %s\n", userText)
		if _, err := sage.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: batch, Content: userText}); err != nil {
			return err
		}
		engine, err := toolrules.NewEngine(rules, nil)
		if err != nil {
			return err
		}
		ts, err := tools.New(store.Agent(agent), &tools.Options{Rules: engine})
		if err != nil {
			return err
		}
		reply, last, err := runTurn(ctx, out, client, base, model, key, store, cfg, ts, engine, rules, batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "sage: %s\n", reply)
		fmt.Fprintf(out, "  (%s)\n", describeContext(last.Metadata))
		// The turn is done: its file joins the context library.
		if err := builder.New(store.Agent(agent), cfg).Promote(ctx, last); err != nil {
			return err
		}
		if err := sage.Messages().CompleteBatch(ctx, batch); err != nil {
			return err
		}
	}
	human, _ := sage.Block("human").Render(ctx)
	fmt.Fprintf(out, "\nblock human after the conversation:\n%s\n", human)
	return nil
}

// runTurn loops model call → tool calls until send_message (at most 8
// steps). It returns the reply and the last request built.
func runTurn(ctx context.Context, out io.Writer, client *http.Client, base, model, key string, store *memory.Store,
	cfg builder.ContextConfig, ts *tools.Toolset, engine *toolrules.Engine, rules []toolrules.Rule, batch string) (string, *builder.Request, error) {
	defs := builder.ToolList{sendMessage}
	for _, t := range ts.Allowed() {
		bt, err := builder.NewTool(t.Name, t.Description, t.Parameters)
		if err != nil {
			return "", nil, err
		}
		defs = append(defs, bt)
	}
	b := builder.New(store.Agent(agent), cfg).WithMessages(store.Agent(agent).Messages()).WithTools(defs).
		WithBaseInstructions("You are Sage. Use your memory tools to remember what matters, then call send_message.").
		WithToolRules(rules...).WithModelInfo(builder.ModelInfoFor(model)).WithActiveBatch(batch).
		WithEnvironment(builder.Environment{OS: runtime.GOOS + "/" + runtime.GOARCH}).
		WithTurnContext(hives)
	for step := 0; step < 8; step++ {
		req, err := b.Build(ctx)
		if err != nil {
			return "", nil, err
		}
		msg, err := chat(ctx, client, base, key, req.OpenAI(&builder.OpenAIOptions{Model: model}))
		if err != nil {
			return "", nil, err
		}
		calls := make([]memory.ToolCall, 0, len(msg.ToolCalls))
		for _, c := range msg.ToolCalls {
			calls = append(calls, memory.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
		content := ""
		if msg.Content != nil {
			content = *msg.Content
		}
		if _, err := store.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: batch, Content: content, ToolCalls: calls}); err != nil {
			return "", nil, err
		}
		if len(calls) == 0 {
			return content, req, nil // a model that answers in plain text
		}
		for _, c := range calls {
			var result string
			if c.Name == "send_message" {
				call := toolrules.Call{Agent: agent, Tool: c.Name, Arguments: c.Arguments}
				if err := engine.Call(ctx, call); err != nil {
					result = "Error: " + err.Error()
				} else {
					var a struct{ Message string }
					json.Unmarshal(c.Arguments, &a)
					result = a.Message
				}
			} else {
				res, err := ts.Call(ctx, c.Name, c.Arguments)
				if err != nil {
					return "", nil, err
				}
				result = res.Content
			}
			fmt.Fprintf(out, "  tool %s(%s) → %s\n", c.Name, c.Arguments, oneLine(result))
			if _, err := store.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleTool, BatchID: batch, ToolCallID: c.ID, Name: c.Name, Content: result}); err != nil {
				return "", nil, err
			}
			if c.Name == "send_message" && engine.Ends(toolrules.Call{Tool: c.Name}) && !strings.HasPrefix(result, "Error:") {
				return result, req, nil
			}
		}
	}
	return "", nil, errors.New("turn did not end within 8 steps")
}

// describeContext says what the last request of a turn held.
func describeContext(md builder.Metadata) string {
	var recalled, library, turn []string
	for _, r := range md.Recalled {
		recalled = append(recalled, fmt.Sprintf("#%d", r.ID))
	}
	for _, a := range md.Library {
		library = append(library, a.ID+" "+a.Form)
	}
	for _, a := range md.Turn {
		turn = append(turn, a.ID+" "+a.Form)
	}
	return fmt.Sprintf("context: %d tokens; recalled memories %v; library %v; this turn %v", md.Tokens.Total, recalled, library, turn)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// ---- OpenAI-compatible chat endpoint ----

type chatResponse struct {
	Choices []struct {
		Message builder.OpenAIMessage `json:"message"`
	} `json:"choices"`
}

func chat(ctx context.Context, client *http.Client, base, key string, body builder.OpenAIRequest) (builder.OpenAIMessage, error) {
	js, _ := json.Marshal(body)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/chat/completions", bytes.NewReader(js))
	if err != nil {
		return builder.OpenAIMessage{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return builder.OpenAIMessage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return builder.OpenAIMessage{}, fmt.Errorf("chat completions: HTTP %d", resp.StatusCode)
	}
	var cr chatResponse
	if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil || len(cr.Choices) == 0 {
		return builder.OpenAIMessage{}, fmt.Errorf("chat completions: bad response: %v", err)
	}
	return cr.Choices[0].Message, nil
}

// fakeModel plays a scripted model: it reads the last user message and the
// tool results so far in the turn, and calls tools like a real model would.
func fakeModel(w http.ResponseWriter, r *http.Request) {
	var req builder.OpenAIRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Tool results since the last user message, named through the calls.
	var user string
	var done []string
	names := map[string]string{}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		switch m.Role {
		case "user":
			user, done = *m.Content, nil
		case "tool":
			done = append(done, names[m.ToolCallID])
		}
	}
	has := func(name string) bool {
		for _, d := range done {
			if d == name {
				return true
			}
		}
		return false
	}
	system := *req.Messages[0].Content
	call := func(name, args string) builder.OpenAIMessage {
		return builder.OpenAIMessage{Role: "assistant", ToolCalls: []builder.OpenAIToolCall{{ID: fmt.Sprintf("call_%s_%d", name, len(done)),
			Type: "function", Function: builder.OpenAIFunctionCall{Name: name, Arguments: args}}}}
	}
	var msg builder.OpenAIMessage
	switch {
	case strings.Contains(user, "I'm Robin") && !has("block_append"):
		msg = call("block_append", `{"label":"human","text":"Name: Robin. Keeps bees."}`)
	case strings.Contains(user, "I'm Robin") && !has("archival_insert"):
		msg = call("archival_insert", `{"content":"Robin keeps bees (mentioned in the first conversation).","tags":["robin","hobbies"]}`)
	case strings.Contains(user, "I'm Robin"):
		msg = call("send_message", `{"message":"Nice to meet you, Robin! I'll remember your bees."}`)
	case !has("archival_search"):
		msg = call("archival_search", `{"query":"Robin hobbies"}`)
	default:
		// Answer from the memory blocks, the recalled memories and the
		// context library in the system prompt.
		var facts []string
		for _, marker := range []string{"Name: Robin", "swarmed", "Hive A"} {
			if i := strings.Index(system, marker); i >= 0 {
				facts = append(facts, strings.SplitN(system[i:], "\n", 2)[0])
			}
		}
		fact := "nothing yet"
		if len(facts) > 0 {
			fact = strings.Join(facts, " / ")
		}
		msg = call("send_message", fmt.Sprintf(`{"message":%q}`, "From my memory: "+fact))
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": msg, "finish_reason": "tool_calls"}}})
}
