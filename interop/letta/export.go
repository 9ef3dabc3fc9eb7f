package letta

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// ExportOptions tune an export. The zero value (or nil) is the default.
type ExportOptions struct {
	// Now is the file's created_at (nil: time.Now).
	Now func() time.Time
	// Model is the model written for an agent whose profile names none
	// (default DefaultModel): Letta refuses an agent without an
	// llm_config. Letta's import can override it (its model parameter).
	Model string
}

// DefaultModel is the model an export gives an agent whose profile names
// none (ExportOptions.Model).
const DefaultModel = "gpt-4o-mini"

// Export writes agents of store as a Letta agent file (see FromDumps for
// what each part becomes). Blocks other agents share with them are written
// too, with their value as the agent sees it.
func Export(ctx context.Context, store Store, agents []string, opts *ExportOptions) (*File, *Report, error) {
	start := time.Now()
	if len(agents) == 0 {
		return nil, nil, fmt.Errorf("%w: no agent to export", ErrInvalid)
	}
	var dumps []*memory.Dump
	for _, a := range agents {
		if slices.Contains(agents[:slices.Index(agents, a)], a) {
			continue
		}
		d, err := store.Agent(a).Export(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("letta: export %q: %w", a, err)
		}
		if len(d.Blocks) == 0 && len(d.Messages) == 0 && len(d.Profiles) == 0 && len(d.Archival) == 0 {
			return nil, nil, fmt.Errorf("letta: export: %w: agent %q has no blocks, messages, archival entries or profile", memory.ErrNotFound, a)
		}
		dumps = append(dumps, d)
	}
	// Blocks shared with the agents by owners not exported.
	var sharedIn []memory.SharedBlock
	for _, a := range agents {
		sh, err := store.Agent(a).SharedBlocks(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("letta: export %q: %w", a, err)
		}
		sharedIn = append(sharedIn, sh...)
	}
	f, rep, err := FromDumps(dumps, sharedIn, opts)
	if err != nil {
		return nil, nil, err
	}
	rep.Duration = time.Since(start)
	return f, rep, nil
}

// exporter carries one FromDumps' state.
type exporter struct {
	opts    ExportOptions
	rep     *Report
	f       *File
	agentID map[string]string   // engram id → file id
	blockID map[blockRef]string // → file block id
	toolID  map[string]string   // tool JSON → file tool id
	msgN    int
}

