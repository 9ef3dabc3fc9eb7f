package builder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/toolrules"
)

// ErrInvalid is wrapped by errors about malformed builder input (no agent,
// bad tool definitions, ...).
var ErrInvalid = errors.New("builder: invalid input")

// DefaultBaseInstructions are used when WithBaseInstructions was not called.
const DefaultBaseInstructions = `You are a helpful assistant with persistent memory.
Your memory is kept in blocks, shown below, each between tags named after its label. A block's permission attribute says how you may change it with your memory tools.`

// PlaceholderUserMessage starts a history that would otherwise not begin
// with a user message, for models that require one (ModelInfo.UserFirst).
const PlaceholderUserMessage = "(The conversation continues.)"

// sectionSeparator joins system prompt sections and blocks.
const sectionSeparator = "\n\n"

// Builder assembles a Request from memory, history, tools and rules. It is a
// value: every With* method returns a modified copy and leaves the receiver
// untouched, so a partly configured Builder can be reused. Its caches live
// in ContextConfig.Cache and are safe to share.
type Builder struct {
	mem         Agent
	opt         optional // mem's optional parts, found once by New
	cfg         ContextConfig
	cache       *Cache
	agent       string
	history     MessageSource
	tools       ToolRegistry
	base        string
	baseSet     bool
	rules       []toolrules.Rule
	model       ModelInfo
	batchBlocks []string
	attachments []Attachment
	active      string
	activeSet   bool
	current     []memory.Message
	env         *Environment
	turn        []Artifact
	recallQuery string
	// recallQuerySet: WithRecallQuery was called.
	recallQuerySet bool
	// profile is the profile WithProfile set (profileSet); noProfile:
	// WithoutProfile was called.
	profile    memory.Profile
	profileSet bool
	noProfile  bool
}

// New starts a Builder reading the memory of agent a (its handle,
// store.Agent(id), or anything else with Agent's few methods). Zero fields
// of cfg mean their defaults (see ContextConfig); a nil cfg.Cache gets a
// new Cache for this Builder and its copies. When a is also a
// LibraryStore, the context library uses it.
func New(a Agent, cfg ContextConfig) Builder {
	c := cfg.Cache
	if c == nil {
		c = NewCache()
	}
	return Builder{cfg: cfg.withDefaults(), cache: c}.ForAgent(a)
}

// ForAgent makes the build read the memory of agent a instead: a
// configured Builder reused for another agent. The history source set by
// WithMessages is the previous agent's; set the new agent's too.
func (b Builder) ForAgent(a Agent) Builder {
	b.mem, b.agent, b.opt = a, "", optional{}
	if a != nil {
		b.agent, b.opt = a.ID(), optionalParts(a)
	}
	return b
}

// WithMessages sets the history source: the agent's messages, usually
// a.Messages() of the Builder's agent.
func (b Builder) WithMessages(src MessageSource) Builder {
	b.history = src
	return b
}

// WithTools sets the tool definitions offered.
func (b Builder) WithTools(r ToolRegistry) Builder {
	b.tools = r
	return b
}

// WithBaseInstructions replaces DefaultBaseInstructions.
func (b Builder) WithBaseInstructions(s string) Builder {
	b.base, b.baseSet = s, true
	return b
}

// WithToolRules adds tool rules, rendered as the "# Tool Execution Rules"
// section.
func (b Builder) WithToolRules(rules ...toolrules.Rule) Builder {
	b.rules = append(slices.Clip(b.rules), rules...)
	return b
}

// WithModelInfo sets the target model: it selects limits, tokenizer and
// message adjustments.
func (b Builder) WithModelInfo(info ModelInfo) Builder {
	b.model = info
	return b
}

// WithBatchBlocks names Working blocks the current batch refers to: they
// are included even when not pinned.
func (b Builder) WithBatchBlocks(labels ...string) Builder {
	b.batchBlocks = append(slices.Clip(b.batchBlocks), labels...)
	return b
}

