package letta

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
)

// outOfContextNote is the summary that covers the messages Letta kept
// outside the agent's context window.
const outOfContextNote = "Earlier messages of this conversation are outside the context window; conversation search finds them."

// BatchPrefix starts the id of every batch an import makes: "letta-1",
// "letta-2", ... in the order of the conversation.
const BatchPrefix = "letta-"

// parseTime reads Letta's timestamps (ISO 8601, with or without a zone).
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// messages adds agent a's messages (see ToDump).
func (im *importer) messages(a *Agent, id string) error {
	ar := im.rep.agent("", "", id)
	inCtx := map[string]int{}
	for i, m := range a.InContextMessageIDs {
		inCtx[m] = i
	}
	byID := map[string]bool{}
	for _, m := range a.Messages {
		byID[m.ID] = true
	}
	for _, m := range a.InContextMessageIDs {
		if !byID[m] {
			im.rep.notKept(id, "in-context message id "+m, 1, "the file holds no such message (an export keeps only the last messages)")
		}
	}
	// The compiled system prompt: the first message in context, when it
	// is a system message.
	compiled := ""
	if len(a.InContextMessageIDs) > 0 {
		for _, m := range a.Messages {
			if m.ID == a.InContextMessageIDs[0] && m.Role == "system" {
				compiled = m.ID
			}
		}
	}
	allIn := len(a.InContextMessageIDs) == 0
	if allIn && len(a.Messages) > 0 {
		im.rep.mapped(id, "messages without in_context_message_ids", len(a.Messages), "all taken as in context")
	}
	cut := contextCut(a.Messages, compiled, inCtx, allIn)

	var (
		batch, seq int
		batchStart time.Time
		pending    = map[string]bool{} // calls of the current batch without a result yet
		calls      = map[string]int{}  // call id → batch
		out        []memory.Message
		firstID    int64
		lastOut    int64 // the last message id before the cut
		outCount   int
	)
	flush := func(done time.Time) {
		if batch > 0 {
			im.d.Batches = append(im.d.Batches, memory.Batch{ID: fmt.Sprintf("%s%d", BatchPrefix, batch), Agent: id, Complete: true,
				CreatedAt: batchStart, CompletedAt: done})
		}
	}
	var last time.Time
	for i, m := range a.Messages {
		if m.ID == compiled {
			im.rep.notKept(id, "compiled system prompt (message "+m.ID+")", 1,
				"Letta's system prompt with the blocks as they were; engram builds it from the profile's system prompt and the blocks")
			continue
		}
		role := m.Role
		switch role {
		case "function":
			role = "tool"
		case "system", "user", "assistant", "tool":
		default:
			im.rep.notKept(id, fmt.Sprintf("%s message", role), 1, "engram messages are system, user, assistant or tool")
			continue
		}
		text, skipped, err := decodeContent(m.Content)
		if err != nil {
			return fmt.Errorf("%w: agent %q: message %s: %v", ErrInvalid, id, m.ID, err)
		}
		for _, k := range sortedKeys(skipped) {
			im.rep.notKept(id, k+" content", skipped[k], "engram messages hold text")
		}
		if !utf8.ValidString(text) {
			return fmt.Errorf("%w: agent %q: message %s: content is not valid UTF-8", ErrInvalid, id, m.ID)
		}
		at, ok := parseTime(m.CreatedAt)
		if !ok {
			at = last
			if at.IsZero() {
				at = im.opts.Now().UTC()
			}
			im.rep.mapped(id, "message without a readable created_at", 1, "the time of the message before it")
		}
		last = at
		// A user message starts a batch. A call still without its result
		// then never gets one here (Letta answers a call within the step
		// that made it): it is reported, not waited for, or one
		// unanswered call would glue the rest of the conversation into
		// one batch, which compression keeps or drops whole.
		if role == "user" && len(pending) > 0 {
			im.rep.notKept(id, "tool call without a result before the next user message", len(pending), "its batch ends at the next user message; the call is kept, unanswered")
			clear(pending)
		}
		if batch == 0 || (role == "user" && len(pending) == 0) {
			if batch > 0 {
				flush(out[len(out)-1].CreatedAt)
			}
			batch++
			seq = 0
			batchStart = at
			clear(pending)
		}
		base := memory.Message{Agent: id, Role: memory.Role(role), Content: text, BatchID: fmt.Sprintf("%s%d", BatchPrefix, batch), CreatedAt: at}
		if m.Name != nil {
			base.Name = *m.Name
		}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Function.Arguments)
			if !json.Valid(args) {
				args, _ = json.Marshal(tc.Function.Arguments)
			} else if c := unescapeHTML(compactJSON(args)); c != tc.Function.Arguments && tc.ID != "" {
				im.keepArguments(id, tc.ID, tc.Function.Arguments)
			}
			base.ToolCalls = append(base.ToolCalls, memory.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
			pending[tc.ID] = true
			calls[tc.ID] = batch
			ar.ToolCalls++
		}
		if len(m.ToolCalls) > 0 && role != "assistant" {
			im.rep.mapped(id, fmt.Sprintf("tool calls of a %s message", role), len(m.ToolCalls), "kept on the message")
		}
		// A tool message: one engram message per result.
		var results []memory.Message
		if role == "tool" {
			rets := m.ToolReturns
			switch {
			case len(rets) <= 1:
				r := base
				if m.ToolCallID != nil {
					r.ToolCallID = *m.ToolCallID
				}
				if len(rets) == 1 {
					if r.ToolCallID == "" && rets[0].ToolCallID != nil {
						r.ToolCallID = *rets[0].ToolCallID
					}
					if r.Content == "" && rets[0].FuncResponse != nil {
						r.Content = *rets[0].FuncResponse
					}
					im.toolReturnExtras(id, rets[0])
				}
				results = append(results, r)
			default:
				for _, ret := range rets {
					r := base
					r.ToolCalls = nil
					if ret.ToolCallID != nil {
						r.ToolCallID = *ret.ToolCallID
					}
					if ret.FuncResponse != nil {
						r.Content = *ret.FuncResponse
					}
					im.toolReturnExtras(id, ret)
					results = append(results, r)
				}
				im.rep.mapped(id, "tool message with several results", 1, fmt.Sprintf("%d tool messages, one per result", len(rets)))
			}
		} else {
			results = []memory.Message{base}
			if m.ToolCallID != nil && *m.ToolCallID != "" {
				im.rep.notKept(id, fmt.Sprintf("tool_call_id of a %s message", role), 1, "only tool messages answer a call")
			}
			if len(m.ToolReturns) > 0 {
				im.rep.notKept(id, fmt.Sprintf("tool_returns of a %s message", role), len(m.ToolReturns), "only tool messages hold results")
			}
		}
		for _, r := range results {
			if r.Role == memory.RoleTool {
				ar.ToolReturns++
				switch {
				case r.ToolCallID == "":
					ar.Unpaired++
					im.rep.mapped(id, "tool result without a call id", 1, "a tool message no call is paired with")
				case pending[r.ToolCallID]:
					delete(pending, r.ToolCallID)
					ar.Paired++
				case calls[r.ToolCallID] != 0:
					ar.Unpaired++
					im.rep.mapped(id, "tool result after its batch ended", 1, "a tool message in a later batch than its call")
				default:
					ar.Unpaired++
					im.rep.mapped(id, "tool result whose call is not in the file", 1, "a tool message no call is paired with (an export keeps only the last messages)")
				}
			}
			seq++
			im.msgID++
			r.ID, r.Seq = im.msgID, seq
			if firstID == 0 {
				firstID = r.ID
			}
			_, in := inCtx[m.ID]
			switch {
			case i < cut:
				lastOut = r.ID
				outCount++
				if in {
					im.rep.notKept(id, "message "+m.ID+" in Letta's context window", 1,
						"more messages outside the window follow it: the summary covers it with them (engram's context is the messages after a summary)")
				}
			case !in && !allIn:
				im.rep.notKept(id, "message "+m.ID+" outside the context window", 1,
					"fewer messages outside the window follow it than messages inside would be covered: it stays in the history, where the builder may include it")
			}
			out = append(out, r)
		}
		im.messageExtras(id, m)
	}
	if len(out) > 0 {
		flush(out[len(out)-1].CreatedAt)
	}
	ar.Unpaired += len(pending)
	if len(pending) > 0 {
		im.rep.mapped(id, "tool call without a result", len(pending), "kept; the batch holding it is complete")
	}
	if lastOut > 0 {
		im.summary++
		im.d.Summaries = append(im.d.Summaries, memory.Summary{ID: im.summary, Agent: id, FirstMessageID: firstID, LastMessageID: lastOut,
			Content: outOfContextNote, Model: "letta", CreatedAt: out[len(out)-1].CreatedAt})
		ar.OutOfContext = outCount
		im.rep.mapped(id, "messages outside the context window", outCount, "kept in the history, covered by a summary (in context: the messages after it)")
	}
	im.d.Messages = append(im.d.Messages, out...)
	ar.Messages = len(out)
	if len(out) > 0 {
		im.rep.mapped(id, "message", len(out), "a message of its batch (a batch per user message; calls and results paired in one batch)")
	}
	return nil
}

