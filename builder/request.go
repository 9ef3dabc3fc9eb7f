package builder

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/engram-go/engram/memory"
)

// Tool is a tool definition as sent to a model.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments (an object schema);
	// empty means none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// NewTool makes a Tool whose parameters are a JSON Schema built with
// invopop/jsonschema.
func NewTool(name, description string, params *jsonschema.Schema) (Tool, error) {
	t := Tool{Name: name, Description: description}
	if params != nil {
		js, err := json.Marshal(params)
		if err != nil {
			return Tool{}, fmt.Errorf("%w: tool %q parameters: %v", ErrInvalid, name, err)
		}
		t.Parameters = js
	}
	return t, nil
}

// ToolRegistry provides the tools a request offers.
type ToolRegistry interface {
	Tools() []Tool
}

// ToolList is a fixed ToolRegistry.
type ToolList []Tool

// Tools returns the list.
func (l ToolList) Tools() []Tool { return l }

// Attachment is keyed extra context (a file, a search result, ...) placed
// after the Working blocks, Cortex-style: when the memory budget is
// exceeded, non-essential attachments are dropped highest Priority number
// first (together with Working blocks); essential ones never are.
type Attachment struct {
	Key       string `json:"key"`
	Content   string `json:"-"`
	Priority  int    `json:"priority"`
	Essential bool   `json:"essential,omitempty"`
}

// Attachment priorities, Cortex-style: a higher number is dropped first.
const (
	PriorityHigh   = 3
	PriorityMedium = 5
	PriorityLow    = 10
)

// Section names of the system prompt.
const (
	SectionBase        = "base_instructions"
	SectionCore        = "core_blocks"
	SectionWorking     = "working_blocks"
	SectionAttachments = "attachments"
	SectionSkills      = "skills"
	SectionActivity    = "activity"
	SectionToolRules   = "tool_rules"
	SectionLibrary     = "context_library"
	SectionRecalled    = "recalled_memories"
	SectionEnvironment = "environment"
)

// Section is one part of the system prompt. Sections are joined with a
// blank line.
type Section struct {
	Name string `json:"name"`
	// Text is the section as it appears in the prompt.
	Text   string `json:"-"`
	Tokens int    `json:"tokens"`
	// Stable sections do not depend on memory or on the request (base
	// instructions, tool rules): they can be cached by providers.
	Stable bool `json:"stable,omitempty"`
	// Hash is a 64-bit checksum of Text (CRC-32C and CRC-32, in hex):
	// equal hashes mean the section did not change.
	Hash string `json:"hash"`
}

// Request is a model request, ready to convert to a provider's format.
type Request struct {
	// System is the system prompt; "" when the model takes none (then the
	// prompt is Messages[0], a user message).
	System string
	// Messages is the history: a summary message (if any), the kept
	// messages and the current ones, in order. Synthetic messages (summary,
	// placeholder, system prompt as user) have ID 0. To keep warm builds
	// cheap it may share memory with the Cache's copy of the history: treat
	// the messages as read-only (appending to the slice is fine).
	Messages []memory.Message
	// Tools are the tool definitions, sorted by name.
	Tools []Tool
	// Sections describe the system prompt part by part, in prompt order.
	Sections []Section
	// Artifacts are this turn's artifacts (WithTurnContext), for
	// Builder.Promote.
	Artifacts []Artifact
	Metadata  Metadata
}

// TokenUsage is a request's token accounting.
type TokenUsage struct {
	// Per section of the system prompt.
	Base        int `json:"base_instructions"`
	Core        int `json:"core_blocks"`
	Working     int `json:"working_blocks"`
	Attachments int `json:"attachments"`
	Skills      int `json:"skills"`
	Activity    int `json:"activity"`
	ToolRules   int `json:"tool_rules"`
	Library     int `json:"context_library,omitempty"`
	Recalled    int `json:"recalled_memories,omitempty"`
	Environment int `json:"environment,omitempty"`
	// Turn is what this turn's artifacts add to the current user message
	// (counted in History too).
	Turn int `json:"turn_context,omitempty"`
	// System is the whole system prompt (sections and separators).
	System int `json:"system"`
	// Tools is the tool definitions.
	Tools int `json:"tools"`
	// History is the messages, Summary the part of it used by the summary
	// message.
	History int `json:"history"`
	Summary int `json:"summary"`
	// Total = System + Tools + History.
	Total int `json:"total"`
	// Budgets in force (0: none).
	InputBudget   int `json:"input_budget"`
	MemoryBudget  int `json:"memory_budget"`
	HistoryBudget int `json:"history_budget"`
	LibraryBudget int `json:"library_budget,omitempty"`
	RecallBudget  int `json:"recall_budget,omitempty"`
}

// BlockReport describes a block in the prompt.
type BlockReport struct {
	Label string `json:"label"`
	// Owner is set for blocks shared with the agent.
	Owner    string `json:"owner,omitempty"`
	Type     string `json:"type"`
	Priority int    `json:"priority,omitempty"`
	Tokens   int    `json:"tokens"`
	// TrimmedLines is set when the block was cut to whole lines
	// (ContextConfig.TrimTextBlocks): the number of lines left out.
	TrimmedLines int `json:"trimmed_lines,omitempty"`
}

