package builder

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/memory"
)

// Provider conversions turn a built Request into the JSON body of a
// provider's API, with cache breakpoints where the request's layers allow:
//
//   - OpenAI Chat Completions: messages with tool_calls / tool messages,
//     function tools, and prompt_cache_key (a stable key per agent, so
//     requests that share a prefix reach the same cache).
//   - Anthropic Messages: the system prompt as text blocks cut at the end
//     of the stable prefix and at the end of memory (before the
//     per-request sections), each marked cache_control ephemeral, plus the
//     last message's last block (incremental conversation caching): at most
//     three of the four breakpoints the API allows.
//   - Gemini generateContent: systemInstruction, contents with
//     functionCall / functionResponse parts, functionDeclarations with
//     parametersJsonSchema; with GeminiOptions.CachedContent the stable
//     prefix and tools live in a cachedContents resource (GeminiCache) and
//     the rest of the system prompt leads the contents.

// volatileSection reports whether a section is per-request: it may
// change on every build.
func volatileSection(name string) bool {
	switch name {
	case SectionAttachments, SectionActivity, SectionRecalled, SectionEnvironment:
		return true
	}
	return false
}

// volatileStart is the byte offset of the system prompt's per-request
// tail: the longest run of volatile sections at its end.
func (r *Request) volatileStart() int {
	start := len(r.System)
	pos := len(r.System)
	for i := len(r.Sections) - 1; i >= 0; i-- {
		s := r.Sections[i]
		pos -= len(s.Text)
		if !volatileSection(s.Name) {
			break
		}
		start = pos
		pos -= len(sectionSeparator)
	}
	if start > 0 && start < len(r.System) {
		start -= len(sectionSeparator) // the tail starts with its separator
	}
	return start
}

// ---- OpenAI ----

// OpenAIOptions configure Request.OpenAI.
type OpenAIOptions struct {
	// Model defaults to Metadata.Model.
	Model string
	// CacheKey is sent as prompt_cache_key; "" means "engram:" + agent.
	CacheKey string
	// NoCacheKey leaves prompt_cache_key out (for servers that refuse
	// unknown fields).
	NoCacheKey bool
}

// OpenAIRequest is a Chat Completions request body.
type OpenAIRequest struct {
	Model          string          `json:"model"`
	Messages       []OpenAIMessage `json:"messages"`
	Tools          []OpenAITool    `json:"tools,omitempty"`
	PromptCacheKey string          `json:"prompt_cache_key,omitempty"`
}

// OpenAIMessage is one chat message. Content is null for an assistant
// message that only calls tools.
type OpenAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	Name       string           `json:"name,omitempty"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
}

// OpenAIToolCall is a function call of an assistant message.
type OpenAIToolCall struct {
	ID       string             `json:"id"`
	Type     string             `json:"type"`
	Function OpenAIFunctionCall `json:"function"`
}

// OpenAIFunctionCall names the function and its arguments (a JSON string).
type OpenAIFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// OpenAITool is a function tool definition.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is a function's name, description and JSON Schema.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// OpenAI converts the request to a Chat Completions body.
func (r *Request) OpenAI(o *OpenAIOptions) OpenAIRequest {
	if o == nil {
		o = &OpenAIOptions{}
	}
	out := OpenAIRequest{Model: firstNonEmpty(o.Model, r.Metadata.Model)}
	if !o.NoCacheKey {
		out.PromptCacheKey = firstNonEmpty(o.CacheKey, "engram:"+r.Metadata.Agent)
	}
	if r.System != "" {
		out.Messages = append(out.Messages, OpenAIMessage{Role: "system", Content: ptr(r.System)})
	}
	for _, m := range r.Messages {
		w := OpenAIMessage{Role: string(m.Role), Content: ptr(m.Content)}
		switch m.Role {
		case memory.RoleTool:
			w.ToolCallID = m.ToolCallID
		case memory.RoleAssistant:
			if len(m.ToolCalls) > 0 && m.Content == "" {
				w.Content = nil
			}
			for _, c := range m.ToolCalls {
				w.ToolCalls = append(w.ToolCalls, OpenAIToolCall{ID: c.ID, Type: "function",
					Function: OpenAIFunctionCall{Name: c.Name, Arguments: argsString(c.Arguments)}})
			}
			w.Name = m.Name
		default:
			w.Name = m.Name
		}
		out.Messages = append(out.Messages, w)
	}
	for _, t := range r.Tools {
		out.Tools = append(out.Tools, OpenAITool{Type: "function", Function: OpenAIFunction(t)})
	}
	return out
}

// ---- Anthropic ----

// AnthropicOptions configure Request.Anthropic.
type AnthropicOptions struct {
	// Model defaults to Metadata.Model.
	Model string
	// MaxTokens defaults to the request's ReservedResponseTokens (or 4096).
	MaxTokens int
	// NoCache leaves out every cache_control breakpoint.
	NoCache bool
}

// AnthropicRequest is a Messages API request body.
type AnthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int                `json:"max_tokens"`
	System    []AnthropicBlock   `json:"system,omitempty"`
	Messages  []AnthropicMessage `json:"messages"`
	Tools     []AnthropicTool    `json:"tools,omitempty"`
}

// AnthropicMessage is one user or assistant turn.
type AnthropicMessage struct {
	Role    string           `json:"role"`
	Content []AnthropicBlock `json:"content"`
}

// AnthropicBlock is a content block: text, tool_use or tool_result.
type AnthropicBlock struct {
	Type         string                 `json:"type"`
	Text         string                 `json:"text,omitempty"`
	ID           string                 `json:"id,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Input        json.RawMessage        `json:"input,omitempty"`
	ToolUseID    string                 `json:"tool_use_id,omitempty"`
	Content      string                 `json:"content,omitempty"`
	CacheControl *AnthropicCacheControl `json:"cache_control,omitempty"`
}

