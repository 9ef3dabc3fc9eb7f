package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

// Tool names, in the order Toolset.Tools lists them.
const (
	BlockAppend     = "block_append"
	BlockReplace    = "block_replace"
	BlockSetField   = "block_set_field"
	BlockPushItem   = "block_push_item"
	BlockInsertLine = "block_insert_line"
	LogAppend       = "log_append"
	ArchivalInsert  = "archival_insert"
	ArchivalSearch  = "archival_search"
	// ArchivalConsolidate finds near-duplicate entries of the agent's own
	// archival memory and proposes merges.
	ArchivalConsolidate = "archival_consolidate"
	ConversationSearch  = "conversation_search"
	ProposeEdit         = "propose_edit"
	LoadSkill           = "load_skill"
)

// Names returns every tool name this package defines, in listing order.
func Names() []string {
	out := make([]string, len(registry))
	for i, d := range registry {
		out[i] = d.name
	}
	return out
}

var (
	// ErrInternal is wrapped by the error Call returns when a tool handler
	// panicked: a bug, not something the model did.
	ErrInternal = errors.New("tools: internal error")
	// ErrInvalidOptions is wrapped by New's error for a nil handle, an empty
	// agent id, or an unknown tool name in Options.Enabled.
	ErrInvalidOptions = errors.New("tools: invalid options")
)

// Tool is one tool definition as handed to a model: a name, a description
// written for the model, and the JSON Schema of its arguments (an object
// schema with descriptions, required properties and additionalProperties
// false). It converts to builder.Tool with builder.NewTool(t.Name,
// t.Description, t.Parameters).
type Tool struct {
	Name        string
	Description string
	Parameters  *jsonschema.Schema
	// Hints describe the tool's effect for hosts that show or gate calls
	// (MCP tool annotations); they are not part of Definition.
	Hints Hints
}

// Hints describe what a tool does to memory, in the terms of MCP tool
// annotations. Every tool acts only on the agent's own memory store (a
// closed world).
type Hints struct {
	// Title is a short human-readable name.
	Title string
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Destructive: the tool may overwrite or remove what memory holds;
	// false for tools that only add (meaningful when not ReadOnly).
	Destructive bool
	// Idempotent: calling it again with the same arguments has no further
	// effect (meaningful when not ReadOnly).
	Idempotent bool
}

// Definition returns the tool in OpenAI function-calling format:
//
//	{"type":"function","function":{"name":...,"description":...,"parameters":{...}}}
//
// The bytes are deterministic (properties keep their declaration order).
func (t Tool) Definition() json.RawMessage {
	def := struct {
		Type     string `json:"type"`
		Function struct {
			Name        string             `json:"name"`
			Description string             `json:"description,omitempty"`
			Parameters  *jsonschema.Schema `json:"parameters,omitempty"`
		} `json:"function"`
	}{Type: "function"}
	def.Function.Name, def.Function.Description, def.Function.Parameters = t.Name, t.Description, t.Parameters
	b, err := marshal(def)
	if err != nil {
		// A generated schema always marshals; keep the signature simple.
		panic(fmt.Sprintf("tools: definition of %q: %v", t.Name, err))
	}
	return b
}