// ArtifactReport is one artifact of the context library or of the turn.
type ArtifactReport struct {
	ID string `json:"id"`
	// Form is "full" or "preview" in the library, "full" or "reference"
	// in the turn.
	Form   string `json:"form"`
	Tokens int    `json:"tokens,omitempty"`
}

// RecallReport is one recalled memory in the prompt.
type RecallReport struct {
	ID     int64   `json:"id"`
	Score  float64 `json:"score"`
	Tokens int     `json:"tokens"`
}

// Timings are how long the phases of a build took.
type Timings struct {
	// Fetch: block listings, history, activity.
	Fetch   time.Duration `json:"fetch"`
	Library time.Duration `json:"library,omitempty"`
	Recall  time.Duration `json:"recall,omitempty"`
	// Layout: rendering, counting and fitting everything but the history.
	Layout  time.Duration `json:"layout"`
	History time.Duration `json:"history"`
	Total   time.Duration `json:"total"`
}

// PrefixChange says where the system prompt first differs from the
// previous build for the same agent and model (in the same Cache).
type PrefixChange struct {
	// Section is the first section whose bytes changed ("tools" when the
	// tool definitions did); "" when nothing did.
	Section string `json:"section"`
	// Reason classifies the change: "tools changed", "instructions
	// changed", "memory changed", "context library grew", ...
	Reason string `json:"reason"`
	// CommonPrefix is the number of leading bytes of the system prompt
	// equal to the previous build's (with unchanged tools).
	CommonPrefix int `json:"common_prefix"`
}

// Dropped describes a block or attachment left out, and why.
type Dropped struct {
	Kind     string `json:"kind"` // "block" or "attachment"
	Label    string `json:"label"`
	Owner    string `json:"owner,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Tokens   int    `json:"tokens,omitempty"`
	Reason   string `json:"reason"`
}

// Metadata reports how a request was built.
type Metadata struct {
	Agent    string             `json:"agent"`
	Model    string             `json:"model,omitempty"`
	Encoding string             `json:"encoding"`
	Limits   ModelContextLimits `json:"limits"`
	Tokens   TokenUsage         `json:"tokens"`

	// Profile names the parts of the agent profile the build used
	// (ProfileSystem, ProfileTools, ProfileToolRules, ProfileModel); empty
	// when it used none (see Builder.WithProfile).
	Profile []string `json:"profile,omitempty"`

	BlocksIncluded      []BlockReport `json:"blocks_included"`
	BlocksDropped       []Dropped     `json:"blocks_dropped,omitempty"`
	AttachmentsIncluded []string      `json:"attachments_included,omitempty"`

	// Library is the context library as shown; LibraryDropped the
	// artifacts left out of it.
	Library        []ArtifactReport `json:"library,omitempty"`
	LibraryDropped []Dropped        `json:"library_dropped,omitempty"`
	// Turn is this turn's artifacts: in full or as references.
	Turn []ArtifactReport `json:"turn,omitempty"`
	// Recalled are the recalled memories in the prompt, most relevant
	// first; RecalledDropped those left out (duplicates, over budget).
	Recalled        []RecallReport `json:"recalled,omitempty"`
	RecalledDropped []Dropped      `json:"recalled_dropped,omitempty"`

	ActiveBatch        string  `json:"active_batch,omitempty"`
	MessagesKept       []int64 `json:"messages_kept"`
	MessagesSummarized []int64 `json:"messages_summarized,omitempty"`
	MessagesDropped    []int64 `json:"messages_dropped,omitempty"`
	// MessagesExcluded belong to incomplete batches other than the active
	// one.
	MessagesExcluded []int64 `json:"messages_excluded,omitempty"`
	SummaryID        int64   `json:"summary_id,omitempty"`
	SummarizerCalls  int     `json:"summarizer_calls,omitempty"`

	// StablePrefixEnd is the byte length of the system prompt's stable
	// prefix (the leading Stable sections); StablePrefixHash is the sha256
	// (hex) of the tool definitions and that prefix. Equal hashes mean a
	// provider's prefix cache can be reused.
	StablePrefixEnd  int    `json:"stable_prefix_end"`
	StablePrefixHash string `json:"stable_prefix_hash"`
	// ToolsHash is the same checksum of the tool definitions; each
	// Section has its own Hash.
	ToolsHash string `json:"tools_hash"`
	// PrefixChange compares with the previous build of this agent and
	// model in the same Cache; nil for the first.
	PrefixChange *PrefixChange `json:"prefix_change,omitempty"`
	// TruncationOrder is the order layers gave way in (first first).
	TruncationOrder []Layer `json:"truncation_order"`
	Timings         Timings `json:"timings"`

	// OverBudget is set when the request exceeds its input budget (the
	// system prompt, Core blocks and the active batch are never dropped).
	OverBudget bool     `json:"over_budget,omitempty"`
	Warnings   []string `json:"warnings,omitempty"`
}