// keepArguments keeps a call's arguments text as the file wrote it, in the
// agent's extension, within MaxKeptArgumentBytes.
func (im *importer) keepArguments(agent, callID, text string) {
	ext := im.exts[agent]
	if _, dup := ext.Arguments[callID]; dup {
		return
	}
	// Counted as stored: JSON strings in the profile (escapes included).
	k, _ := json.Marshal(callID)
	v, _ := json.Marshal(text)
	size := len(k) + len(v) + 2
	if im.argBytes[agent]+size > MaxKeptArgumentBytes {
		im.rep.notKept(agent, "tool-call arguments' formatting", 1,
			fmt.Sprintf("past %d bytes of kept argument text an agent: written back as compact JSON", MaxKeptArgumentBytes))
		return
	}
	if ext.Arguments == nil {
		ext.Arguments = map[string]string{}
	}
	ext.Arguments[callID] = text
	im.argBytes[agent] += size
}

// contextCut returns the index in msgs before which the summary covers the
// messages (0: none covered). Letta's context window is inCtx; engram's is
// the messages after a summary, a suffix of the history. The cut is the
// one where fewest messages disagree: messages in the window before it
// plus messages outside the window after it (the earliest such cut: the
// window kept whole on a tie). The compiled system prompt and messages
// engram does not import do not count.
func contextCut(msgs []Message, compiled string, inCtx map[string]int, allIn bool) int {
	if allIn {
		return 0
	}
	counts := func(m Message) bool {
		switch m.Role {
		case "system", "user", "assistant", "tool", "function":
			return m.ID != compiled
		}
		return false
	}
	cost := 0 // at cut 0: every message outside the window
	for _, m := range msgs {
		if _, in := inCtx[m.ID]; counts(m) && !in {
			cost++
		}
	}
	best, bestCost := 0, cost
	for i, m := range msgs {
		if !counts(m) {
			continue
		}
		if _, in := inCtx[m.ID]; in {
			cost++
		} else {
			cost--
		}
		if cost < bestCost {
			best, bestCost = i+1, cost
		}
	}
	return best
}

