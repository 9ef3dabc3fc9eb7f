package letta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// File is a Letta agent file (AgentFileSchema, schema v2): the agents, the
// groups they form, and the blocks, files, sources, tools, MCP servers and
// skills they refer to by their ids within the file.
type File struct {
	Agents     []Agent           `json:"agents"`
	Groups     []Group           `json:"groups"`
	Blocks     []Block           `json:"blocks"`
	Files      []FileEntry       `json:"files"`
	Sources    []Source          `json:"sources"`
	Tools      []Tool            `json:"tools"`
	MCPServers []json.RawMessage `json:"mcp_servers"`
	// Skills is present in newer files; nil when the file has no key.
	Skills    []json.RawMessage `json:"skills,omitempty"`
	Metadata  map[string]any    `json:"metadata"`
	CreatedAt *string           `json:"created_at,omitempty"`
}

// Agent is one agent of a file. The fields engram maps are typed; Extra
// holds every other field of the agent's JSON object, verbatim (its
// provider configuration, type, description, tags, ...).
type Agent struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name"`
	System               string            `json:"system"`
	BlockIDs             []string          `json:"block_ids"`
	ToolIDs              []string          `json:"tool_ids"`
	SourceIDs            []string          `json:"source_ids"`
	FolderIDs            []string          `json:"folder_ids"`
	ToolRules            []ToolRule        `json:"tool_rules"`
	Messages             []Message         `json:"messages"`
	InContextMessageIDs  []string          `json:"in_context_message_ids"`
	FilesAgents          []json.RawMessage `json:"files_agents"`
	GroupIDs             []string          `json:"group_ids"`
	MemoryBlocks         []Block           `json:"memory_blocks"`
	Tools                []string          `json:"tools"`
	LLMConfig            json.RawMessage   `json:"llm_config"`
	Model                json.RawMessage   `json:"model"`
	Secrets              json.RawMessage   `json:"secrets"`
	ToolExecEnvVariables json.RawMessage   `json:"tool_exec_environment_variables"`
	Extra                map[string]json.RawMessage
}

// agentKeys are the keys Agent types; the rest go to Extra.
var agentKeys = []string{"id", "name", "system", "block_ids", "tool_ids", "source_ids", "folder_ids", "tool_rules", "messages",
	"in_context_message_ids", "files_agents", "group_ids", "memory_blocks", "tools", "llm_config", "model", "secrets",
	"tool_exec_environment_variables"}

// UnmarshalJSON reads the typed fields and keeps the others in Extra.
func (a *Agent) UnmarshalJSON(data []byte) error {
	type plain Agent
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := rest(data, agentKeys)
	if err != nil {
		return err
	}
	p.Extra = extra
	*a = Agent(p)
	return nil
}

// MarshalJSON writes Extra's fields and the typed ones, keys sorted.
func (a Agent) MarshalJSON() ([]byte, error) {
	type plain Agent
	p := plain(a)
	p.Extra = nil
	return withRest(p, a.Extra)
}

// Block is a memory block (BlockSchema). Extra holds its other fields
// (metadata, tags, template fields, ...).
type Block struct {
	ID          string  `json:"id"`
	Label       string  `json:"label"`
	Value       string  `json:"value"`
	Limit       *int    `json:"limit"`
	ReadOnly    bool    `json:"read_only"`
	Description *string `json:"description"`
	Extra       map[string]json.RawMessage
}

var blockKeys = []string{"id", "label", "value", "limit", "read_only", "description"}

// UnmarshalJSON reads the typed fields and keeps the others in Extra.
func (b *Block) UnmarshalJSON(data []byte) error {
	type plain Block
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := rest(data, blockKeys)
	if err != nil {
		return err
	}
	p.Extra = extra
	*b = Block(p)
	return nil
}

// MarshalJSON writes Extra's fields and the typed ones, keys sorted.
func (b Block) MarshalJSON() ([]byte, error) {
	type plain Block
	p := plain(b)
	p.Extra = nil
	return withRest(p, b.Extra)
}

// Group is a multi-agent group (GroupSchema).
type Group struct {
	ID             string          `json:"id"`
	AgentIDs       []string        `json:"agent_ids"`
	Description    string          `json:"description"`
	ManagerConfig  json.RawMessage `json:"manager_config,omitempty"`
	ProjectID      *string         `json:"project_id"`
	SharedBlockIDs []string        `json:"shared_block_ids"`
	Hidden         *bool           `json:"hidden"`
}

// managerAgentID is the manager agent a group's manager_config names
// ("" for none).
func (g Group) managerAgentID() string {
	var mc struct {
		ManagerAgentID string `json:"manager_agent_id"`
	}
	_ = json.Unmarshal(g.ManagerConfig, &mc)
	return mc.ManagerAgentID
}

// Tool is a tool (ToolSchema). Extra holds its other fields (type, source
// code, tags, ...).
type Tool struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	JSONSchema  json.RawMessage `json:"json_schema"`
	Extra       map[string]json.RawMessage
}