// AnthropicCacheControl marks a cache breakpoint.
type AnthropicCacheControl struct {
	Type string `json:"type"`
}

// AnthropicTool is a tool definition.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Anthropic converts the request to a Messages API body. Tool results
// become tool_result blocks of a user turn, consecutive turns of one role
// merge, and a history that would not start with a user turn gets
// PlaceholderUserMessage first.
func (r *Request) Anthropic(o *AnthropicOptions) AnthropicRequest {
	if o == nil {
		o = &AnthropicOptions{}
	}
	out := AnthropicRequest{Model: firstNonEmpty(o.Model, r.Metadata.Model), MaxTokens: o.MaxTokens}
	if out.MaxTokens <= 0 {
		out.MaxTokens = r.Metadata.Limits.ReservedResponseTokens
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = 4096
	}
	var cc *AnthropicCacheControl
	if !o.NoCache {
		cc = &AnthropicCacheControl{Type: "ephemeral"}
	}
	if r.System != "" {
		cuts := []int{r.Metadata.StablePrefixEnd, r.volatileStart(), len(r.System)}
		prev := 0
		for i, end := range cuts {
			if end <= prev || end > len(r.System) {
				continue
			}
			b := AnthropicBlock{Type: "text", Text: r.System[prev:end]}
			if i < 2 {
				b.CacheControl = cc
			}
			out.System = append(out.System, b)
			prev = end
		}
	}
	add := func(role string, b AnthropicBlock) {
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, b)
			return
		}
		out.Messages = append(out.Messages, AnthropicMessage{Role: role, Content: []AnthropicBlock{b}})
	}
	for _, m := range r.Messages {
		switch m.Role {
		case memory.RoleTool:
			add("user", AnthropicBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		case memory.RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				add("assistant", AnthropicBlock{Type: "text", Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				add("assistant", AnthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: argsObject(c.Arguments)})
			}
		default: // user, and system messages inside the history
			if strings.TrimSpace(m.Content) != "" {
				add("user", AnthropicBlock{Type: "text", Text: m.Content})
			}
		}
	}
	if len(out.Messages) == 0 || out.Messages[0].Role != "user" {
		out.Messages = append([]AnthropicMessage{{Role: "user", Content: []AnthropicBlock{{Type: "text", Text: PlaceholderUserMessage}}}}, out.Messages...)
	}
	if cc != nil {
		last := &out.Messages[len(out.Messages)-1]
		last.Content[len(last.Content)-1].CacheControl = cc
	}
	for _, t := range r.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, AnthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// ---- Gemini ----

// GeminiOptions configure Request.Gemini.
type GeminiOptions struct {
	// CachedContent names a cachedContents resource made from GeminiCache
	// ("cachedContents/…"). The request then carries no systemInstruction
	// and no tools (the API refuses them beside cached content); the part
	// of the system prompt after the stable prefix leads the contents.
	CachedContent string
}

// GeminiRequest is a generateContent request body.
type GeminiRequest struct {
	SystemInstruction *GeminiContent  `json:"systemInstruction,omitempty"`
	Contents          []GeminiContent `json:"contents"`
	Tools             []GeminiTool    `json:"tools,omitempty"`
	CachedContent     string          `json:"cachedContent,omitempty"`
}

// GeminiContent is one turn ("user" or "model") or the system instruction.
type GeminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []GeminiPart `json:"parts"`
}

// GeminiPart is text, a function call or a function response.
type GeminiPart struct {
	Text             string                  `json:"text,omitempty"`
	FunctionCall     *GeminiFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *GeminiFunctionResponse `json:"functionResponse,omitempty"`
}

// GeminiFunctionCall is a model's call of a declared function.
type GeminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// GeminiFunctionResponse answers a function call; Response is an object.
type GeminiFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// GeminiTool holds function declarations.
type GeminiTool struct {
	FunctionDeclarations []GeminiFunctionDeclaration `json:"functionDeclarations"`
}

// GeminiFunctionDeclaration declares a function; its parameters are a JSON
// Schema (parametersJsonSchema, so invopop schemas pass unchanged).
type GeminiFunctionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

