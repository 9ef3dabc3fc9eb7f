package builder

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// libPlan is one library artifact's rendering in this build.
type libPlan struct {
	entry           memory.LibraryEntry
	full, preview   string
	fullTok, preTok int
	form            string // "full", "preview" or "" (left out)
}

// recallPlan is one recalled memory's rendering in this build.
type recallPlan struct {
	mem    RecalledMemory
	text   string
	tokens int
	in     bool
}

func (b Builder) assemble(ctx context.Context, f fetched) (*Request, error) {
	if err := checkOrder(b.cfg.TruncationOrder); err != nil {
		return nil, err
	}
	layoutStart := time.Now()
	counter, warnings := b.counter()
	limits := b.cfg.LimitsFor(b.model.Name)
	input := limits.InputBudget()
	md := Metadata{Agent: b.agent, Model: b.model.Name, Encoding: counterName(counter), Limits: limits, Warnings: warnings, Timings: f.timings}
	md.Tokens.InputBudget = input
	order := b.cfg.TruncationOrder
	if order == nil {
		order = DefaultTruncationOrder()
	}
	md.TruncationOrder = order

	tools, toolsDigest, toolTokens, err := b.toolDefs(counter)
	if err != nil {
		return nil, err
	}
	md.Tokens.Tools = toolTokens

	// Sections that never give way.
	base := DefaultBaseInstructions
	if b.baseSet {
		base = b.base
	}
	base = EscapeTags(strings.TrimSpace(base))
	rules := b.cache.rulesText(b.rules)
	activity := EscapeTags(strings.TrimSpace(f.activity))
	skills := EscapeTags(b.skillList(f))
	env := ""
	if b.env != nil {
		now := time.Now
		if b.cfg.Clock != nil {
			now = b.cfg.Clock
		}
		env = renderEnvironment(*b.env, now(), engramVersion(), tools)
	}
	md.Tokens.Skills = counter.Count(skills)
	md.Tokens.Base = counter.Count(base)
	md.Tokens.ToolRules = counter.Count(rules)
	md.Tokens.Activity = counter.Count(activity)
	md.Tokens.Environment = counter.Count(env)

	// Candidates of the layers that can give way.
	pre := []fixedSection{{SectionBase, true, base, md.Tokens.Base}}
	post := []fixedSection{{SectionSkills, true, skills, md.Tokens.Skills}, {SectionActivity, false, activity, md.Tokens.Activity}}
	if b.cfg.PrefixCacheOrder {
		// Static first, then memory, then per-request content.
		pre = append(pre, fixedSection{SectionToolRules, true, rules, md.Tokens.ToolRules})
	} else {
		post = append(post, fixedSection{SectionToolRules, true, rules, md.Tokens.ToolRules})
	}
	// Memory items are laid out where they end up in the prompt, right
	// after the leading sections, unless a library section will come
	// between: then in a buffer of their own, copied in later.
	var w promptWriter
	w.sys.Grow(len(base) + len(rules) + len(activity) + len(env) + len(skills) + b.memorySize(f) + 64)
	inPlace := len(f.library) == 0
	var mem strings.Builder
	memStart := 0
	if inPlace {
		for _, s := range pre {
			w.fixed(s)
		}
		memStart = w.sys.Len()
	} else {
		mem.Grow(b.memorySize(f))
	}
	items, missing := b.memoryItems(f, cond(inPlace, &w.sys, &mem))
	memSrc := mem.String() // the items' offsets are into memSrc
	if inPlace {
		memSrc = w.sys.String()
	}
	memText := memSrc[memStart:]
	countItems(ctx, counter, b.cfg.TokenCounts, memSrc, items)
	for _, l := range missing {
		md.Warnings = append(md.Warnings, fmt.Sprintf("batch block %q not found among the agent's Working blocks", l))
	}
	lib := b.libraryPlans(f.library, counter)
	refs, fullTurn := b.turnForms(lib)
	recalled := b.recallPlans(f.recalled, memText, counter, &md)

	fixed := md.Tokens.Base + md.Tokens.ToolRules + md.Tokens.Activity + md.Tokens.Skills + md.Tokens.Environment
	remaining := 0 // 0: no input budget
	if input > 0 {
		remaining = max(input-fixed-toolTokens-4, 1)
	}
	take := func(used int) {
		if remaining > 0 {
			remaining = max(remaining-used, 1)
		}
	}
	// Layers are given their budgets in the reverse of the truncation
	// order: the first layer to give way gets what the others leave.
	var msgs []memory.Message
	historyLast := order[0] == LayerHistory
	for i := len(order) - 1; i >= 0; i-- {
		switch order[i] {
		case LayerMemory:
			budget := minPositive(limits.MemoryTokens, remaining)
			md.Tokens.MemoryBudget = budget
			pw := prune(items, budget, b.trimmer(counter))
			md.Warnings = append(md.Warnings, pw...)
			used := 0
			for _, it := range items {
				if !it.dropped {
					used += it.tokens
				}
			}
			take(used)
		case LayerLibrary:
			budget := minPositive(b.libraryTokens(), remaining)
			if b.cfg.Library != nil {
				md.Tokens.LibraryBudget = budget
			}
			take(planLibrary(lib, budget, refs, &md))
		case LayerRecalled:
			budget := minPositive(b.recallTokens(), remaining)
			if b.cfg.Recall != nil {
				md.Tokens.RecallBudget = budget
			}
			take(fitRecalled(recalled, budget, &md))
		case LayerHistory:
			if historyLast {
				continue // laid out below, in what the system prompt leaves
			}
			t := time.Now()
			budget := minPositive(limits.HistoryTokens, remaining)
			md.Tokens.HistoryBudget = budget
			if msgs, err = b.buildHistory(ctx, f, counter, budget, refs, fullTurn, &md); err != nil {
				return nil, err
			}
			md.Timings.History += time.Since(t)
			take(md.Tokens.History)
		}
	}

	// Lay out the rest of the system prompt.
	if inPlace {
		w.memoryInPlace(memSrc, memStart, items)
	} else {
		w.sys.Grow(len(memText) + libSize(lib))
		for _, s := range pre {
			w.fixed(s)
		}
		w.library(lib)
		w.memory(memSrc, items)
	}
	for _, s := range post {
		w.fixed(s)
	}
	w.recalled(recalled)
	w.fixed(fixedSection{SectionEnvironment, false, env, md.Tokens.Environment})
	system := w.sys.String()
	b.reportMemory(f, items, &md)

	sections := w.sections
	stableEnd, inPrefix := 0, true
	for i := range sections {
		sections[i].Text = system[w.bounds[i][0]:w.bounds[i][1]]
		sections[i].Hash = shortHash(sections[i].Text)
		md.Tokens.System += sections[i].Tokens
		if i > 0 {
			md.Tokens.System++ // separator
		}
		switch sections[i].Name {
		case SectionCore:
			md.Tokens.Core = sections[i].Tokens
		case SectionWorking:
			md.Tokens.Working = sections[i].Tokens
		case SectionAttachments:
			md.Tokens.Attachments = sections[i].Tokens
		case SectionLibrary:
			md.Tokens.Library = sections[i].Tokens
		case SectionRecalled:
			md.Tokens.Recalled = sections[i].Tokens
		}
		if inPrefix && sections[i].Stable {
			stableEnd = w.bounds[i][1]
		} else {
			inPrefix = false
		}
	}
	md.StablePrefixEnd = stableEnd
	h := sha256.New()
	h.Write(toolsDigest)
	h.Write([]byte{0})
	h.Write([]byte(system[:stableEnd]))
	md.StablePrefixHash = hex.EncodeToString(h.Sum(nil))
	md.ToolsHash = shortHash(string(toolsDigest))
	md.PrefixChange = b.cache.prefixChange(b.agent, b.model.Name, md.ToolsHash, system, sections, w.bounds)
	md.Timings.Layout = time.Since(layoutStart) - md.Timings.History

	if historyLast {
		t := time.Now()
		histBudget := limits.HistoryTokens
		if input > 0 {
			histBudget = minPositive(histBudget, max(input-md.Tokens.System-toolTokens, 1))
		}
		md.Tokens.HistoryBudget = histBudget
		if msgs, err = b.buildHistory(ctx, f, counter, histBudget, refs, fullTurn, &md); err != nil {
			return nil, err
		}
		md.Timings.History += time.Since(t)
	}

	req := &Request{System: system, Messages: msgs, Tools: tools, Sections: sections, Artifacts: slices.Clone(b.turn)}
	if b.model.NoSystemRole && system != "" {
		req.System = ""
		req.Messages = append([]memory.Message{{Agent: b.agent, Role: memory.RoleUser, Content: system}}, msgs...)
		if b.model.UserFirst {
			req.Messages = mergeUsers(req.Messages)
		}
	}
	md.Tokens.Total = md.Tokens.System + md.Tokens.Tools + md.Tokens.History
	if input > 0 && md.Tokens.Total > input {
		md.OverBudget = true
		md.Warnings = append(md.Warnings, fmt.Sprintf("request needs %d tokens, over the input budget of %d", md.Tokens.Total, input))
		b.log(ctx, slog.LevelWarn, "request over budget", slog.Int("tokens", md.Tokens.Total), slog.Int("input_budget", input))
	}
	b.logDecisions(ctx, &md)
	req.Metadata = md
	return req, nil
}