var toolKeys = []string{"id", "name", "description", "json_schema"}

// UnmarshalJSON reads the typed fields and keeps the others in Extra.
func (t *Tool) UnmarshalJSON(data []byte) error {
	type plain Tool
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := rest(data, toolKeys)
	if err != nil {
		return err
	}
	p.Extra = extra
	*t = Tool(p)
	return nil
}

// MarshalJSON writes Extra's fields and the typed ones, keys sorted.
func (t Tool) MarshalJSON() ([]byte, error) {
	type plain Tool
	p := plain(t)
	p.Extra = nil
	return withRest(p, t.Extra)
}

// ToolRule is one Letta tool rule: its type and tool, and the fields some
// types have.
type ToolRule struct {
	Type                 string          `json:"type"`
	ToolName             string          `json:"tool_name"`
	Children             []string        `json:"children,omitempty"`
	MaxCountLimit        *int            `json:"max_count_limit,omitempty"`
	DefaultChild         *string         `json:"default_child,omitempty"`
	ChildOutputMapping   json.RawMessage `json:"child_output_mapping,omitempty"`
	RequireOutputMapping *bool           `json:"require_output_mapping,omitempty"`
	PromptTemplate       *string         `json:"prompt_template"`
}

// Message is one message (MessageSchema).
type Message struct {
	Type              string            `json:"type,omitempty"`
	ID                string            `json:"id"`
	Role              string            `json:"role"`
	Content           json.RawMessage   `json:"content"`
	Name              *string           `json:"name"`
	Otid              *string           `json:"otid"`
	SenderID          *string           `json:"sender_id"`
	BatchItemID       *string           `json:"batch_item_id"`
	GroupID           *string           `json:"group_id"`
	Model             *string           `json:"model"`
	AgentID           *string           `json:"agent_id"`
	ToolCalls         []ToolCall        `json:"tool_calls"`
	ToolCallID        *string           `json:"tool_call_id"`
	ToolReturns       []ToolReturn      `json:"tool_returns"`
	CreatedAt         string            `json:"created_at"`
	Approve           *bool             `json:"approve"`
	ApprovalRequestID *string           `json:"approval_request_id"`
	DenialReason      *string           `json:"denial_reason"`
	Approvals         []json.RawMessage `json:"approvals"`
}

// ToolCall is an OpenAI-style tool call of an assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ToolReturn is the result of one tool call in a tool message.
type ToolReturn struct {
	ToolCallID   *string         `json:"tool_call_id"`
	Status       string          `json:"status"`
	Stdout       json.RawMessage `json:"stdout"`
	Stderr       json.RawMessage `json:"stderr"`
	FuncResponse *string         `json:"func_response"`
}

// ContentPart is one part of a message's content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// FileEntry is a file of a source (FileSchema); Content is its text.
type FileEntry struct {
	ID       string  `json:"id"`
	SourceID string  `json:"source_id"`
	FileName *string `json:"file_name"`
	FilePath *string `json:"file_path"`
	FileType *string `json:"file_type"`
	Content  *string `json:"content"`
}

// Source is a data source (a folder of files; SourceSchema).
type Source struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	Description  *string `json:"description"`
	Instructions *string `json:"instructions"`
}

// rest returns the members of the JSON object data whose keys are not in
// known.
func rest(data []byte, known []string) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	// encoding/json matched the known keys whatever their case
	// ("Secrets" filled Secrets): they go whatever their case too, or a
	// value the typed field took (and dropped, for secrets) would stay as
	// an extra member, stored and exported.
	for k := range all {
		for _, kn := range known {
			if strings.EqualFold(k, kn) {
				delete(all, k)
				break
			}
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	return all, nil
}

// withRest marshals v (a struct) and adds extra's members to the object.
// A typed field wins over an extra member of the same key.
func withRest(v any, extra map[string]json.RawMessage) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "Extra")
	for k, v := range extra {
		if _, typed := obj[k]; !typed {
			obj[k] = v
		}
	}
	return json.Marshal(obj)
}

// decodeContent returns the text of a message's content: a string, or the
// text parts of a list of parts joined by newlines; the types of the other
// parts are counted in skipped.
func decodeContent(raw json.RawMessage) (text string, skipped map[string]int, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil, nil
	}
	if raw[0] == '"' {
		err = json.Unmarshal(raw, &text)
		return text, nil, err
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content is neither text nor a list of parts: %w", err)
	}
	var texts []string
	for _, p := range parts {
		var cp ContentPart
		if err := json.Unmarshal(p, &cp); err != nil {
			return "", nil, fmt.Errorf("content part: %w", err)
		}
		if cp.Type == "text" {
			texts = append(texts, cp.Text)
			continue
		}
		if skipped == nil {
			skipped = map[string]int{}
		}
		skipped[cmpOr(cp.Type, "untyped")]++
	}
	return strings.Join(texts, "\n"), skipped, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