// WithAttachment adds keyed context (replacing an attachment with the same
// key, in place). Essential attachments are never pruned; otherwise a higher
// priority number is dropped first.
func (b Builder) WithAttachment(key, content string, priority int, essential bool) Builder {
	a := Attachment{Key: key, Content: content, Priority: priority, Essential: essential}
	b.attachments = replaceOrAppend(slices.Clone(b.attachments), a, func(x Attachment) bool { return x.Key == key })
	return b
}

// replaceOrAppend replaces the first element of s that is the same as v
// (in place, keeping its position) or appends v.
func replaceOrAppend[T any](s []T, v T, same func(T) bool) []T {
	if i := slices.IndexFunc(s, same); i >= 0 {
		s[i] = v
		return s
	}
	return append(s, v)
}

// WithActiveBatch names the batch being processed: never compressed or
// dropped. Without it, the batch of the newest message is active when that
// batch is incomplete. Setting it also spares a query per build.
func (b Builder) WithActiveBatch(id string) Builder {
	b.active, b.activeSet = id, true
	return b
}

// WithProfile sets the agent profile the build uses instead of the one the
// store keeps for the agent. By default (neither WithProfile nor
// WithoutProfile) a build reads the agent's profile from its store when
// the store is a ProfileStore, as *memory.Store is. A profile fills in
// what the caller leaves unset:
//
//   - System becomes the base instructions unless WithBaseInstructions was
//     called;
//   - Tools are offered after the WithTools registry's, except those whose
//     name the registry already uses (the registry's definition wins);
//   - ToolRules are added after the WithToolRules rules;
//   - Model selects the model (limits, tokenizer, request shape) unless
//     WithModelInfo named one.
//
// Metadata.Profile lists the parts a build took from the profile.
func (b Builder) WithProfile(p memory.Profile) Builder {
	b.profile, b.profileSet, b.noProfile = p, true, false
	return b
}

// WithoutProfile builds without any profile: neither one set by
// WithProfile nor the agent's stored one.
func (b Builder) WithoutProfile() Builder {
	b.profile, b.profileSet, b.noProfile = memory.Profile{}, false, true
	return b
}

// WithCurrentMessage appends a message that is not stored (yet) to the end
// of the history, in the active batch.
func (b Builder) WithCurrentMessage(m memory.Message) Builder {
	b.current = append(slices.Clip(b.current), m)
	return b
}

// fetched is everything Build reads from the store.
type fetched struct {
	own      []memory.BlockMeta
	shared   []memory.SharedBlock
	render   *renderMemo // renderings of own and shared's blocks; nil: none kept
	msgs     []memory.Message
	batches  []memory.Batch
	hist     *histEntry // cache entry of msgs, if any
	activity string
	library  []memory.LibraryEntry
	recalled []RecalledMemory
	profile  *memory.Profile // the agent's stored profile (nil: none, or not read)
	timings  Timings
}

// Build reads memory and history and assembles the Request.
func (b Builder) Build(ctx context.Context) (*Request, error) {
	start := time.Now()
	f, err := b.fetch(ctx)
	if err != nil {
		return nil, err
	}
	b, used := b.withProfileParts(f)
	req, err := b.assemble(ctx, f)
	if err != nil {
		return nil, err
	}
	req.Metadata.Profile = used
	req.Metadata.Timings.Total = time.Since(start)
	return req, nil
}