// FromDumps maps the dumps of agents (memory.Agent.Export of each), and
// the blocks shared with them (memory.Agent.SharedBlocks), onto a
// Letta agent file:
//
//   - each agent with its profile's system prompt, tools (as tools with
//     their JSON Schemas, and what the "letta" extension kept: type,
//     source code, ...), tool rules (see lettaRules), model and the
//     agent's other Letta fields the extension kept;
//   - each block as a block (a Text block's value byte for byte; another
//     schema's rendering), its character limit as limit, ReadOnly as
//     read_only; an agent lists its own blocks and those shared with it;
//   - messages with their tool calls and results, the compiled system
//     prompt first (the profile's); messages a summary covers are outside
//     the context window;
//   - groups the extensions kept, when every agent of the group is
//     exported.
//
// Secrets are never written. The Report names what the format cannot
// hold: blocks' CRDT history, proposals, archival entries (the format has
// no passages), summaries' text, the context library.
func FromDumps(dumps []*memory.Dump, sharedIn []memory.SharedBlock, o *ExportOptions) (*File, *Report, error) {
	var opts ExportOptions
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	ex := &exporter{opts: opts, rep: &Report{Direction: "export"}, agentID: map[string]string{}, blockID: map[blockRef]string{},
		toolID: map[string]string{}}
	ex.f = &File{Agents: []Agent{}, Groups: []Group{}, Blocks: []Block{}, Files: []FileEntry{}, Sources: []Source{}, Tools: []Tool{},
		MCPServers: []json.RawMessage{}, Metadata: map[string]any{}}
	created := opts.Now().UTC().Format(time.RFC3339Nano)
	ex.f.CreatedAt = &created

	type agentData struct {
		id   string
		d    *memory.Dump
		prof memory.Profile
		ext  extension
	}
	var agents []agentData
	for _, d := range dumps {
		for _, id := range dumpAgents(d) {
			if _, dup := ex.agentID[id]; dup {
				continue
			}
			ex.agentID[id] = fmt.Sprintf("agent-%d", len(ex.agentID))
			ad := agentData{id: id, d: d}
			for _, p := range d.Profiles {
				if p.Agent == id {
					ad.prof = p.Profile
				}
			}
			ext, err := readExtension(ad.prof)
			if err != nil {
				return nil, nil, fmt.Errorf("letta: export %q: %w", id, err)
			}
			ad.ext = ext
			agents = append(agents, ad)
		}
	}
	// Blocks: every exported agent's own, then those shared in.
	exts := map[string]extension{}
	for _, ad := range agents {
		exts[ad.id] = ad.ext
	}
	for _, ad := range agents {
		for _, b := range ad.d.Blocks {
			if b.Owner != ad.id {
				continue
			}
			if err := ex.block(b, exts[b.Owner]); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, s := range sharedIn {
		ref := blockRef{Owner: s.Owner, Label: s.Label}
		if _, ok := ex.blockID[ref]; ok {
			continue
		}
		ex.sharedBlock(s)
	}
	for _, ad := range agents {
		a, err := ex.agent(ad.id, ad.d, ad.prof, ad.ext, sharedIn)
		if err != nil {
			return nil, nil, err
		}
		ex.f.Agents = append(ex.f.Agents, a)
		ex.notWritten(ad.id, ad.d)
	}
	ex.groups(exts)
	return ex.f, ex.rep, nil
}

// dumpAgents are the agents with content in d, in first-seen order.
func dumpAgents(d *memory.Dump) []string {
	var out []string
	add := func(a string) {
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, p := range d.Profiles {
		add(p.Agent)
	}
	for _, b := range d.Blocks {
		add(b.Owner)
	}
	for _, m := range d.Messages {
		add(m.Agent)
	}
	for _, e := range d.Archival {
		add(e.Agent)
	}
	return out
}

// block adds one block of an exported owner.
func (ex *exporter) block(b memory.DumpBlock, ext extension) error {
	s, err := schema.Unmarshal(b.Schema)
	if err != nil {
		return fmt.Errorf("letta: export block %q of %q: %w", b.Label, b.Owner, err)
	}
	info := blocks.Info{Label: b.Label, Description: b.Description, Type: b.Type, Schema: s, Permission: b.Permission, CharLimit: b.CharLimit, Owner: b.Owner}
	doc, err := blocks.Load(info, b.Document, nil)
	if err != nil {
		return fmt.Errorf("letta: export block %q of %q: %w", b.Label, b.Owner, err)
	}
	value := doc.Render()
	if _, text := schema.Deref(s).(schema.Text); text {
		v, err := doc.Value()
		if err != nil {
			return fmt.Errorf("letta: export block %q of %q: %w", b.Label, b.Owner, err)
		}
		value, _ = v.(string)
	} else {
		ex.rep.mapped(b.Owner, fmt.Sprintf("block %q (%s schema)", b.Label, schema.Deref(s).Kind()), 1, "its rendering as the value (Letta blocks are text)")
	}
	if b.Type != blocks.Core {
		ex.rep.mapped(b.Owner, fmt.Sprintf("%s block", b.Type), 1, "a Letta block, always in context (Letta has no block types)")
	}
	ex.newBlock(b.Owner, b.Label, value, b.Description, b.CharLimit, b.Permission, ext.Blocks[b.Label])
	ex.rep.agent("", "", b.Owner).Blocks++
	ex.rep.mapped(b.Owner, "block", 1, "a block: label, value, description, character limit as limit, ReadOnly as read_only")
	if len(b.Epochs) > 0 || len(b.Heads) > 0 {
		ex.rep.notKept(b.Owner, "block history", 1, "Letta blocks hold their value only: the CRDT history (who changed what, when) stays in engram")
	}
	return nil
}

// sharedBlock adds a block another (not exported) agent shares with an
// exported one.
func (ex *exporter) sharedBlock(s memory.SharedBlock) {
	ex.newBlock(s.Owner, s.Label, s.Rendered, s.Description, s.CharLimit, s.Permission, nil)
	ex.rep.mapped(s.SharedWith, fmt.Sprintf("block %q shared by %q", s.Label, s.Owner), 1, "a block of the file (its owner is not exported): its rendering as the value")
}

func (ex *exporter) newBlock(owner, label, value, desc string, limit int, perm blocks.Permission, extra map[string]json.RawMessage) {
	id := fmt.Sprintf("block-%d", len(ex.f.Blocks))
	ex.blockID[blockRef{Owner: owner, Label: label}] = id
	lim := limit
	b := Block{ID: id, Label: label, Value: value, Limit: &lim, ReadOnly: perm == blocks.ReadOnly, Description: &desc}
	if perm != blocks.ReadOnly && perm != blocks.ReadWrite {
		ex.rep.mapped(owner, fmt.Sprintf("block %q permission %s", label, perm), 1, "read_only false (Letta blocks are read-only or not)")
	}
	rest := map[string]json.RawMessage{}
	for k, v := range extra {
		switch k {
		case "label":
			_ = json.Unmarshal(v, &b.Label)
		case "limit":
			var n int
			if json.Unmarshal(v, &n) == nil && n > 0 && n <= limit {
				b.Limit = &n
			}
		case "description":
			if string(v) == "null" && desc == "" {
				b.Description = nil
			}
		default:
			rest[k] = v
		}
	}
	if _, ok := rest["metadata"]; !ok {
		rest["metadata"] = json.RawMessage("{}")
	}
	b.Extra = rest
	ex.f.Blocks = append(ex.f.Blocks, b)
}

// agent makes one agent of the file.
func (ex *exporter) agent(id string, d *memory.Dump, prof memory.Profile, ext extension, sharedIn []memory.SharedBlock) (Agent, error) {
	fid := ex.agentID[id]
	ar := ex.rep.agent("", fid, id)
	a := Agent{ID: fid, Name: id, System: prof.System, BlockIDs: []string{}, ToolIDs: []string{}, SourceIDs: []string{},
		ToolRules: []ToolRule{}, Messages: []Message{}, InContextMessageIDs: []string{}, FilesAgents: []json.RawMessage{},
		GroupIDs: []string{}, MemoryBlocks: []Block{}, Tools: []string{}, Secrets: json.RawMessage("null"),
		ToolExecEnvVariables: json.RawMessage("{}")}
	if prof.IsZero() {
		ex.rep.mapped(id, "agent without a profile", 1, "no system prompt, tools or rules")
	}
	// Blocks: its own, then those shared with it.
	for _, b := range d.Blocks {
		if b.Owner == id {
			a.BlockIDs = append(a.BlockIDs, ex.blockID[blockRef{Owner: id, Label: b.Label}])
		}
	}
	for _, s := range sharedIn {
		if s.SharedWith != id {
			continue
		}
		a.BlockIDs = append(a.BlockIDs, ex.blockID[blockRef{Owner: s.Owner, Label: s.Label}])
		ar.SharedWithIt++
		if ro := s.Permission == blocks.ReadOnly; ro != ex.blockReadOnly(s.Owner, s.Label) {
			ex.rep.mapped(id, fmt.Sprintf("share of %q/%q (%s)", s.Owner, s.Label, s.Permission), 1,
				"the block's own read_only (Letta has one per block, not per agent)")
		}
	}
	// Tools.
	for _, t := range prof.Tools {
		tid, err := ex.tool(t, ext.Tools[t.Name])
		if err != nil {
			return a, fmt.Errorf("letta: export %q: tool %q: %w", id, t.Name, err)
		}
		a.ToolIDs = append(a.ToolIDs, tid)
		ar.Tools++
		if _, ok := ext.Tools[t.Name]; !ok {
			ex.rep.mapped(id, "tool without Letta fields", 1, "a custom tool with its JSON Schema and no source code: Letta offers it, and runs it once code is attached")
		}
	}
	ex.rep.mapped(id, "tool", len(prof.Tools), "a tool (name, description, json_schema; the source code and type kept from the import)")
	// Rules.
	rules, left, why := lettaRules(prof.ToolRules)
	a.ToolRules = append(append([]ToolRule{}, rules...), ext.ToolRules...)
	ar.ToolRules = len(rules)
	for i, r := range left {
		ex.rep.notKept(id, "tool rule "+r.String(), 1, why[i])
	}
	// The agent's other fields, the model among them.
	a.Extra = map[string]json.RawMessage{}
	for k, v := range ext.Agent {
		switch k {
		case "llm_config":
			a.LLMConfig = v
		case "model":
			a.Model = v
		default:
			a.Extra[k] = v
		}
	}
	llm, defaulted, err := llmConfig(a.LLMConfig, prof, ex.opts.Model)
	if err != nil {
		return a, fmt.Errorf("letta: export %q: %w", id, err)
	}
	a.LLMConfig = llm
	if defaulted {
		ex.rep.mapped(id, "agent without a model", 1, fmt.Sprintf("llm_config of %s (Letta requires one; its import can override the model)", ex.opts.Model))
	}
	if len(a.Model) == 0 {
		a.Model = json.RawMessage("null")
	}
	if _, ok := a.Extra["agent_type"]; !ok {
		a.Extra["agent_type"] = json.RawMessage(`"letta_v1_agent"`)
	}
	// Messages.
	ex.messages(&a, id, d, prof, ext)
	return a, nil
}

// blockReadOnly reports whether the file's block of owner/label is
// read-only.
func (ex *exporter) blockReadOnly(owner, label string) bool {
	id := ex.blockID[blockRef{Owner: owner, Label: label}]
	for _, b := range ex.f.Blocks {
		if b.ID == id {
			return b.ReadOnly
		}
	}
	return false
}

// llmConfig returns the agent's llm_config with the profile's model and
// context window (a minimal one when the import kept none), or with model
// def when neither the profile nor the kept configuration names one
// (defaulted: Letta refuses an agent without an llm_config and a model).
func llmConfig(kept json.RawMessage, prof memory.Profile, def string) (raw json.RawMessage, defaulted bool, err error) {
	cfg := map[string]json.RawMessage{}
	if !isNullish(kept) {
		if err := json.Unmarshal(kept, &cfg); err != nil {
			return nil, false, fmt.Errorf("%w: the kept llm_config: %v", ErrInvalid, err)
		}
	}
	var old string
	_ = json.Unmarshal(cfg["model"], &old)
	model := prof.Model
	if model == "" && old == "" {
		model, defaulted = def, true
	}
	if model != "" && model != old {
		cfg["model"], _ = json.Marshal(model)
		var handle string
		if json.Unmarshal(cfg["handle"], &handle) == nil && handle != "" {
			provider, _, _ := strings.Cut(handle, "/")
			cfg["handle"], _ = json.Marshal(provider + "/" + model)
		}
	}
	if _, ok := cfg["model_endpoint_type"]; !ok {
		cfg["model_endpoint_type"], _ = json.Marshal(endpointType(model))
	}
	if prof.ContextWindow > 0 {
		cfg["context_window"], _ = json.Marshal(prof.ContextWindow)
	} else if _, ok := cfg["context_window"]; !ok {
		cfg["context_window"] = json.RawMessage("128000")
	}
	raw, err = json.Marshal(cfg)
	return raw, defaulted, err
}

// endpointType guesses Letta's model_endpoint_type from a model name.
func endpointType(model string) string {
	m := strings.ToLower(model)
	switch {
	case strings.HasPrefix(m, "claude"):
		return "anthropic"
	case strings.HasPrefix(m, "gemini"):
		return "google_ai"
	}
	return "openai"
}

// tool adds t (once per distinct definition) and returns its file id.
func (ex *exporter) tool(t memory.ToolDefinition, extra map[string]json.RawMessage) (string, error) {
	js := map[string]json.RawMessage{}
	js["name"], _ = json.Marshal(t.Name)
	js["description"], _ = json.Marshal(t.Description)
	if len(t.Parameters) > 0 {
		js["parameters"] = t.Parameters
	} else {
		js["parameters"] = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	lt := Tool{Name: t.Name, Extra: map[string]json.RawMessage{}}
	desc := t.Description
	lt.Description = &desc
	for k, v := range extra {
		switch k {
		case "description":
			var d *string
			_ = json.Unmarshal(v, &d)
			lt.Description = d
		case "json_schema_extra":
			var rest map[string]json.RawMessage
			if err := json.Unmarshal(v, &rest); err != nil {
				return "", fmt.Errorf("%w: kept json_schema_extra: %v", ErrInvalid, err)
			}
			for rk, rv := range rest {
				if rk == "description" && string(rv) == "null" {
					delete(js, "description")
					continue
				}
				js[rk] = rv
			}
		case "json_schema":
			// The tool had no schema: written back without one.
			js = nil
		default:
			lt.Extra[k] = v
		}
	}
	if js != nil {
		raw, err := json.Marshal(js)
		if err != nil {
			return "", err
		}
		lt.JSONSchema = raw
	} else {
		lt.JSONSchema = json.RawMessage("null")
	}
	if _, ok := lt.Extra["tool_type"]; !ok {
		lt.Extra["tool_type"] = json.RawMessage(`"custom"`)
		lt.Extra["source_type"] = json.RawMessage(`"json"`)
		lt.Extra["tags"] = json.RawMessage(`[]`)
	}
	key, err := json.Marshal(lt)
	if err != nil {
		return "", err
	}
	if id, ok := ex.toolID[string(key)]; ok {
		return id, nil
	}
	lt.ID = fmt.Sprintf("tool-%d", len(ex.f.Tools))
	ex.toolID[string(key)] = lt.ID
	ex.f.Tools = append(ex.f.Tools, lt)
	return lt.ID, nil
}

// messages writes the agent's conversation.
func (ex *exporter) messages(a *Agent, id string, d *memory.Dump, prof memory.Profile, ext extension) {
	ar := ex.rep.agent("", "", id)
	text := func(s string) json.RawMessage {
		if s == "" {
			return json.RawMessage("[]")
		}
		raw, _ := json.Marshal([]ContentPart{{Type: "text", Text: s}})
		return raw
	}
	newID := func() string {
		ex.msgN++
		return fmt.Sprintf("message-%d", ex.msgN-1)
	}
	fid := a.ID
	created := ex.opts.Now().UTC()
	var msgs []memory.Message
	for _, m := range d.Messages {
		if m.Agent == id {
			msgs = append(msgs, m)
		}
	}
	if len(msgs) > 0 {
		created = msgs[0].CreatedAt
	}
	if prof.System != "" {
		sid := newID()
		a.Messages = append(a.Messages, Message{Type: "message", ID: sid, Role: "system", Content: text(prof.System), AgentID: &fid,
			CreatedAt: created.UTC().Format(time.RFC3339Nano)})
		a.InContextMessageIDs = append(a.InContextMessageIDs, sid)
		ex.rep.mapped(id, "system prompt", 1, "the first message in context (Letta compiles the blocks into it on its next step)")
	}
	// Messages a summary covers are outside the context window.
	var covered int64
	for _, s := range d.Summaries {
		if s.Agent == id && s.LastMessageID > covered {
			covered = s.LastMessageID
		}
		if s.Agent == id && s.Content != outOfContextNote {
			ex.rep.notKept(id, "summary", 1, "Letta keeps summaries as messages it writes itself: the messages it covers are written outside the context window")
		}
	}
	calls := map[string]bool{}
	for _, m := range msgs {
		lm := Message{Type: "message", ID: newID(), Role: string(m.Role), Content: text(m.Content), AgentID: &fid,
			CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339Nano)}
		if m.Name != "" {
			name := m.Name
			lm.Name = &name
		}
		for _, c := range m.ToolCalls {
			var tc ToolCall
			tc.ID, tc.Type = c.ID, "function"
			tc.Function.Name = c.Name
			tc.Function.Arguments = arguments(c.Arguments)
			if orig, ok := ext.Arguments[c.ID]; ok && unescapeHTML(compactJSON([]byte(orig))) == unescapeHTML(compactJSON(c.Arguments)) {
				tc.Function.Arguments = orig
			}
			lm.ToolCalls = append(lm.ToolCalls, tc)
			calls[c.ID] = true
			ar.ToolCalls++
		}
		if m.Role == memory.RoleTool {
			ar.ToolReturns++
			if calls[m.ToolCallID] {
				ar.Paired++
				delete(calls, m.ToolCallID)
			} else {
				ar.Unpaired++
			}
			if m.ToolCallID != "" {
				cid := m.ToolCallID
				lm.ToolCallID = &cid
			}
			resp := m.Content
			lm.ToolReturns = []ToolReturn{{ToolCallID: lm.ToolCallID, Status: "success", Stdout: json.RawMessage("null"),
				Stderr: json.RawMessage("null"), FuncResponse: &resp}}
		} else {
			lm.ToolReturns = []ToolReturn{}
		}
		a.Messages = append(a.Messages, lm)
		if m.ID > covered {
			a.InContextMessageIDs = append(a.InContextMessageIDs, lm.ID)
		} else {
			ar.OutOfContext++
		}
		ar.Messages++
	}
	ar.Unpaired += len(calls)
	if len(msgs) > 0 {
		ex.rep.mapped(id, "message", len(msgs), "a message with its tool calls and results")
	}
	if len(d.Batches) > 0 {
		ex.rep.notKept(id, "batches", countAgent(d.Batches, func(b memory.Batch) string { return b.Agent }, id),
			"Letta has no batches: the messages are written in order")
	}
}

// arguments is a tool call's arguments as Letta's string.
func arguments(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return unescapeHTML(string(raw))
}

func countAgent[T any](xs []T, agent func(T) string, id string) int {
	n := 0
	for _, x := range xs {
		if agent(x) == id {
			n++
		}
	}
	return n
}

// notWritten reports what the agent has that the format cannot hold.
func (ex *exporter) notWritten(id string, d *memory.Dump) {
	if n := countAgent(d.Archival, func(e memory.ArchivalEntry) string { return e.Agent }, id); n > 0 {
		ex.rep.notKept(id, "archival entries", n, "the agent file format has no passages (archival memory)")
	}
	if n := countAgent(d.Proposals, func(p memory.DumpProposal) string { return p.Owner }, id); n > 0 {
		ex.rep.notKept(id, "proposals", n, "Letta has no proposed edits awaiting approval")
	}
	if n := countAgent(d.Library, func(e memory.DumpArtifact) string { return e.Agent }, id); n > 0 {
		ex.rep.notKept(id, "context library artifacts", n, "Letta has no context library")
	}
	for _, s := range d.Shares {
		if s.Owner == id {
			if _, ok := ex.agentID[s.Agent]; !ok {
				ex.rep.notKept(id, fmt.Sprintf("share of %q with %q", s.Label, s.Agent), 1, "that agent is not exported")
			}
		}
	}
}

// groups writes the groups the extensions kept whose agents are all
// exported, and names them in the agents that list them (an import keeps a
// group in one agent's extension, which need not be one that lists it).
func (ex *exporter) groups(exts map[string]extension) {
	seen := map[string]string{} // group JSON → file id
	byName := map[string]int{}  // engram agent id → index in ex.f.Agents
	for i := range ex.f.Agents {
		ex.f.Agents[i].GroupIDs = ex.f.Agents[i].GroupIDs[:0]
		byName[ex.f.Agents[i].Name] = i
	}
	for i := range ex.f.Agents {
		id := ex.f.Agents[i].Name
		for _, g := range exts[id].Groups {
			key, _ := json.Marshal(g)
			gid, ok := seen[string(key)]
			if !ok {
				members := append([]string{}, g.Agents...)
				if g.Manager != "" {
					members = append(members, g.Manager)
				}
				var missing []string
				for _, m := range members {
					if _, ok := ex.agentID[m]; !ok {
						missing = append(missing, m)
					}
				}
				if len(missing) > 0 {
					ex.rep.notKept(id, "group of "+strings.Join(members, ", "), 1, "not every agent of it is exported ("+strings.Join(missing, ", ")+")")
					seen[string(key)] = ""
					continue
				}
				gid = fmt.Sprintf("group-%d", len(ex.f.Groups))
				seen[string(key)] = gid
				lg := Group{ID: gid, AgentIDs: []string{}, Description: g.Description, ProjectID: g.ProjectID, Hidden: g.Hidden, SharedBlockIDs: []string{}}
				for _, m := range g.Agents {
					lg.AgentIDs = append(lg.AgentIDs, ex.agentID[m])
				}
				for _, r := range g.SharedBlocks {
					if bid, ok := ex.blockID[r]; ok {
						lg.SharedBlockIDs = append(lg.SharedBlockIDs, bid)
					}
				}
				lg.ManagerConfig = g.ManagerConfig
				if g.Manager != "" && len(g.ManagerConfig) > 0 {
					var mc map[string]json.RawMessage
					if json.Unmarshal(g.ManagerConfig, &mc) == nil {
						mc["manager_agent_id"], _ = json.Marshal(ex.agentID[g.Manager])
						lg.ManagerConfig, _ = json.Marshal(mc)
					}
				}
				ex.f.Groups = append(ex.f.Groups, lg)
				ex.rep.mapped("", "group "+gid, 1, "the group kept with its agents' profiles")
			}
			if gid == "" || ok {
				continue
			}
			named := map[string]bool{}
			for _, l := range g.Listed {
				if j, in := byName[l]; in && !named[l] {
					named[l] = true
					ex.f.Agents[j].GroupIDs = append(ex.f.Agents[j].GroupIDs, gid)
				}
			}
		}
	}
}