// reportMemory fills the block and attachment parts of md.
func (b Builder) reportMemory(f fetched, items []item, md *Metadata) {
	md.BlocksIncluded = make([]BlockReport, 0, len(items))
	for i := range items {
		it := &items[i]
		switch {
		case it.dropped:
			md.BlocksDropped = append(md.BlocksDropped, Dropped{Kind: it.kind, Label: it.label, Owner: it.owner,
				Priority: it.priority, Tokens: it.tokens, Reason: fmt.Sprintf("over the memory budget of %d tokens", md.Tokens.MemoryBudget)})
		case it.kind == "block":
			md.BlocksIncluded = append(md.BlocksIncluded, BlockReport{Label: it.label, Owner: it.owner, Type: string(it.typ),
				Priority: it.priority, Tokens: it.tokens, TrimmedLines: it.trimmedLines})
		default:
			md.AttachmentsIncluded = append(md.AttachmentsIncluded, it.label)
		}
	}
	for _, it := range f.own {
		if it.Type == blocks.Working && !it.Pinned && !slices.Contains(b.batchBlocks, it.Label) {
			reason := "Working block neither pinned nor named by the batch"
			if strings.HasPrefix(it.Label, blocks.SkillLabelPrefix) {
				reason = "skill: listed under Available skills, its body loaded on demand (load_skill)"
			}
			md.BlocksDropped = append(md.BlocksDropped, Dropped{Kind: "block", Label: it.Label, Priority: it.Priority, Reason: reason})
		}
	}
}

