package letta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/toolrules"
)

// ImportOptions tune an import. The zero value (or nil) imports every
// agent under its name.
type ImportOptions struct {
	// Agent is the engram id of the file's only agent ("": its name). A
	// file of several agents cannot be renamed this way (ErrInvalid).
	Agent string
	// Now is the clock of the blocks' creating changes (nil: time.Now).
	Now func() time.Time
}

// Store is what Import and Export need of a store (*memory.Store has
// it): the agents' handles, and an import of many agents at once.
type Store interface {
	Agent(id string) *memory.Agent
	Import(ctx context.Context, d *memory.Dump) (memory.ImportReport, error)
}

var _ Store = (*memory.Store)(nil)

// Import reads an agent file and adds its agents to store in one
// transaction (all or nothing; see ToDump for what each part becomes). An
// agent whose id the store already uses (it has blocks, messages, archival
// entries or a profile, or blocks shared with it) fails the import with an error wrapping
// memory.ErrExists.
func Import(ctx context.Context, store Store, data []byte, opts *ImportOptions) (*Report, error) {
	start := time.Now()
	f, err := Parse(data)
	if err != nil {
		return nil, err
	}
	d, rep, err := ToDump(f, opts)
	if err != nil {
		return nil, err
	}
	for _, a := range rep.Agents {
		if err := checkAbsent(ctx, store, a.Agent); err != nil {
			return nil, err
		}
	}
	if _, err := store.Import(ctx, d); err != nil {
		return nil, fmt.Errorf("letta: import: %w", err)
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// checkAbsent refuses an agent id the store already uses. (Import's
// transaction refuses it too, through the profile every imported agent
// gets; this names the agent before any work.)
func checkAbsent(ctx context.Context, store Store, agent string) error {
	exists := fmt.Errorf("letta: import: %w: agent %q is already in the store (import it under another id)", memory.ErrExists, agent)
	if _, err := store.Agent(agent).Profile(ctx); err == nil {
		return exists
	} else if !errors.Is(err, memory.ErrNotFound) {
		return err
	}
	bs, err := store.Agent(agent).Blocks(ctx)
	if err != nil {
		return err
	}
	ms, err := store.Agent(agent).Messages().List(ctx, &memory.MessageQuery{Limit: 1})
	if err != nil {
		return err
	}
	as, err := store.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{Limit: 1, IncludeSuperseded: true})
	if err != nil {
		return err
	}
	// An agent others share blocks with exists too: importing under its
	// id would hand the imported agent what was shared with it.
	ss, err := store.Agent(agent).SharedBlocks(ctx)
	if err != nil {
		return err
	}
	if len(bs) > 0 || len(ms) > 0 || len(as) > 0 || len(ss) > 0 {
		return exists
	}
	return nil
}

// importer carries one ToDump's state.
type importer struct {
	f *File
	// toolByID indexes the file's tools, built once for all agents.
	toolByID map[string]*Tool
	opts     ImportOptions
	rep      *Report
	d        *memory.Dump
	// ids maps file agent ids to engram agent ids; names the engram ids in
	// use.
	ids   map[string]string
	names map[string]bool
	// owner and label of each block (by file block id), shares, and each
	// agent's blocks' extras.
	blocks map[string]*Block
	owner  map[string]string
	label  map[string]string
	labels map[string]map[string]bool // owner → labels in use
	shared map[string]map[string]bool // block id → agents it is shared with
	exts   map[string]*extension      // engram agent id → its extension
	// argBytes counts, per agent, the argument text its extension keeps.
	argBytes map[string]int
	// toolExtraSize is the size of each tool's kept fields (by file tool
	// id) once seen; toolBudget the bytes of tool fields the extensions may
	// still take (see ToolExtraAllowance).
	toolExtraSize map[string]int
	toolBudget    int
	msgID         int64
	archID        int64
	summary       int64
}

// ToDump maps an agent file onto engram's dump, without touching a store:
//
//   - each agent becomes an engram agent, its id the agent's name (or
//     ImportOptions.Agent); a name two agents share gets a suffix;
//   - each block becomes a Core block of the first agent that lists it:
//     label, value (byte for byte), description, limit as the character
//     limit, read_only as the owner's permission (ReadOnly, else
//     ReadWrite); other agents that list it, and the agents of a group
//     whose shared_block_ids name it, get it shared (ReadOnly or
//     ReadWrite as the block);
//   - the agent's system prompt, its tools' JSON Schemas and descriptions,
//     its tool rules (see mapRule) and its model become its profile;
//     what engram does not model is kept in the profile's "letta"
//     extension (see extension) and written back by an export;
//   - messages become messages in batches (a batch begins at a user
//     message once every tool call before it has its result), tool calls
//     and results paired by call id, in the file's order; the compiled
//     system prompt Letta keeps as the first message in context is not a
//     message (engram builds it from the profile and the blocks); a
//     summary covers the start of the history that agrees best with
//     Letta's context window (see contextCut); a call's arguments keep
//     their text in the extension when it is not compact JSON;
//   - files become archival entries of the agents whose sources hold them
//     (in chunks), tagged "letta" and "letta-file", their source, name and
//     path in the metadata; a source's description and instructions
//     become an entry tagged "letta-source".
//
// The Report lists all of it, and what was kept only as metadata or not
// kept, with why.
func ToDump(f *File, o *ImportOptions) (*memory.Dump, *Report, error) {
	var opts ImportOptions
	if o != nil {
		opts = *o
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	im := &importer{f: f, opts: opts, rep: &Report{Direction: "import"}, d: &memory.Dump{Version: memory.DumpVersion},
		ids: map[string]string{}, names: map[string]bool{}, blocks: map[string]*Block{}, owner: map[string]string{},
		label: map[string]string{}, labels: map[string]map[string]bool{}, shared: map[string]map[string]bool{}, exts: map[string]*extension{},
		argBytes: map[string]int{}}
	if err := im.agentIDs(); err != nil {
		return nil, nil, err
	}
	if err := im.blocksAndShares(); err != nil {
		return nil, nil, err
	}
	for i := range f.Agents {
		a := &f.Agents[i]
		id := im.ids[a.ID]
		if err := im.profile(a, id); err != nil {
			return nil, nil, err
		}
		if err := im.messages(a, id); err != nil {
			return nil, nil, err
		}
		im.files(a, id)
	}
	im.groups()
	im.fileLevel()
	// Every agent gets a profile: it carries the extension, and its
	// uniqueness makes a second import of the same agent fail.
	for i := range f.Agents {
		id := im.ids[f.Agents[i].ID]
		for j := range im.d.Profiles {
			if im.d.Profiles[j].Agent != id {
				continue
			}
			if e := im.exts[id]; e != nil && !e.empty() {
				raw, err := json.Marshal(e)
				if err != nil {
					return nil, nil, fmt.Errorf("letta: agent %q: extension: %w", id, err)
				}
				im.d.Profiles[j].Profile.Extensions = map[string]json.RawMessage{ExtensionName: raw}
			}
		}
	}
	return im.d, im.rep, nil
}

// agentIDs names every agent.
func (im *importer) agentIDs() error {
	if im.opts.Agent != "" && len(im.f.Agents) != 1 {
		return fmt.Errorf("%w: an agent id can rename the only agent of a file; this one has %d", ErrInvalid, len(im.f.Agents))
	}
	if len(im.f.Agents) == 0 {
		return fmt.Errorf("%w: the file holds no agent", ErrInvalid)
	}
	for i, a := range im.f.Agents {
		if a.ID == "" {
			return fmt.Errorf("%w: agent %d (%q) has no id", ErrInvalid, i, a.Name)
		}
		if _, dup := im.ids[a.ID]; dup {
			return fmt.Errorf("%w: two agents have the id %q", ErrInvalid, a.ID)
		}
		id := strings.TrimSpace(a.Name)
		if im.opts.Agent != "" {
			id = strings.TrimSpace(im.opts.Agent)
		}
		if id == "" {
			return fmt.Errorf("%w: agent %q has no name (give it an id)", ErrInvalid, a.ID)
		}
		base := id
		for n := 2; im.names[id]; n++ {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		if id != base {
			im.rep.mapped(id, "agent name "+base, 1, fmt.Sprintf("agent %q: another agent of the file has the name", id))
		}
		im.ids[a.ID], im.names[id] = id, true
		im.exts[id] = &extension{}
		im.rep.agent(a.Name, a.ID, id)
		im.rep.mapped(id, "agent", 1, fmt.Sprintf("agent %q (file id %s)", id, a.ID))
	}
	return nil
}

// blocksAndShares gives every block an owner and a label, makes its
// document, and shares it with the other agents that list it.
func (im *importer) blocksAndShares() error {
	for i := range im.f.Blocks {
		b := &im.f.Blocks[i]
		if b.ID == "" {
			return fmt.Errorf("%w: block %d (%q) has no id", ErrInvalid, i, b.Label)
		}
		if _, dup := im.blocks[b.ID]; dup {
			return fmt.Errorf("%w: two blocks have the id %q", ErrInvalid, b.ID)
		}
		im.blocks[b.ID] = b
	}
	// Blocks given inline (CreateAgent's memory_blocks) belong to their
	// agent alone.
	for i := range im.f.Agents {
		a := &im.f.Agents[i]
		for j := range a.MemoryBlocks {
			b := a.MemoryBlocks[j]
			// An id no block of the file has (a file may hold any id,
			// this one too): another agent naming it must not get a share.
			b.ID = fmt.Sprintf("%s/memory_blocks/%d", a.ID, j)
			for _, taken := im.blocks[b.ID]; taken; _, taken = im.blocks[b.ID] {
				b.ID += "'"
			}
			im.blocks[b.ID] = &b
			a.BlockIDs = append(a.BlockIDs, b.ID)
		}
	}
	var order []string // block ids in the order owners were found
	see := func(agentID, blockID string) {
		id := im.ids[agentID]
		if _, ok := im.blocks[blockID]; !ok {
			im.rep.notKept(id, "block id "+blockID, 1, "the agent lists it but the file holds no such block")
			return
		}
		own, ok := im.owner[blockID]
		switch {
		case !ok:
			im.owner[blockID] = id
			order = append(order, blockID)
		case own != id:
			if im.shared[blockID] == nil {
				im.shared[blockID] = map[string]bool{}
			}
			im.shared[blockID][id] = true
		}
	}
	for _, a := range im.f.Agents {
		for _, bid := range a.BlockIDs {
			see(a.ID, bid)
		}
	}
	for _, g := range im.f.Groups {
		members := groupMembers(g)
		for _, bid := range g.SharedBlockIDs {
			for _, m := range members {
				if _, ok := im.ids[m]; ok {
					see(m, bid)
				}
			}
		}
	}
	for _, b := range im.f.Blocks {
		if _, ok := im.owner[b.ID]; !ok {
			im.rep.notKept("", fmt.Sprintf("block %q (%s)", b.Label, b.ID), 1, "no agent of the file lists it")
		}
	}
	now := im.opts.Now()
	for _, bid := range order {
		if err := im.block(im.blocks[bid], im.owner[bid], now); err != nil {
			return err
		}
	}
	for _, bid := range order {
		b := im.blocks[bid]
		sharees := sortedKeys(im.shared[bid])
		perm := blocks.ReadWrite
		if b.ReadOnly {
			perm = blocks.ReadOnly
		}
		for _, s := range sharees {
			im.d.Shares = append(im.d.Shares, memory.DumpShare{Owner: im.owner[bid], Label: im.label[bid], Agent: s, Permission: perm})
			im.rep.agent("", "", s).SharedWithIt++
			im.rep.mapped(s, "block listed by several agents", 1, fmt.Sprintf("a share of the first one's block (%s)", perm))
		}
	}
	return nil
}

// ToolExtraAllowance bounds the tool fields an import copies into agent
// profiles: a tool's fields engram does not model (source code among
// them) are kept in the profile of each agent that lists it, and all those
// copies together may take this many bytes plus twice the size of each
// tool's fields. The first agent listing a tool always keeps them; an
// agent past the budget gets the tool's definition without them (reported).
const ToolExtraAllowance = 1 << 20

// chargeToolExtra takes the size of one copy of tool tid's kept fields
// from the import's budget, reporting whether it fits.
func (im *importer) chargeToolExtra(tid string, extra map[string]json.RawMessage) bool {
	n, seen := im.toolExtraSize[tid]
	if !seen {
		for k, v := range extra {
			n += len(k) + len(v) + 4
		}
		if im.toolExtraSize == nil {
			im.toolExtraSize = map[string]int{}
			im.toolBudget = ToolExtraAllowance
		}
		im.toolExtraSize[tid] = n
		im.toolBudget += 2 * n
	}
	if n > im.toolBudget {
		return false
	}
	im.toolBudget -= n
	return true
}

// groupMembers are a group's agents, its manager first when it has one.
func groupMembers(g Group) []string {
	var out []string
	seen := map[string]bool{}
	if m := g.managerAgentID(); m != "" {
		out = append(out, m)
		seen[m] = true
	}
	for _, a := range g.AgentIDs {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// block makes one block of owner.
func (im *importer) block(b *Block, owner string, now time.Time) error {
	ext := im.exts[owner]
	label := b.Label
	extra := map[string]json.RawMessage{}
	for k, v := range b.Extra {
		extra[k] = v
	}
	if err := blocks.CheckLabel(label); err != nil {
		label = blocks.SuggestLabel(label)
		if label == "" {
			label = "block"
		}
		im.rep.mapped(owner, fmt.Sprintf("block label %q", b.Label), 1, fmt.Sprintf("label %q (a label is %s)", label, blocks.LabelRule))
	}
	if im.labels[owner] == nil {
		im.labels[owner] = map[string]bool{}
	}
	base := label
	for n := 2; im.labels[owner][label]; n++ {
		label = fmt.Sprintf("%s_%d", base, n)
	}
	if label != b.Label {
		raw, _ := json.Marshal(b.Label)
		extra["label"] = raw
		if base == b.Label {
			im.rep.mapped(owner, fmt.Sprintf("block label %q", b.Label), 1, fmt.Sprintf("label %q (another block of the agent has the label)", label))
		}
	}
	im.labels[owner][label] = true
	im.label[b.ID] = label

	chars := utf8.RuneCountInString(b.Value)
	if !utf8.ValidString(b.Value) {
		return fmt.Errorf("%w: block %q of %q: the value is not valid UTF-8", ErrInvalid, b.Label, owner)
	}
	limit := 0
	if b.Limit != nil {
		limit = *b.Limit
	}
	switch {
	case chars > blocks.MaxCharLimit:
		return fmt.Errorf("%w: block %q of %q holds %d characters, over engram's largest block (%d): keep such text as archival entries",
			ErrInvalid, b.Label, owner, chars, blocks.MaxCharLimit)
	case limit <= 0:
		limit = max(blocks.DefaultCharLimit, chars)
		im.rep.mapped(owner, fmt.Sprintf("block %q without a limit", label), 1, fmt.Sprintf("character limit %d", limit))
	case limit < chars:
		im.rep.mapped(owner, fmt.Sprintf("block %q: limit %d below its %d characters", label, limit, chars), 1,
			fmt.Sprintf("character limit %d (the value is kept whole); an export writes %d back", chars, limit))
		raw, _ := json.Marshal(limit)
		extra["limit"] = raw
		limit = chars
	case limit > blocks.MaxCharLimit:
		im.rep.mapped(owner, fmt.Sprintf("block %q: limit %d", label, limit), 1,
			fmt.Sprintf("character limit %d, engram's largest; an export writes %d back", blocks.MaxCharLimit, limit))
		raw, _ := json.Marshal(limit)
		extra["limit"] = raw
		limit = blocks.MaxCharLimit
	}
	perm := blocks.ReadWrite
	if b.ReadOnly {
		perm = blocks.ReadOnly
	}
	desc := ""
	if b.Description != nil {
		desc = *b.Description
	} else {
		extra["description"] = json.RawMessage("null")
	}
	info := blocks.Info{Label: label, Description: desc, Type: blocks.Core, Schema: schema.Text{}, Permission: perm,
		CharLimit: limit, Owner: owner}
	doc, err := blocks.New(info, &blocks.Options{Now: im.opts.Now})
	if err != nil {
		return fmt.Errorf("letta: block %q of %q: %w", label, owner, err)
	}
	if b.Value != "" {
		if err := doc.SetValue(b.Value, blocks.System); err != nil {
			return fmt.Errorf("letta: block %q of %q: value: %w", label, owner, err)
		}
	}
	data, err := doc.Save()
	if err != nil {
		return fmt.Errorf("letta: block %q of %q: %w", label, owner, err)
	}
	sj, err := schema.Marshal(info.Schema)
	if err != nil {
		return err
	}
	im.d.Blocks = append(im.d.Blocks, memory.DumpBlock{Owner: owner, Label: label, Description: desc, Type: info.Type,
		Permission: perm, Schema: sj, CharLimit: limit, Document: data, Heads: doc.Heads(), Rendered: doc.Render(),
		CreatedAt: now.UnixNano(), UpdatedAt: now.UnixNano()})
	im.rep.agent("", "", owner).Blocks++
	im.rep.mapped(owner, "block", 1, "Core block: label, value, description, limit as character limit, read_only as ReadOnly")
	if len(extra) > 0 {
		if ext.Blocks == nil {
			ext.Blocks = map[string]map[string]json.RawMessage{}
		}
		ext.Blocks[label] = extra
		im.rep.meta(owner, "block fields "+strings.Join(sortedKeys(extra), ", "), 1, "engram blocks have no such fields; an export writes them back")
	}
	return nil
}

// profile makes agent a's profile: system prompt, tools, rules, model.
func (im *importer) profile(a *Agent, id string) error {
	ext := im.exts[id]
	p := memory.Profile{System: a.System}
	im.rep.mapped(id, "system", 1, "the profile's system prompt (the builder's base instructions)")

	// The model: llm_config's, else the agent's model handle.
	var llm struct {
		Model         string `json:"model"`
		ContextWindow int    `json:"context_window"`
	}
	if len(a.LLMConfig) > 0 && !bytes.Equal(a.LLMConfig, []byte("null")) {
		if err := json.Unmarshal(a.LLMConfig, &llm); err != nil {
			return fmt.Errorf("%w: agent %q: llm_config: %v", ErrInvalid, id, err)
		}
	}
	var handle string
	if len(a.Model) > 0 && a.Model[0] == '"' {
		_ = json.Unmarshal(a.Model, &handle)
	}
	p.Model, p.ContextWindow = llm.Model, llm.ContextWindow
	if p.Model == "" && handle != "" {
		_, name, ok := strings.Cut(handle, "/")
		if !ok {
			name = handle
		}
		p.Model = name
	}
	if p.Model != "" {
		im.rep.mapped(id, "llm_config", 1, "the profile's model and context window (the whole configuration kept as metadata)")
	}

	// Tools.
	if im.toolByID == nil {
		im.toolByID = make(map[string]*Tool, len(im.f.Tools))
		for i := range im.f.Tools {
			im.toolByID[im.f.Tools[i].ID] = &im.f.Tools[i]
		}
	}
	toolNames := map[string]bool{}
	for _, tid := range a.ToolIDs {
		t, ok := im.toolByID[tid]
		if !ok {
			im.rep.notKept(id, "tool id "+tid, 1, "the agent lists it but the file holds no such tool")
			continue
		}
		if toolNames[t.Name] {
			im.rep.notKept(id, fmt.Sprintf("tool %q (%s)", t.Name, tid), 1, "another tool of the agent has the name")
			continue
		}
		def, extra, err := toolDefinition(t)
		if err != nil {
			return fmt.Errorf("%w: agent %q: tool %q: %v", ErrInvalid, id, t.Name, err)
		}
		p.Tools = append(p.Tools, def)
		toolNames[def.Name] = true
		im.rep.agent("", "", id).Tools++
		im.rep.mapped(id, "tool", 1, "a tool definition of the profile (name, description, JSON Schema of the parameters)")
		if len(extra) > 0 && !im.chargeToolExtra(tid, extra) {
			im.rep.notKept(id, fmt.Sprintf("fields engram does not model of tool %q (%s)", t.Name, tid), 1,
				fmt.Sprintf("the copies of tools' fields in the agents' profiles passed the import's budget (%d bytes plus twice each tool's fields); another agent's profile keeps them", ToolExtraAllowance))
			extra = nil
		}
		if len(extra) > 0 {
			if ext.Tools == nil {
				ext.Tools = map[string]map[string]json.RawMessage{}
			}
			ext.Tools[def.Name] = extra
			if _, ok := extra["source_code"]; ok {
				im.rep.meta(id, "tool source code", 1, "engram offers tool definitions and never runs their code; an export writes it back")
			}
		}
	}
	for _, name := range a.Tools {
		if !toolNames[name] {
			im.rep.notKept(id, fmt.Sprintf("tool %q", name), 1, "named by the agent without a definition in the file")
		}
	}

	// Tool rules.
	for _, r := range a.ToolRules {
		m := mapRule(r)
		what := fmt.Sprintf("tool rule %s on %q", r.Type, r.ToolName)
		if !m.ok {
			ext.ToolRules = append(ext.ToolRules, r)
			im.rep.meta(id, what, 1, m.note)
			continue
		}
		p.ToolRules = append(p.ToolRules, m.rules...)
		im.rep.agent("", "", id).ToolRules++
		why := "engram rule: " + ruleNames(m.rules)
		if m.note != "" {
			why += " (" + m.note + ")"
		}
		im.rep.mapped(id, what, 1, why)
		if r.PromptTemplate != nil && *r.PromptTemplate != "" {
			im.rep.notKept(id, "prompt_template of "+what, 1, "engram renders its own sentence for each rule")
		}
	}
	if probs := toolrules.Validate(p.ToolRules); len(probs) > 0 {
		for _, pr := range probs {
			if pr.Kind == toolrules.ProblemInvalid {
				return fmt.Errorf("%w: agent %q: tool rule: %s", ErrInvalid, id, pr)
			}
			im.rep.mapped(id, "tool rules", 1, "kept although engram's check finds: "+pr.String())
		}
	}

	// Everything else about the agent, but secrets.
	extra := map[string]json.RawMessage{}
	for k, v := range a.Extra {
		extra[k] = v
	}
	if len(a.LLMConfig) > 0 && !bytes.Equal(a.LLMConfig, []byte("null")) {
		extra["llm_config"] = a.LLMConfig
	}
	if len(a.Model) > 0 && !bytes.Equal(a.Model, []byte("null")) {
		extra["model"] = a.Model
	}
	for _, k := range sortedKeys(a.Extra) {
		if isNullish(a.Extra[k]) {
			continue
		}
		im.rep.meta(id, "agent field "+k, 1, "engram has no such setting; an export writes it back")
	}
	for _, k := range secretKeys(a.Secrets) {
		im.rep.notKept(id, "secret "+k, 1, "secrets are never stored or exported; set it again where the agent runs")
	}
	for _, k := range secretKeys(a.ToolExecEnvVariables) {
		im.rep.notKept(id, "tool environment variable "+k, 1, "may hold a secret: never stored or exported; set it again where the tools run")
	}
	if len(a.FilesAgents) > 0 {
		im.rep.notKept(id, "files_agents", len(a.FilesAgents), "which files were open and their visible windows: engram has no open-file state (the files' text is in archival)")
	}
	if len(extra) > 0 {
		ext.Agent = extra
	}
	im.d.Profiles = append(im.d.Profiles, memory.DumpProfile{Agent: id, Profile: p})
	return nil
}

// toolDefinition is t as a profile's tool, and its other fields.
func toolDefinition(t *Tool) (memory.ToolDefinition, map[string]json.RawMessage, error) {
	def := memory.ToolDefinition{Name: t.Name}
	extra := map[string]json.RawMessage{}
	for k, v := range t.Extra {
		extra[k] = v
	}
	var js map[string]json.RawMessage
	if len(t.JSONSchema) > 0 && !bytes.Equal(t.JSONSchema, []byte("null")) {
		if err := json.Unmarshal(t.JSONSchema, &js); err != nil {
			return def, nil, fmt.Errorf("json_schema is not an object: %v", err)
		}
	}
	var schemaDesc string
	if raw, ok := js["description"]; ok {
		_ = json.Unmarshal(raw, &schemaDesc)
	}
	toolDesc := ""
	if t.Description != nil {
		toolDesc = *t.Description
	}
	def.Description = cmpOr(schemaDesc, toolDesc)
	if toolDesc != def.Description || t.Description == nil {
		raw, _ := json.Marshal(t.Description)
		extra["description"] = raw
	}
	if params, ok := js["parameters"]; ok && !isNullish(params) {
		def.Parameters = params
	}
	rest := map[string]json.RawMessage{}
	for k, v := range js {
		switch k {
		case "description", "parameters":
		case "name":
			var n string
			if json.Unmarshal(v, &n) == nil && n == t.Name {
				continue
			}
			rest[k] = v
		default:
			rest[k] = v
		}
	}
	if _, ok := js["description"]; !ok && js != nil {
		rest["description"] = json.RawMessage("null") // absent from the schema: written back absent
	}
	if js == nil {
		extra["json_schema"] = json.RawMessage("null")
	} else if len(rest) > 0 {
		raw, _ := json.Marshal(rest)
		extra["json_schema_extra"] = raw
	}
	if len(extra) == 0 {
		extra = nil
	}
	return def, extra, nil
}

func ruleNames(rules []toolrules.Rule) string {
	var parts []string
	for _, r := range rules {
		parts = append(parts, r.String())
	}
	return strings.Join(parts, "; ")
}

// isNullish reports JSON null, false, 0, "", [] or {}: a field that says
// nothing.
func isNullish(raw json.RawMessage) bool {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false", "0", `""`, "[]", "{}":
		return true
	}
	return false
}

// secretKeys names the keys of a secrets or environment object (a JSON
// object of name → value, or a list of {key, value} objects), never the
// values.
func secretKeys(raw json.RawMessage) []string {
	if isNullish(raw) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		return sortedKeys(obj)
	}
	var list []struct {
		Key string `json:"key"`
	}
	if json.Unmarshal(raw, &list) == nil {
		var out []string
		for i, e := range list {
			out = append(out, cmpOr(e.Key, fmt.Sprintf("#%d", i)))
		}
		return out
	}
	return []string{"(unreadable)"}
}