func (b Builder) fetch(ctx context.Context) (fetched, error) {
	var f fetched
	start := time.Now()
	if strings.TrimSpace(b.agent) == "" {
		return f, fmt.Errorf("%w: no agent (New's agent handle is nil or has an empty id)", ErrInvalid)
	}
	// The build sees every commit that completed before it began: one
	// check of the database's version serves the blocks and the history
	// (only: callbacks further on may write and read their own writes).
	once := memory.WithVersionCheckOnce(ctx)
	var err error
	var ps ProfileStore
	if !b.noProfile && !b.profileSet {
		ps = b.opt.profile
	}
	if f.own, f.shared, f.render, f.profile, err = b.cache.blockLists(once, b.mem, b.agent, ps); err != nil {
		return f, err
	}
	if b.history != nil {
		if f.msgs, f.batches, f.hist, err = b.cache.history(once, b.history, b.agent, b.active); err != nil {
			return f, err
		}
	}
	if r := b.cfg.ActivityRenderer; r != nil {
		if f.activity, err = r.RenderActivity(ctx, b.mem, b.cfg.ActivityEntriesLimit); err != nil {
			return f, fmt.Errorf("builder: activity of %q: %w", b.agent, err)
		}
	}
	f.timings.Fetch = time.Since(start)
	if b.cfg.Library != nil {
		t := time.Now()
		ls := b.opt.library
		if ls == nil {
			return f, fmt.Errorf("%w: ContextConfig.Library is set but the agent keeps no context library", ErrInvalid)
		}
		if f.library, err = ls.ContextLibrary(ctx); err != nil {
			return f, fmt.Errorf("builder: context library of %q: %w", b.agent, err)
		}
		f.timings.Library = time.Since(t)
	}
	if ro := b.cfg.Recall; ro != nil {
		t := time.Now()
		if f.recalled, err = b.recall(ctx, ro, f); err != nil {
			return f, err
		}
		f.timings.Recall = time.Since(t)
	}
	return f, nil
}

// Profile parts, as Metadata.Profile names them.
const (
	ProfileSystem    = "system"
	ProfileTools     = "tools"
	ProfileToolRules = "tool_rules"
	ProfileModel     = "model"
)