func (b Builder) libraryTokens() int {
	if b.cfg.Library != nil && b.cfg.Library.Tokens > 0 {
		return b.cfg.Library.Tokens
	}
	return DefaultLibraryTokens
}

func (b Builder) recallTokens() int {
	if b.cfg.Recall != nil && b.cfg.Recall.Tokens > 0 {
		return b.cfg.Recall.Tokens
	}
	return DefaultRecallTokens
}

// libraryPlans renders each library artifact in full and as a preview.
func (b Builder) libraryPlans(entries []memory.LibraryEntry, counter TokenCounter) []libPlan {
	if len(entries) == 0 {
		return nil
	}
	chars := DefaultLibraryPreviewChars
	if b.cfg.Library != nil && b.cfg.Library.PreviewChars > 0 {
		chars = b.cfg.Library.PreviewChars
	}
	out := make([]libPlan, len(entries))
	for i, e := range entries {
		p := libPlan{entry: e, full: renderLibraryEntry(e, false, 0)}
		p.fullTok = counter.Count(p.full)
		if e.Recoverable {
			p.preview = renderLibraryEntry(e, true, chars)
			p.preTok = counter.Count(p.preview)
		}
		out[i] = p
	}
	// What the library shows at its own budget decides which of this
	// turn's artifacts are references (see turnForms).
	planLibrary(out, b.libraryTokens(), nil, nil)
	return out
}