// Result is what a tool call gives back to the model. Content is short text
// or compact JSON, deterministic for the same store state and arguments.
// IsError marks a call that did not do what was asked (bad arguments,
// permission denied, no match, a tool rule, ...); its Content starts with
// "Error: " and says what to change, so it reads right even where a
// provider has no error flag.
type Result struct {
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

func okResult(format string, args ...any) Result {
	return Result{Content: fmt.Sprintf(format, args...)}
}

func errResult(msg string) Result {
	return Result{Content: "Error: " + msg, IsError: true}
}

// Options configure a Toolset. nil or zero Options mean: every tool, no
// tool rules, time.Now.
type Options struct {
	// Rules, when set, is consulted for every call (Engine.Call: checked and
	// recorded atomically) after the arguments are decoded and before the
	// tool runs; a refused call comes back as an error Result naming the
	// rule. Allowed uses it to filter the tool list.
	Rules *toolrules.Engine
	// Now is the clock for relative times such as since="24h" (default
	// time.Now).
	Now func() time.Time
	// Enabled, when non-empty, is the subset of tool names to offer; the
	// others are unknown to the Toolset. Listing order stays the package's.
	Enabled []string
	// MaxEditChars, when positive, is the most characters one block edit
	// may carry: the text it inserts, the text it replaces and its value
	// (as JSON) together. A larger edit is refused before the block is
	// read, telling the model to split it. Automerge spends CPU and
	// memory on each character an edit inserts or deletes, so a server
	// whose callers it does not trust bounds what one call costs (engram
	// serve does). Zero or negative: no cap beyond the block's own limit.
	MaxEditChars int
}

// Toolset runs memory tools as one agent, through its handle. Every call
// acts as that agent, so block permissions (and shares), character limits,
// schemas and isolation apply exactly as for any other agent write.
// A Toolset is safe for concurrent use.
type Toolset struct {
	mem   *memory.Agent
	agent string
	// apply and propose write an edit through a block handle; tests
	// replace them (export_test.go) to interleave another writer.
	apply   func(ctx context.Context, b *memory.Block, e memory.Edit) error
	propose func(ctx context.Context, b *memory.Block, e memory.Edit, reason string) (memory.Proposal, error)
	rules   *toolrules.Engine
	now     func() time.Time
	maxEdit int // Options.MaxEditChars; 0: no cap
	tools   []*toolDef
}

// New returns the tools acting as agent a (a store's Agent handle).
func New(a *memory.Agent, opts *Options) (*Toolset, error) {
	if a == nil {
		return nil, fmt.Errorf("%w: agent handle is nil", ErrInvalidOptions)
	}
	if strings.TrimSpace(a.ID()) == "" {
		return nil, fmt.Errorf("%w: agent id is empty", ErrInvalidOptions)
	}
	ts := &Toolset{mem: a, agent: a.ID(), now: time.Now,
		apply: func(ctx context.Context, b *memory.Block, e memory.Edit) error { return b.Apply(ctx, e) },
		propose: func(ctx context.Context, b *memory.Block, e memory.Edit, reason string) (memory.Proposal, error) {
			return b.Propose(ctx, e, reason)
		}}
	var enabled []string
	if opts != nil {
		ts.rules = opts.Rules
		if opts.Now != nil {
			ts.now = opts.Now
		}
		enabled = opts.Enabled
		ts.maxEdit = max(opts.MaxEditChars, 0)
	}
	for _, name := range enabled {
		if lookup(name) == nil {
			return nil, fmt.Errorf("%w: unknown tool %q (known: %s)", ErrInvalidOptions, name, strings.Join(Names(), ", "))
		}
	}
	for _, d := range registry {
		if len(enabled) == 0 || slices.Contains(enabled, d.name) {
			ts.tools = append(ts.tools, d)
		}
	}
	return ts, nil
}

// Agent is the agent the tools act as.
func (ts *Toolset) Agent() string { return ts.agent }

// Tools returns the enabled tools in a stable order (see Names). The
// schemas are shared: do not modify them.
func (ts *Toolset) Tools() []Tool {
	out := make([]Tool, len(ts.tools))
	for i, d := range ts.tools {
		out[i] = d.tool()
	}
	return out
}

// Allowed returns the enabled tools the tool rules allow next (all of them
// without rules), in the order of Tools, so a loop can send only those.
func (ts *Toolset) Allowed() []Tool {
	all := ts.Tools()
	if ts.rules == nil {
		return all
	}
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name
	}
	ok := ts.rules.Allowed(names)
	out := all[:0]
	for _, t := range all {
		if slices.Contains(ok, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// Definitions returns the enabled tools' Definitions as one JSON array.
func (ts *Toolset) Definitions() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, t := range ts.Tools() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(t.Definition())
	}
	b.WriteByte(']')
	return b.Bytes()
}

// Call runs tool name with the model's JSON arguments as the Toolset's
// agent.
//
// Everything the model can get wrong comes back as a Result with IsError
// set and a message naming the problem: an unknown or disabled tool,
// arguments that are not a JSON object, unknown, missing or mistyped
// arguments, a tool rule violation, and every refusal by the store
// (permission denied, character limit, unknown block, wrong schema, no
// unique match, ...). A refused call changes nothing. Arguments are checked
// before the tool rules are consulted, so a malformed call does not count
// as a call.
//
// A Go error is returned only for problems outside the model's control: a
// cancelled context, a closed store, a failed write or embedder, a
// corrupt document, or a panic in a handler (wrapping ErrInternal). The
// Result then still holds a short error message a loop may pass on.
func (ts *Toolset) Call(ctx context.Context, name string, args json.RawMessage) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			res = errResult(fmt.Sprintf("tool %q failed because of an internal problem; this is not caused by your arguments", name))
			err = fmt.Errorf("%w: tool %q panicked: %v", ErrInternal, name, p)
		}
	}()
	if err := ctx.Err(); err != nil {
		return infraResult(name), fmt.Errorf("tools: %s: %w", name, err)
	}
	d := ts.find(name)
	if d == nil {
		return errResult(fmt.Sprintf("unknown tool %q; available tools: %s", name, strings.Join(ts.names(), ", "))), nil
	}
	decoded, derr := d.decode(args)
	if derr != nil {
		return errResult(fmt.Sprintf("%s: %s", name, derr.Error())), nil
	}
	if ts.rules != nil {
		if rerr := ts.rules.Call(ctx, toolrules.Call{Agent: ts.agent, Tool: name, Arguments: args}); rerr != nil {
			var v *toolrules.Violation
			if errors.As(rerr, &v) && !(ctx.Err() != nil && errors.Is(rerr, ctx.Err())) {
				msg := "call refused by tool rule"
				if r := v.Rule.String(); r != "" {
					msg += fmt.Sprintf(" %q", r)
				}
				return errResult(msg + ": " + v.Reason), nil
			}
			return infraResult(name), fmt.Errorf("tools: %s: tool rules: %w", name, rerr)
		}
	}
	res, err = d.run(ctx, ts, decoded)
	if err == nil {
		return res, nil
	}
	var me *modelError
	if errors.As(err, &me) {
		return errResult(me.msg), nil
	}
	if isInfra(err) {
		return infraResult(name), fmt.Errorf("tools: %s: %w", name, err)
	}
	return errResult(cleanErr(err)), nil
}

func infraResult(name string) Result {
	return errResult(fmt.Sprintf("tool %q could not run because of an internal problem (memory store unavailable); this is not caused by your arguments", name))
}

func (ts *Toolset) find(name string) *toolDef {
	for _, d := range ts.tools {
		if d.name == name {
			return d
		}
	}
	return nil
}

func (ts *Toolset) names() []string {
	out := make([]string, len(ts.tools))
	for i, d := range ts.tools {
		out[i] = d.name
	}
	return out
}

// marshal is json.Marshal without HTML escaping (models read "<" better
// than "\u003c") and without the trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