// withProfileParts returns b with what the profile in effect (WithProfile's,
// else the agent's stored one) fills in, and the parts it filled (see
// WithProfile).
func (b Builder) withProfileParts(f fetched) (Builder, []string) {
	p := f.profile
	if b.profileSet {
		p = &b.profile
	}
	if b.noProfile || p == nil {
		return b, nil
	}
	var used []string
	if !b.baseSet && strings.TrimSpace(p.System) != "" {
		b.base, b.baseSet = p.System, true
		used = append(used, ProfileSystem)
	}
	if len(p.Tools) > 0 {
		var given []Tool
		if b.tools != nil {
			given = b.tools.Tools()
		}
		names := make(map[string]bool, len(given))
		for _, t := range given {
			names[t.Name] = true
		}
		all := slices.Clip(slices.Clone(given))
		added := false
		for _, t := range p.Tools {
			if !names[t.Name] {
				all = append(all, Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
				added = true
			}
		}
		if added {
			b.tools = ToolList(all)
			used = append(used, ProfileTools)
		}
	}
	if len(p.ToolRules) > 0 {
		b.rules = append(slices.Clip(b.rules), p.ToolRules...)
		used = append(used, ProfileToolRules)
	}
	if b.model.Name == "" && p.Model != "" {
		b.model = ModelInfoFor(p.Model)
		used = append(used, ProfileModel)
	}
	return b, used
}

// recall asks the Recaller for memories relevant to the recall query.
func (b Builder) recall(ctx context.Context, ro *RecallOptions, f fetched) ([]RecalledMemory, error) {
	q := b.recallQuery
	if !b.recallQuerySet {
		q = b.currentUserText(f)
	}
	if strings.TrimSpace(q) == "" {
		return nil, nil
	}
	r := ro.Recaller
	if r == nil {
		r = StoreRecaller{Mode: ro.Mode}
	}
	limit := ro.Limit
	if limit <= 0 {
		limit = DefaultRecallLimit
	}
	got, err := r.Recall(ctx, b.mem, q, limit)
	if err != nil {
		return nil, fmt.Errorf("builder: recall memories of %q: %w", b.agent, err)
	}
	return got, nil
}

// currentUserText is the text of the current user message (see
// turnMessage).
func (b Builder) currentUserText(f fetched) string {
	for i := len(b.current) - 1; i >= 0; i-- {
		if b.current[i].Role == memory.RoleUser {
			return b.current[i].Content
		}
	}
	if len(b.current) > 0 {
		return ""
	}
	if i := turnMessage(f.msgs, 0, b.activeBatch(f)); i >= 0 {
		return f.msgs[i].Content
	}
	return ""
}

// item is a block or attachment competing for the memory budget.
type item struct {
	kind       string // "block" / "attachment"
	section    string
	label      string
	owner      string
	typ        blocks.Type
	priority   int
	keep       bool // Core blocks and essential attachments
	pos        int
	start, end int // bytes of the system prompt
	tokens     int
	dropped    bool
	meta       *memory.BlockMeta // blocks only, for trimming
	// trimmed replaces the rendering when the block was cut to whole
	// lines; trimmedLines is how many lines were left out.
	trimmed      string
	trimmedLines int
}

func (b Builder) counter() (TokenCounter, []string) {
	if b.cfg.Counter != nil {
		return b.cfg.Counter, nil
	}
	enc := b.model.Encoding
	if enc == "" {
		enc = EncodingForModel(b.model.Name)
	}
	c, err := b.cache.Encoding(enc)
	if err != nil {
		return CharCounter{}, []string{fmt.Sprintf("token counts are chars/4 estimates: %v", err)}
	}
	return c, nil
}

// fixedSection is a system prompt section of given text.
type fixedSection struct {
	name   string
	stable bool
	text   string
	tokens int
}

// promptWriter lays out the system prompt in one buffer: sections joined
// by a blank line, memory items joined the same way.
type promptWriter struct {
	sys      strings.Builder
	sections []Section
	bounds   [][2]int
}

func (w *promptWriter) sep() {
	if w.sys.Len() > 0 {
		w.sys.WriteString(sectionSeparator)
	}
}

// open starts a section at the current end of the prompt; close ends it.
func (w *promptWriter) open(name string) {
	w.sections = append(w.sections, Section{Name: name})
	w.bounds = append(w.bounds, [2]int{w.sys.Len(), w.sys.Len()})
}

func (w *promptWriter) close() { w.bounds[len(w.bounds)-1][1] = w.sys.Len() }

func (w *promptWriter) fixed(s fixedSection) {
	if s.text == "" {
		return
	}
	w.sep()
	w.open(s.name)
	w.sys.WriteString(s.text)
	w.sections[len(w.sections)-1].Tokens = s.tokens
	w.sections[len(w.sections)-1].Stable = s.stable
	w.close()
}

// memory copies the items not dropped (laid out in src by memoryItems)
// into the prompt as the Core, Working and attachment sections.
func (w *promptWriter) memory(src string, items []item) {
	whole := !changedItems(items)
	if whole && len(items) > 0 {
		// The common case: everything fits, copy the layout as it is.
		w.sep()
		off := w.sys.Len()
		w.sys.WriteString(src)
		for i := range items {
			items[i].start += off
			items[i].end += off
		}
	} else {
		w.writeItems(src, items)
	}
	w.memorySections(items)
}

// memoryInPlace is memory for items memoryItems wrote into the prompt
// itself after its first memStart bytes (src is the prompt then): only
// when some were dropped or trimmed is the memory part written again.
func (w *promptWriter) memoryInPlace(src string, memStart int, items []item) {
	if changedItems(items) {
		w.sys.Reset()
		w.sys.Grow(len(src))
		w.sys.WriteString(src[:memStart])
		w.writeItems(src, items)
	}
	w.memorySections(items)
}

// changedItems reports whether an item was dropped or trimmed.
func changedItems(items []item) bool {
	for i := range items {
		if items[i].dropped || items[i].trimmed != "" {
			return true
		}
	}
	return false
}

// writeItems writes the items not dropped, each from src or its trimmed
// form, and moves their offsets to the prompt.
func (w *promptWriter) writeItems(src string, items []item) {
	for i := range items {
		it := &items[i]
		if it.dropped {
			continue
		}
		text := src[it.start:it.end]
		if it.trimmed != "" {
			text = it.trimmed
		}
		w.sep()
		it.start = w.sys.Len()
		w.sys.WriteString(text)
		it.end = w.sys.Len()
	}
}

// memorySections records the Core, Working and attachment sections of the
// items not dropped.
func (w *promptWriter) memorySections(items []item) {
	for _, name := range []string{SectionCore, SectionWorking, SectionAttachments} {
		start, end, tokens, n := 0, 0, 0, 0
		for i := range items {
			it := &items[i]
			if it.dropped || it.section != name {
				continue
			}
			if n == 0 {
				start = it.start
			} else {
				tokens++ // separator
			}
			end = it.end
			tokens += it.tokens
			n++
		}
		if n > 0 {
			w.sections = append(w.sections, Section{Name: name, Tokens: tokens})
			w.bounds = append(w.bounds, [2]int{start, end})
		}
	}
}

// cond is a ? b : c for two values of one type.
func cond[T any](ok bool, a, b T) T {
	if ok {
		return a
	}
	return b
}

// memorySize estimates the rendered size of the memory items.
func (b Builder) memorySize(f fetched) int {
	size := 0
	for _, m := range f.own {
		size += len(m.Rendered) + len(m.Description) + 2*len(m.Label) + 96
	}
	for _, m := range f.shared {
		size += len(m.Rendered) + len(m.Description) + 2*len(m.Label) + len(m.Owner) + 96
	}
	for _, a := range b.attachments {
		size += len(a.Content) + len(a.Key) + 40
	}
	return size
}

// memoryItems renders the blocks and attachments that may enter the prompt
// into sys, in prompt order (Core, Working, attachments; own blocks by
// creation, then shared ones), joined by blank lines, and lists named batch
// blocks that do not exist.
// memoryItems lays out the memory items in sys; their token counts are
// left to countItems, which counts them together.
func (b Builder) memoryItems(f fetched, sys *strings.Builder) ([]item, []string) {
	ro := RenderOptions{IncludeDescriptions: !b.cfg.OmitDescriptions, IncludeSchemas: b.cfg.IncludeSchemas, ShowCharUsage: b.cfg.ShowCharUsage}
	found := make([]bool, len(b.batchBlocks))
	// Pointers into the listings (or into shared's copies): a BlockMeta is
	// ~200 bytes, and the items keep them.
	n := len(f.own) + len(f.shared)
	core, working := make([]*memory.BlockMeta, 0, n), make([]*memory.BlockMeta, 0, n)
	add := func(m *memory.BlockMeta) {
		switch m.Type {
		case blocks.Core:
			core = append(core, m)
		case blocks.Working:
			named := false
			for i, l := range b.batchBlocks {
				if l == m.Label {
					named, found[i] = true, true
				}
			}
			if m.Pinned || named {
				working = append(working, m)
			}
		}
	}
	own := sortedByID(f.own)
	for i := range own {
		m := &own[i]
		if m.Owner != "" && m.Owner != b.agent {
			continue
		}
		if m.SharedFrom != "" {
			c := *m
			c.SharedFrom = ""
			m = &c
		}
		add(m)
	}
	shared := make([]memory.BlockMeta, 0, len(f.shared))
	for _, s := range f.shared {
		if s.Owner == b.agent || (s.SharedWith != "" && s.SharedWith != b.agent) {
			continue
		}
		m := s.BlockMeta
		if m.SharedFrom == "" {
			m.SharedFrom = m.Owner
		}
		shared = append(shared, m)
	}
	shared = sortedByID(shared)
	for i := range shared {
		add(&shared[i])
	}

	items := make([]item, 0, len(core)+len(working)+len(b.attachments))
	place := func(it item, write func()) {
		if sys.Len() > 0 {
			sys.WriteString(sectionSeparator)
		}
		it.start = sys.Len()
		write()
		it.end = sys.Len()
		it.pos = len(items)
		items = append(items, it)
	}
	for _, group := range [][]*memory.BlockMeta{core, working} {
		for _, m := range group {
			section := SectionCore
			if m.Type == blocks.Working {
				section = SectionWorking
			}
			place(item{kind: "block", section: section, label: m.Label, owner: m.SharedFrom, typ: m.Type,
				priority: m.Priority, keep: m.Type == blocks.Core, meta: m}, func() { f.render.write(sys, m, ro) })
		}
	}
	for _, a := range b.attachments {
		place(item{kind: "attachment", section: SectionAttachments, label: a.Key, priority: a.Priority, keep: a.Essential},
			func() { writeAttachment(sys, a) })
	}
	var missing []string
	for i, ok := range found {
		if !ok && !slices.Contains(missing, b.batchBlocks[i]) {
			missing = append(missing, b.batchBlocks[i])
		}
	}
	return items, missing
}

func sortedByID(ms []memory.BlockMeta) []memory.BlockMeta {
	if slices.IsSortedFunc(ms, cmpID) {
		return ms
	}
	out := slices.Clone(ms)
	slices.SortStableFunc(out, cmpID)
	return out
}

func cmpID(a, b memory.BlockMeta) int {
	switch {
	case a.ID < b.ID:
		return -1
	case a.ID > b.ID:
		return 1
	}
	return 0
}

// prune drops droppable items, highest priority number first (later items
// first among equals), until the memory fits budget (0: no budget). When
// trim is set, the last item to give way may instead be cut to what fits
// (trim reports whether it could).
func prune(items []item, budget int, trim func(it *item, room int) bool) []string {
	if budget <= 0 {
		return nil
	}
	total := 0
	for _, it := range items {
		total += it.tokens
	}
	if total <= budget {
		return nil
	}
	var cand []*item
	for i := range items {
		if !items[i].keep {
			cand = append(cand, &items[i])
		}
	}
	slices.SortStableFunc(cand, func(a, b *item) int {
		if a.priority != b.priority {
			return b.priority - a.priority
		}
		return b.pos - a.pos
	})
	for _, it := range cand {
		if total <= budget {
			break
		}
		if room := budget - (total - it.tokens); trim != nil && room > 0 {
			old := it.tokens
			if trim(it, room) {
				total += it.tokens - old
				continue
			}
		}
		it.dropped = true
		total -= it.tokens
	}
	if total > budget {
		return []string{fmt.Sprintf("Core blocks and essential attachments use %d tokens, over the memory budget of %d", total, budget)}
	}
	return nil
}

// trimmer returns prune's trim function when ContextConfig.TrimTextBlocks
// is set: a Text block is cut to its first lines that fit, with a marker
// saying how many lines were left out.
func (b Builder) trimmer(counter TokenCounter) func(it *item, room int) bool {
	if !b.cfg.TrimTextBlocks {
		return nil
	}
	ro := RenderOptions{IncludeDescriptions: !b.cfg.OmitDescriptions, IncludeSchemas: b.cfg.IncludeSchemas, ShowCharUsage: b.cfg.ShowCharUsage}
	return func(it *item, room int) bool {
		if it.meta == nil || !isTextSchema(it.meta.Schema) {
			return false
		}
		lines := strings.Split(it.meta.Rendered, "\n")
		render := func(k int) string {
			m := *it.meta
			m.Rendered = strings.Join(lines[:k], "\n") + "\n" + trimMarker(len(lines)-k)
			return RenderBlock(m, ro)
		}
		// The largest k (whole lines kept) whose rendering fits room.
		lo, hi := 0, len(lines)-1
		best, bestTok := -1, 0
		for lo <= hi {
			mid := (lo + hi) / 2
			if n := counter.Count(render(mid)); n <= room {
				best, bestTok, lo = mid, n, mid+1
			} else {
				hi = mid - 1
			}
		}
		if best < 1 {
			return false
		}
		it.trimmed, it.tokens, it.trimmedLines = render(best), bestTok, len(lines)-best
		return true
	}
}

// trimMarker closes a block cut to whole lines.
func trimMarker(n int) string {
	return fmt.Sprintf("[… %d more lines not shown: over the memory budget; read the whole block with your memory tools]", n)
}

func isTextSchema(s schema.Schema) bool {
	if s == nil {
		return true
	}
	_, ok := schema.Deref(s).(schema.Text)
	return ok
}

// toolDefs validates and sorts the tools and prices them.
func (b Builder) toolDefs(counter TokenCounter) ([]Tool, []byte, int, error) {
	if b.tools == nil {
		return nil, nil, 0, nil
	}
	tools, digest, err := b.cache.toolJSON(b.tools.Tools())
	if err != nil {
		return nil, nil, 0, err
	}
	tokens := 0
	for _, t := range tools {
		tokens += toolOverhead + counter.Count(t.Name) + counter.Count(t.Description) + counter.Count(string(t.Parameters))
	}
	return tools, digest, tokens, nil
}

// compileTools sorts tools by name, checks them and compacts their
// parameters' JSON; digest is their JSON, one per line.
func compileTools(in []Tool) (tools []Tool, digest []byte, err error) {
	tools = slices.Clone(in)
	slices.SortStableFunc(tools, func(x, y Tool) int { return strings.Compare(x.Name, y.Name) })
	var buf bytes.Buffer
	for i, t := range tools {
		if strings.TrimSpace(t.Name) == "" {
			return nil, nil, fmt.Errorf("%w: tool %d has no name", ErrInvalid, i)
		}
		if i > 0 && tools[i-1].Name == t.Name {
			return nil, nil, fmt.Errorf("%w: two tools named %q", ErrInvalid, t.Name)
		}
		if len(t.Parameters) > 0 {
			var c bytes.Buffer
			if err := json.Compact(&c, t.Parameters); err != nil {
				return nil, nil, fmt.Errorf("%w: tool %q parameters are not JSON: %v", ErrInvalid, t.Name, err)
			}
			if c.Len() == 0 || c.Bytes()[0] != '{' {
				return nil, nil, fmt.Errorf("%w: tool %q parameters must be a JSON Schema object", ErrInvalid, t.Name)
			}
			tools[i].Parameters = json.RawMessage(c.Bytes())
		}
		js, _ := json.Marshal(tools[i])
		buf.Write(js)
		buf.WriteByte('\n')
	}
	return tools, buf.Bytes(), nil
}

// toolOverhead is the per-tool framing cost in tokens.
const toolOverhead = 8

func minPositive(a, b int) int {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

// skillList renders the skills section: the agent's skill blocks
// (blocks.SkillLabelPrefix) whose body is not in the prompt already (not
// pinned, not named by the batch), by name and one-line description, so
// the model knows what it can load with the load_skill tool. "" when there
// are none.
func (b Builder) skillList(f fetched) string {
	var lines []string
	for _, m := range f.own {
		name, ok := strings.CutPrefix(m.Label, blocks.SkillLabelPrefix)
		if !ok || m.Type != blocks.Working || m.Pinned || slices.Contains(b.batchBlocks, m.Label) {
			continue
		}
		line := "- `" + name + "`"
		if d := strings.Join(strings.Fields(m.Description), " "); d != "" {
			line += ": " + d
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		return ""
	}
	return "# Available skills\n\nLoad a skill's instructions with the `load_skill` tool before you follow it.\n\n" + strings.Join(lines, "\n")
}