// planLibrary decides each artifact's form within budget (0: none), in
// first-seen order, so an artifact's form depends only on those before it
// (and on whether the turn refers to it: referred ones stay in full).
// It returns the tokens used and, with md, reports the decisions.
func planLibrary(lib []libPlan, budget int, refs []Artifact, md *Metadata) int {
	used := 0
	for i := range lib {
		p := &lib[i]
		referred := slices.ContainsFunc(refs, func(a Artifact) bool { return a.ID == p.entry.ID })
		switch {
		case budget <= 0 || used+p.fullTok <= budget || referred || !p.entry.Recoverable:
			p.form = "full"
			used += p.fullTok
		case p.preTok < p.fullTok && used+p.preTok <= budget:
			p.form = "preview"
			used += p.preTok
		default:
			p.form = ""
		}
		if md == nil {
			continue
		}
		switch p.form {
		case "full":
			md.Library = append(md.Library, ArtifactReport{ID: p.entry.ID, Form: "full", Tokens: p.fullTok})
		case "preview":
			md.Library = append(md.Library, ArtifactReport{ID: p.entry.ID, Form: "preview", Tokens: p.preTok})
		default:
			md.LibraryDropped = append(md.LibraryDropped, Dropped{Kind: "artifact", Label: p.entry.ID, Tokens: p.preTok,
				Reason: fmt.Sprintf("its preview does not fit the library budget of %d tokens", budget)})
		}
	}
	if md != nil && budget > 0 && used > budget {
		md.Warnings = append(md.Warnings, fmt.Sprintf("non-recoverable library artifacts use %d tokens, over the library budget of %d", used, budget))
	}
	return used
}

func libSize(lib []libPlan) int {
	n := 0
	for _, p := range lib {
		n += len(p.full) + 2
	}
	return n
}

// turnForms splits this turn's artifacts into references (the library
// shows the same content in full at its own budget) and full ones.
func (b Builder) turnForms(lib []libPlan) (refs, full []Artifact) {
	for _, a := range b.turn {
		i := slices.IndexFunc(lib, func(p libPlan) bool { return p.entry.ID == a.ID })
		if i >= 0 && lib[i].form == "full" && lib[i].entry.Hash == memory.ArtifactHash(a.Content) {
			refs = append(refs, a)
		} else {
			full = append(full, a)
		}
	}
	return refs, full
}

// recallPlans renders the recalled memories that say something the
// blocks in the prompt do not, reporting the others as dropped.
func (b Builder) recallPlans(mems []RecalledMemory, memText string, counter TokenCounter, md *Metadata) []recallPlan {
	if len(mems) == 0 {
		return nil
	}
	blockText := normalizeForDedup(memText)
	seen := map[string]int64{}
	out := make([]recallPlan, 0, len(mems))
	for _, m := range mems {
		label := fmt.Sprintf("archival:%d", m.ID)
		norm := normalizeForDedup(m.Content)
		if norm == "" {
			md.RecalledDropped = append(md.RecalledDropped, Dropped{Kind: "memory", Label: label, Reason: "empty"})
			continue
		}
		if id, dup := seen[norm]; dup {
			md.RecalledDropped = append(md.RecalledDropped, Dropped{Kind: "memory", Label: label,
				Reason: fmt.Sprintf("same text as recalled memory %d", id)})
			continue
		}
		if strings.Contains(blockText, norm) {
			md.RecalledDropped = append(md.RecalledDropped, Dropped{Kind: "memory", Label: label, Reason: "already said by a block in the prompt"})
			continue
		}
		seen[norm] = m.ID
		var sb strings.Builder
		renderMemory(&sb, m)
		out = append(out, recallPlan{mem: m, text: sb.String()})
		out[len(out)-1].tokens = counter.Count(out[len(out)-1].text)
	}
	return out
}

// fitRecalled keeps the most relevant recalled memories that fit budget
// (0: none), the section's frame included, and returns the tokens used.
func fitRecalled(rs []recallPlan, budget int, md *Metadata) int {
	if len(rs) == 0 {
		return 0
	}
	used := recallFrameTokens
	for i := range rs {
		r := &rs[i]
		r.in = budget <= 0 || used+r.tokens <= budget
		if r.in {
			used += r.tokens
			md.Recalled = append(md.Recalled, RecallReport{ID: r.mem.ID, Score: r.mem.Score, Tokens: r.tokens})
		} else {
			md.RecalledDropped = append(md.RecalledDropped, Dropped{Kind: "memory", Label: fmt.Sprintf("archival:%d", r.mem.ID),
				Tokens: r.tokens, Reason: fmt.Sprintf("over the recall budget of %d tokens", budget)})
		}
	}
	if len(md.Recalled) == 0 {
		return 0
	}
	return used
}

// recallFrameTokens approximates the section's tags and introduction.
const recallFrameTokens = 40

