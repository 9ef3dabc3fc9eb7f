// Command agentloop is a minimal agent loop on engram: each turn it builds
// the request from memory (builder), sends it to an OpenAI-compatible chat
// endpoint, runs the tool calls the model makes through the memory tools as
// the agent (permissions, limits and tool rules apply), stores every
// message in the turn's batch and ends when the model calls send_message.
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
var sendMessage = json.RawMessage(`{"type":"function","function":{"name":"send_message","description":"Send your reply to the user. Ends the turn.","parameters":{"type":"object","properties":{"message":{"type":"string","description":"The reply."}},"required":["message"],"additionalProperties":false}}}`)

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
	for _, s := range []memory.BlockSpec{
		{Label: "persona", Type: blocks.Core, Permission: blocks.ReadOnly, Value: "I am Sage, a helpful assistant with long-term memory."},
		{Label: "human", Type: blocks.Core, Description: "Facts about the user. Keep it current.", Value: ""},
	} {
		if _, err := store.CreateBlock(ctx, agent, s); err != nil {
			return err
		}
	}
	rules := []toolrules.Rule{toolrules.ExitLoop("send_message"), toolrules.MaxCalls("archival_insert", 2)}
	cfg := builder.DefaultConfig()
	client := &http.Client{Timeout: 60 * time.Second}
	for turn, userText := range []string{"Hi! I'm Robin and I keep bees.", "What do you remember about me?"} {
		batch := fmt.Sprintf("turn-%d", turn+1)
		fmt.Fprintf(out, "\nuser: %s\n", userText)
		if _, err := store.AppendMessage(ctx, agent, memory.Message{Role: memory.RoleUser, BatchID: batch, Content: userText}); err != nil {
			return err
		}
		engine, err := toolrules.NewEngine(rules, nil)
		if err != nil {
			return err
		}
		ts, err := tools.New(store, agent, &tools.Options{Rules: engine})
		if err != nil {
			return err
		}
		reply, err := runTurn(ctx, out, client, base, model, key, store, cfg, ts, engine, rules, batch)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "sage: %s\n", reply)
		if err := store.CompleteBatch(ctx, agent, batch); err != nil {
			return err
		}
	}
	human, _ := store.RenderedContent(ctx, agent, "human")
	fmt.Fprintf(out, "\nblock human after the conversation:\n%s\n", human)
	return nil
}

// runTurn loops model call → tool calls until send_message (at most 8 steps).
func runTurn(ctx context.Context, out io.Writer, client *http.Client, base, model, key string, store *memory.Cache,
	cfg builder.ContextConfig, ts *tools.Toolset, engine *toolrules.Engine, rules []toolrules.Rule, batch string) (string, error) {
	var defs []json.RawMessage
	for _, t := range ts.Allowed() {
		defs = append(defs, t.Definition())
	}
	defs = append(defs, sendMessage)
	for step := 0; step < 8; step++ {
		req, err := builder.New(store, cfg).ForAgent(agent).WithMessages(store).
			WithBaseInstructions("You are Sage. Use your memory tools to remember what matters, then call send_message.").
			WithToolRules(rules...).WithModelInfo(builder.ModelInfoFor(model)).WithActiveBatch(batch).Build(ctx)
		if err != nil {
			return "", err
		}
		msg, err := chat(ctx, client, base, model, key, req, defs)
		if err != nil {
			return "", err
		}
		calls := make([]memory.ToolCall, 0, len(msg.ToolCalls))
		for _, c := range msg.ToolCalls {
			calls = append(calls, memory.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: json.RawMessage(c.Function.Arguments)})
		}
		if _, err := store.AppendMessage(ctx, agent, memory.Message{Role: memory.RoleAssistant, BatchID: batch, Content: msg.Content, ToolCalls: calls}); err != nil {
			return "", err
		}
		if len(calls) == 0 {
			return msg.Content, nil // a model that answers in plain text
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
					return "", err
				}
				result = res.Content
			}
			fmt.Fprintf(out, "  tool %s(%s) → %s\n", c.Name, c.Arguments, oneLine(result))
			if _, err := store.AppendMessage(ctx, agent, memory.Message{Role: memory.RoleTool, BatchID: batch, ToolCallID: c.ID, Name: c.Name, Content: result}); err != nil {
				return "", err
			}
			if c.Name == "send_message" && engine.Ends(toolrules.Call{Tool: c.Name}) && !strings.HasPrefix(result, "Error:") {
				return result, nil
			}
		}
	}
	return "", errors.New("turn did not end within 8 steps")
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

// ---- OpenAI-compatible chat wire format ----

type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []wireCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type chatRequest struct {
	Model    string            `json:"model"`
	Messages []wireMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message wireMessage `json:"message"`
	} `json:"choices"`
}

func toWire(req *builder.Request) []wireMessage {
	var out []wireMessage
	if req.System != "" {
		out = append(out, wireMessage{Role: "system", Content: req.System})
	}
	for _, m := range req.Messages {
		w := wireMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		if m.Role == memory.RoleTool {
			w.Name = m.Name
		}
		for _, c := range m.ToolCalls {
			wc := wireCall{ID: c.ID, Type: "function"}
			wc.Function.Name, wc.Function.Arguments = c.Name, string(c.Arguments)
			w.ToolCalls = append(w.ToolCalls, wc)
		}
		out = append(out, w)
	}
	return out
}

func chat(ctx context.Context, client *http.Client, base, model, key string, req *builder.Request, tools []json.RawMessage) (wireMessage, error) {
	body, _ := json.Marshal(chatRequest{Model: model, Messages: toWire(req), Tools: tools})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return wireMessage{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if key != "" {
		hr.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(hr)
	if err != nil {
		return wireMessage{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return wireMessage{}, fmt.Errorf("chat completions: HTTP %d", resp.StatusCode)
	}
	var cr chatResponse
	if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil || len(cr.Choices) == 0 {
		return wireMessage{}, fmt.Errorf("chat completions: bad response: %v", err)
	}
	return cr.Choices[0].Message, nil
}

// fakeModel plays a scripted model: it reads the last user message and the
// tool results so far in the turn, and calls tools like a real model would.
func fakeModel(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// Tool results since the last user message.
	var user string
	var done []string
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			user, done = m.Content, nil
		case "tool":
			done = append(done, m.Name)
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
	system := req.Messages[0].Content
	call := func(name, args string) wireMessage {
		c := wireCall{ID: fmt.Sprintf("call_%s_%d", name, len(done)), Type: "function"}
		c.Function.Name, c.Function.Arguments = name, args
		return wireMessage{Role: "assistant", ToolCalls: []wireCall{c}}
	}
	var msg wireMessage
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
		// Answer from what is in the system prompt's memory blocks.
		fact := "nothing yet"
		if i := strings.Index(system, "Name: Robin"); i >= 0 {
			fact = strings.SplitN(system[i:], "\n", 2)[0]
		}
		msg = call("send_message", fmt.Sprintf(`{"message":"From my memory: %s"}`, fact))
	}
	json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": msg, "finish_reason": "tool_calls"}}})
}