// GeminiCachedContent is the body of a cachedContents create call holding
// the request's stable prefix (and tools), so later requests with the same
// Metadata.StablePrefixHash can name it in GeminiOptions.CachedContent.
type GeminiCachedContent struct {
	Model             string         `json:"model"`
	SystemInstruction *GeminiContent `json:"systemInstruction,omitempty"`
	Tools             []GeminiTool   `json:"tools,omitempty"`
	TTL               string         `json:"ttl,omitempty"`
	DisplayName       string         `json:"displayName,omitempty"`
}

// GeminiCache returns the cachedContents body for the request's stable
// prefix; ttl 0 leaves the server's default.
func (r *Request) GeminiCache(model string, ttl time.Duration) GeminiCachedContent {
	c := GeminiCachedContent{Model: "models/" + strings.TrimPrefix(firstNonEmpty(model, r.Metadata.Model), "models/"),
		Tools: r.geminiTools(), DisplayName: "engram " + r.Metadata.Agent + " " + shortPrefix(r.Metadata.StablePrefixHash)}
	if ttl > 0 {
		c.TTL = strconv.FormatFloat(ttl.Seconds(), 'f', -1, 64) + "s"
	}
	if p := r.System[:min(r.Metadata.StablePrefixEnd, len(r.System))]; p != "" {
		c.SystemInstruction = &GeminiContent{Parts: []GeminiPart{{Text: p}}}
	}
	return c
}

// Gemini converts the request to a generateContent body.
func (r *Request) Gemini(o *GeminiOptions) GeminiRequest {
	if o == nil {
		o = &GeminiOptions{}
	}
	var out GeminiRequest
	add := func(role string, p GeminiPart) {
		if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
			out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, p)
			return
		}
		out.Contents = append(out.Contents, GeminiContent{Role: role, Parts: []GeminiPart{p}})
	}
	if o.CachedContent != "" {
		out.CachedContent = o.CachedContent
		if rest := strings.TrimPrefix(r.System[min(r.Metadata.StablePrefixEnd, len(r.System)):], sectionSeparator); rest != "" {
			add("user", GeminiPart{Text: rest})
		}
	} else {
		if r.System != "" {
			out.SystemInstruction = &GeminiContent{Parts: []GeminiPart{{Text: r.System}}}
		}
		out.Tools = r.geminiTools()
	}
	names := map[string]string{} // tool call id → function name
	for _, m := range r.Messages {
		switch m.Role {
		case memory.RoleTool:
			name := firstNonEmpty(names[m.ToolCallID], m.Name)
			add("user", GeminiPart{FunctionResponse: &GeminiFunctionResponse{ID: m.ToolCallID, Name: name, Response: responseObject(m.Content)}})
		case memory.RoleAssistant:
			if strings.TrimSpace(m.Content) != "" {
				add("model", GeminiPart{Text: m.Content})
			}
			for _, c := range m.ToolCalls {
				names[c.ID] = c.Name
				add("model", GeminiPart{FunctionCall: &GeminiFunctionCall{ID: c.ID, Name: c.Name, Args: argsObject(c.Arguments)}})
			}
		default:
			if strings.TrimSpace(m.Content) != "" {
				add("user", GeminiPart{Text: m.Content})
			}
		}
	}
	if len(out.Contents) == 0 || out.Contents[0].Role != "user" {
		out.Contents = append([]GeminiContent{{Role: "user", Parts: []GeminiPart{{Text: PlaceholderUserMessage}}}}, out.Contents...)
	}
	return out
}

func (r *Request) geminiTools() []GeminiTool {
	if len(r.Tools) == 0 {
		return nil
	}
	decls := make([]GeminiFunctionDeclaration, len(r.Tools))
	for i, t := range r.Tools {
		decls[i] = GeminiFunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJSONSchema: t.Parameters}
	}
	return []GeminiTool{{FunctionDeclarations: decls}}
}

// ---- shared ----

func ptr(s string) *string { return &s }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func shortPrefix(h string) string { return h[:min(12, len(h))] }

// argsString is a tool call's arguments as the JSON string OpenAI wants.
func argsString(a json.RawMessage) string {
	if len(strings.TrimSpace(string(a))) == 0 {
		return "{}"
	}
	return string(a)
}

// argsObject is a tool call's arguments as a JSON object (Anthropic input,
// Gemini args); anything else becomes {}.
func argsObject(a json.RawMessage) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(a, &v) != nil || v == nil {
		return json.RawMessage(`{}`)
	}
	var b bytes.Buffer
	_ = json.Compact(&b, a)
	return json.RawMessage(b.Bytes())
}

// responseObject is a tool result as a Gemini response object: a JSON
// object result as it is, anything else as {"content": text}.
func responseObject(content string) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &v) == nil && v != nil {
		return argsObject(json.RawMessage(content))
	}
	js, _ := json.Marshal(map[string]string{"content": content})
	return js
}