// toolReturnExtras reports the parts of a tool result engram does not keep.
func (im *importer) toolReturnExtras(id string, r ToolReturn) {
	if r.Status != "" && r.Status != "success" {
		im.rep.notKept(id, "tool result status "+r.Status, 1, "engram keeps a result's text only")
	}
	if !isNullish(r.Stdout) || !isNullish(r.Stderr) {
		im.rep.notKept(id, "tool result stdout/stderr", 1, "engram keeps a result's text only")
	}
}

// messageExtras reports a message's fields engram does not keep.
func (im *importer) messageExtras(id string, m Message) {
	set := func(s *string) bool { return s != nil && *s != "" }
	for _, f := range []struct {
		name string
		on   bool
		why  string
	}{
		{"model", set(m.Model), "engram messages do not record the model (the profile names the agent's)"},
		{"otid", set(m.Otid), "Letta's offline id of a streamed message"},
		{"sender_id", set(m.SenderID), "engram messages have no sender but their role and name"},
		{"batch_item_id", set(m.BatchItemID), "Letta's batch request item"},
		{"group_id", set(m.GroupID), "the group is kept with the agent's profile"},
		{"approval fields", m.Approve != nil || set(m.ApprovalRequestID) || set(m.DenialReason) || len(m.Approvals) > 0,
			"engram decides approvals through its Approver, not in messages"},
	} {
		if f.on {
			im.rep.notKept(id, "message field "+f.name, 1, f.why)
		}
	}
}