// library adds the context library section.
func (w *promptWriter) library(lib []libPlan) {
	n := 0
	for _, p := range lib {
		if p.form == "" {
			continue
		}
		if n == 0 {
			w.sep()
			w.open(SectionLibrary)
			w.sys.WriteString("<context_library>\nArtifacts from earlier turns, oldest first. A message that names one refers to the version here.")
		}
		n++
		w.sys.WriteString(sectionSeparator)
		if p.form == "full" {
			w.sys.WriteString(p.full)
			w.sections[len(w.sections)-1].Tokens += p.fullTok + 1
		} else {
			w.sys.WriteString(p.preview)
			w.sections[len(w.sections)-1].Tokens += p.preTok + 1
		}
	}
	if n > 0 {
		w.sys.WriteString("\n</context_library>")
		w.sections[len(w.sections)-1].Tokens += libraryFrameTokens
		w.close()
	}
}

// libraryFrameTokens approximates the library's tags and introduction.
const libraryFrameTokens = 24

// recalled adds the recalled memories section.
func (w *promptWriter) recalled(rs []recallPlan) {
	n := 0
	for _, r := range rs {
		if !r.in {
			continue
		}
		if n == 0 {
			w.sep()
			w.open(SectionRecalled)
			w.sys.WriteString("<recalled_memories>\n" + recallIntro)
			w.sections[len(w.sections)-1].Tokens = recallFrameTokens
		}
		n++
		w.sys.WriteString(sectionSeparator)
		w.sys.WriteString(r.text)
		w.sections[len(w.sections)-1].Tokens += r.tokens + 1
	}
	if n > 0 {
		w.sys.WriteString("\n</recalled_memories>")
		w.close()
	}
}

// shortHash is a 64-bit change detector for sections: CRC-32C and CRC-32
// (IEEE) of s side by side, both hardware-accelerated (SHA-256 or FNV over
// a whole prompt was a large share of a warm build; docs/performance.md). It
// is not a digest to trust against an adversary.
func shortHash(s string) string {
	// Read the string's bytes in place: crc32 neither keeps nor writes them.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	var out [8]byte
	binary.BigEndian.PutUint32(out[:4], crc32.Update(0, castagnoli, b))
	binary.BigEndian.PutUint32(out[4:], crc32.ChecksumIEEE(b))
	return hex.EncodeToString(out[:])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// log writes a record when ContextConfig.Logger is set.
func (b Builder) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if l := b.cfg.Logger; l != nil {
		l.LogAttrs(ctx, level, msg, append([]slog.Attr{slog.String("agent", b.agent)}, attrs...)...)
	}
}

// logDecisions logs every drop, trim and compaction a build made.
func (b Builder) logDecisions(ctx context.Context, md *Metadata) {
	if b.cfg.Logger == nil {
		return
	}
	for _, d := range md.BlocksDropped {
		if strings.HasPrefix(d.Reason, "over the") {
			b.log(ctx, slog.LevelInfo, "builder dropped "+d.Kind, slog.String("label", d.Label), slog.Int("tokens", d.Tokens), slog.String("reason", d.Reason))
		}
	}
	for _, r := range md.BlocksIncluded {
		if r.TrimmedLines > 0 {
			b.log(ctx, slog.LevelInfo, "builder trimmed block", slog.String("label", r.Label), slog.Int("lines_left_out", r.TrimmedLines), slog.Int("tokens", r.Tokens))
		}
	}
	for _, a := range md.Library {
		if a.Form == "preview" {
			b.log(ctx, slog.LevelInfo, "builder compacted library artifact", slog.String("id", a.ID), slog.Int("tokens", a.Tokens))
		}
	}
	for _, d := range slices.Concat(md.LibraryDropped, md.RecalledDropped) {
		b.log(ctx, slog.LevelInfo, "builder dropped "+d.Kind, slog.String("label", d.Label), slog.Int("tokens", d.Tokens), slog.String("reason", d.Reason))
	}
	if n := len(md.MessagesDropped) + len(md.MessagesSummarized); n > 0 {
		b.log(ctx, slog.LevelInfo, "builder compressed history", slog.Int("dropped", len(md.MessagesDropped)),
			slog.Int("summarized", len(md.MessagesSummarized)), slog.Int("kept", len(md.MessagesKept)))
	}
	b.log(ctx, slog.LevelDebug, "builder built request", slog.Int("tokens", md.Tokens.Total), slog.Duration("took", md.Timings.Total))
}