// chunkChars is the most characters a file chunk holds.
const chunkChars = 4000

// chunks splits text at paragraph, then line, then character boundaries
// into pieces of at most chunkChars characters.
func chunks(text string) []string {
	var out []string
	for utf8.RuneCountInString(text) > chunkChars {
		cut := len(text)
		n := 0
		for i := range text {
			if n == chunkChars {
				cut = i
				break
			}
			n++
		}
		head := text[:cut]
		if i := strings.LastIndex(head, "\n\n"); i > cut/2 {
			cut = i + 2
		} else if i := strings.LastIndex(head, "\n"); i > cut/2 {
			cut = i + 1
		}
		out = append(out, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

// files adds the archival entries of agent a's sources and their files.
func (im *importer) files(a *Agent, id string) {
	srcs := append(append([]string{}, a.SourceIDs...), a.FolderIDs...)
	if len(srcs) == 0 {
		return
	}
	byID := map[string]*Source{}
	for i := range im.f.Sources {
		byID[im.f.Sources[i].ID] = &im.f.Sources[i]
	}
	seen := map[string]bool{}
	ar := im.rep.agent("", "", id)
	for _, sid := range srcs {
		if seen[sid] {
			continue
		}
		seen[sid] = true
		src, ok := byID[sid]
		if !ok {
			im.rep.notKept(id, "source id "+sid, 1, "the agent lists it but the file holds no such source")
			continue
		}
		var parts []string
		if src.Description != nil && *src.Description != "" {
			parts = append(parts, *src.Description)
		}
		if src.Instructions != nil && *src.Instructions != "" {
			parts = append(parts, *src.Instructions)
		}
		if len(parts) > 0 {
			im.archival(id, "Source "+src.Name+": "+strings.Join(parts, "\n\n"), []string{"letta", "letta-source"},
				map[string]any{"origin": "letta", "letta_kind": "source", "source": src.Name})
			ar.Archival++
			im.rep.mapped(id, "source", 1, "an archival entry of its description and instructions, tagged letta-source")
		} else {
			im.rep.mapped(id, "source "+src.Name, 1, "no entry of its own (no description or instructions): its name is in its files' entries")
		}
		for _, f := range im.f.Files {
			if f.SourceID != sid {
				continue
			}
			name := ""
			if f.FileName != nil {
				name = *f.FileName
			}
			if f.Content == nil || *f.Content == "" {
				im.rep.notKept(id, fmt.Sprintf("file %q", name), 1, "the file holds no text (Letta exports a file's text when it has it)")
				continue
			}
			cs := chunks(*f.Content)
			for i, c := range cs {
				meta := map[string]any{"origin": "letta", "letta_kind": "file", "source": src.Name, "file_name": name}
				if f.FilePath != nil {
					meta["file_path"] = *f.FilePath
				}
				if f.FileType != nil {
					meta["file_type"] = *f.FileType
				}
				if len(cs) > 1 {
					meta["chunk"], meta["chunks"] = i+1, len(cs)
				}
				im.archival(id, c, []string{"letta", "letta-file"}, meta)
				ar.Archival++
			}
			im.rep.mapped(id, "file", 1, "archival entries of its text (tagged letta-file, source and name in the metadata)")
		}
	}
}

func (im *importer) archival(agent, content string, tags []string, meta map[string]any) {
	im.archID++
	now := im.opts.Now().UTC()
	im.d.Archival = append(im.d.Archival, memory.ArchivalEntry{ID: im.archID, Agent: agent, Content: content, Tags: tags,
		Metadata: meta, CreatedAt: now, ValidFrom: now})
}

// groups keeps each group once, in the extension of its first agent
// (the manager when it has one): an export writes a group only when all
// its agents are exported, so one copy is enough, and a copy per member
// would let a file of G groups of A agents store G*A*A names.
func (im *importer) groups() {
	listed := map[string][]string{} // group id → agents whose group_ids name it
	for _, a := range im.f.Agents {
		seen := map[string]bool{}
		for _, gid := range a.GroupIDs {
			if !seen[gid] {
				seen[gid] = true
				listed[gid] = append(listed[gid], im.ids[a.ID])
			}
		}
	}
	for _, g := range im.f.Groups {
		ge := groupExt{Description: g.Description, ManagerConfig: g.ManagerConfig, ProjectID: g.ProjectID, Hidden: g.Hidden}
		if m := g.managerAgentID(); m != "" {
			ge.Manager = im.ids[m]
		}
		var members []string
		for _, aid := range groupMembers(g) {
			if id, ok := im.ids[aid]; ok {
				members = append(members, id)
				if aid != g.managerAgentID() {
					ge.Agents = append(ge.Agents, id)
				}
			} else {
				im.rep.notKept("", fmt.Sprintf("group %s: agent id %s", g.ID, aid), 1, "the file holds no such agent")
			}
		}
		ge.Listed = listed[g.ID]
		for _, bid := range g.SharedBlockIDs {
			if own, ok := im.owner[bid]; ok {
				ge.SharedBlocks = append(ge.SharedBlocks, blockRef{Owner: own, Label: im.label[bid]})
			}
		}
		if len(members) == 0 {
			im.rep.notKept("", "group "+g.ID, 1, "none of its agents is in the file")
			continue
		}
		im.exts[members[0]].Groups = append(im.exts[members[0]].Groups, ge)
		im.rep.meta("", "group "+g.ID, 1, fmt.Sprintf("kept with the profile of %s, for its agents %s (engram has no groups: shared blocks are shares)", members[0], strings.Join(members, ", ")))
	}
}

// fileLevel reports the parts of the file no agent holds.
func (im *importer) fileLevel() {
	if n := len(im.f.MCPServers); n > 0 {
		im.rep.notKept("", "mcp_servers", n, "engram does not connect to MCP servers; the tools' definitions are in the profiles")
	}
	if n := len(im.f.Skills); n > 0 {
		im.rep.notKept("", "skills", n, "engram has no skills of Letta's kind")
	}
	if len(im.f.Metadata) > 0 {
		im.rep.notKept("", "file metadata "+strings.Join(sortedKeys(im.f.Metadata), ", "), 1, "describes the export (Letta's schema revision), not the agents")
	}
	var used = map[string]bool{}
	for _, a := range im.f.Agents {
		for _, t := range a.ToolIDs {
			used[t] = true
		}
	}
	for _, t := range im.f.Tools {
		if !used[t.ID] {
			im.rep.notKept("", fmt.Sprintf("tool %q (%s)", t.Name, t.ID), 1, "no agent of the file lists it")
		}
	}
}
