package builder

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// CurrentBatch is the batch given to messages added with WithCurrentMessage
// when there is no active batch.
const CurrentBatch = "(current)"

// emptyContent replaces the content of empty messages that must stay.
const emptyContent = "(empty)"

// buildHistory compresses the history into budget and adapts it to the
// model, filling the message parts of md.
func (b Builder) buildHistory(ctx context.Context, f fetched, counter TokenCounter, budget int, refs, full []Artifact, md *Metadata) ([]memory.Message, error) {
	msgs := f.msgs
	var tokens []int
	if cc, ok := counter.(cachedCounter); ok && f.hist != nil {
		tokens = f.hist.messageTokens(cc, len(msgs))
	}
	active := b.activeBatch(f)
	if len(b.current) > 0 {
		if active == "" {
			active = CurrentBatch
		}
		msgs = slices.Clip(msgs)
		for _, m := range b.current {
			if m.BatchID == "" {
				m.BatchID = active
			}
			if m.Agent == "" {
				m.Agent = b.agent
			}
			msgs = append(msgs, m)
			if tokens != nil {
				tokens = append(tokens, compress.MessageTokens(counter, m))
			}
		}
	}
	md.ActiveBatch = active
	if len(b.turn) > 0 {
		// This turn's artifacts go into the current user message of the
		// request (a copy: the stored message keeps only the user's text).
		i := turnMessage(msgs, len(b.current), active)
		if i < 0 {
			return nil, fmt.Errorf("%w: turn context for %q needs a current user message (WithCurrentMessage, or a stored user message last in the active batch)", ErrInvalid, b.agent)
		}
		msgs = slices.Clone(msgs)
		m := msgs[i]
		before := compress.MessageTokens(counter, m)
		m.Content = renderTurn(refs, full, m.Content)
		msgs[i] = m
		after := compress.MessageTokens(counter, m)
		md.Tokens.Turn = after - before
		if tokens != nil {
			tokens = slices.Clone(tokens)
			tokens[i] = after
		}
		for _, a := range refs {
			md.Turn = append(md.Turn, ArtifactReport{ID: a.ID, Form: "reference"})
		}
		for _, a := range full {
			md.Turn = append(md.Turn, ArtifactReport{ID: a.ID, Form: "full", Tokens: counter.Count(a.Content)})
		}
	}
	if len(msgs) == 0 {
		md.MessagesKept = []int64{}
		return nil, nil
	}
	comp := b.cfg.Compression
	if comp == nil {
		comp = compress.Truncate{}
	}
	// Truncation is a pure function of its input: when the cached history,
	// its batches, the budget and the counter are those of the last build,
	// so is the result (a warm build spent a quarter of its time here).
	var key compressKey
	trunc, pure := comp.(compress.Truncate)
	cc, cached := counter.(cachedCounter)
	pure = pure && cached && f.hist != nil && tokens != nil && len(b.current) == 0 && len(b.turn) == 0
	if pure {
		key = compressKey{trunc: trunc, enc: cc.enc, n: len(msgs), batches: f.batches,
			active: active, budget: budget, maxMessages: b.cfg.MaxMessagesCap}
	}
	res, ok := f.hist.compressed(key, pure)
	if !ok {
		var err error
		res, err = comp.Compress(ctx, compress.Input{
			Agent:       b.agent,
			Messages:    msgs,
			Batches:     f.batches,
			ActiveBatch: active,
			TokenBudget: budget,
			MaxMessages: b.cfg.MaxMessagesCap,
			Counter:     counter,
			Tokens:      tokens,
			Summaries:   b.mem.Messages(),
		})
		if err != nil {
			return nil, fmt.Errorf("builder: compress history of %q: %w", b.agent, err)
		}
		if pure {
			f.hist.remember(key, res)
		}
	}
	md.MessagesKept = res.Kept
	if md.MessagesKept == nil {
		md.MessagesKept = []int64{}
	}
	md.MessagesSummarized, md.MessagesDropped, md.MessagesExcluded = res.Summarized, res.Dropped, res.Excluded
	md.SummarizerCalls = res.SummarizerCalls
	md.Warnings = append(md.Warnings, res.Warnings...)
	md.Tokens.History = res.Tokens
	if res.Summary != nil {
		md.SummaryID = res.Summary.ID
		md.Tokens.Summary = compress.MessageTokens(counter, res.Messages[0])
	}
	if res.OverBudget {
		md.OverBudget = true
		md.Warnings = append(md.Warnings, fmt.Sprintf("the active batch alone (%d tokens) exceeds the history budget of %d tokens or the message cap", res.ActiveTokens, budget))
	}

	out, dropped, notes := adjustMessages(res.Messages, b.model, active)
	md.Warnings = append(md.Warnings, notes...)
	if len(dropped) > 0 {
		md.MessagesKept = slices.DeleteFunc(slices.Clone(md.MessagesKept), func(id int64) bool { return slices.Contains(dropped, id) })
		md.MessagesDropped = append(slices.Clone(md.MessagesDropped), dropped...)
		slices.Sort(md.MessagesDropped)
	}
	if len(notes) > 0 {
		md.Tokens.History = 0
		for _, m := range out {
			md.Tokens.History += compress.MessageTokens(counter, m)
		}
	}
	return out, nil
}

// activeBatch is the batch being processed: WithActiveBatch's, else the
// newest message's when that batch is incomplete ("" when none).
func (b Builder) activeBatch(f fetched) string {
	if b.activeSet || len(f.msgs) == 0 {
		return b.active
	}
	last := f.msgs[len(f.msgs)-1].BatchID
	if slices.ContainsFunc(f.batches, func(x memory.Batch) bool { return x.ID == last && x.Complete }) {
		return b.active
	}
	return last
}

// turnMessage is the index of the current user message: the last user
// message among the current ones (the last nCurrent of msgs), else the
// last user message of the active batch; -1 when there is none.
func turnMessage(msgs []memory.Message, nCurrent int, active string) int {
	for i := len(msgs) - 1; i >= len(msgs)-nCurrent; i-- {
		if msgs[i].Role == memory.RoleUser {
			return i
		}
	}
	if nCurrent > 0 || active == "" {
		return -1
	}
	for i := len(msgs) - 1; i >= 0 && msgs[i].BatchID == active; i-- {
		if msgs[i].Role == memory.RoleUser {
			return i
		}
	}
	return -1
}

// adjustMessages makes a history acceptable to the model: orphan tool
// results and unanswered tool calls go; for UserFirst models empty messages
// go, a placeholder user message leads if needed and consecutive plain user
// messages merge; for NoSystemRole models system messages become user
// messages. It returns the new history (msgs is not modified), the ids of
// dropped messages and notes on what changed.
func adjustMessages(msgs []memory.Message, model ModelInfo, active string) ([]memory.Message, []int64, []string) {
	var dropped []int64
	var notes []string
	// Which calls are answered, and which results have a call before them.
	callAt := map[string]int{}
	answered := map[int]map[string]bool{}
	orphan := map[int]bool{}
	// Messages are read in place: a copy of each costs more than the scan.
	for i := range msgs {
		m := &msgs[i]
		for _, tc := range m.ToolCalls {
			callAt[tc.ID] = i
		}
		if m.Role == memory.RoleTool {
			j, ok := callAt[m.ToolCallID]
			if !ok {
				orphan[i] = true
				continue
			}
			if answered[j] == nil {
				answered[j] = map[string]bool{}
			}
			answered[j][m.ToolCallID] = true
		}
	}
	changed := len(orphan) > 0
	for i := range msgs {
		m := &msgs[i]
		if len(m.ToolCalls) > 0 && len(answered[i]) < len(m.ToolCalls) {
			changed = true
		}
		if model.UserFirst && isEmpty(m) {
			changed = true
		}
		if model.NoSystemRole && m.Role == memory.RoleSystem {
			changed = true
		}
	}
	if model.UserFirst && !changed {
		first := slices.IndexFunc(msgs, func(m memory.Message) bool { return m.Role != memory.RoleSystem })
		changed = first >= 0 && msgs[first].Role != memory.RoleUser || hasUserRun(msgs)
	}
	if !changed {
		return msgs, nil, nil
	}

	out := make([]memory.Message, 0, len(msgs)+1)
	for i, m := range msgs {
		if orphan[i] {
			dropped = append(dropped, m.ID)
			notes = append(notes, fmt.Sprintf("%s dropped: it answers a tool call that is not in the history", describe(m)))
			continue
		}
		if len(m.ToolCalls) > 0 && len(answered[i]) < len(m.ToolCalls) {
			var calls []memory.ToolCall
			for _, tc := range m.ToolCalls {
				if answered[i][tc.ID] {
					calls = append(calls, tc)
				} else {
					notes = append(notes, fmt.Sprintf("tool call %q (%s) of %s removed: no result in the history", tc.ID, tc.Name, describe(m)))
				}
			}
			m.ToolCalls = calls
			if len(calls) == 0 && strings.TrimSpace(m.Content) == "" {
				dropped = append(dropped, m.ID)
				continue
			}
		}
		if model.NoSystemRole && m.Role == memory.RoleSystem {
			m.Role = memory.RoleUser
		}
		if model.UserFirst && isEmpty(&m) {
			if m.Role == memory.RoleTool || m.BatchID == active {
				m.Content = emptyContent
			} else {
				dropped = append(dropped, m.ID)
				notes = append(notes, fmt.Sprintf("empty %s dropped for this model", describe(m)))
				continue
			}
		}
		out = append(out, m)
	}
	if model.UserFirst {
		first := slices.IndexFunc(out, func(m memory.Message) bool { return m.Role != memory.RoleSystem })
		if first >= 0 && out[first].Role != memory.RoleUser {
			out = slices.Insert(out, first, memory.Message{Role: memory.RoleUser, Content: PlaceholderUserMessage})
			notes = append(notes, "placeholder user message inserted: the model needs a user message first")
		}
		if hasUserRun(out) {
			out = mergeUsers(out)
			notes = append(notes, "consecutive user messages merged")
		}
	}
	slices.Sort(dropped)
	dropped = slices.DeleteFunc(dropped, func(id int64) bool { return id == 0 })
	return out, dropped, notes
}

func describe(m memory.Message) string {
	if m.ID > 0 {
		return fmt.Sprintf("%s message %d", m.Role, m.ID)
	}
	return fmt.Sprintf("unsaved %s message", m.Role)
}

func isEmpty(m *memory.Message) bool {
	return strings.TrimSpace(m.Content) == "" && len(m.ToolCalls) == 0
}

func plainUser(m *memory.Message) bool {
	return m.Role == memory.RoleUser && m.ToolCallID == "" && len(m.ToolCalls) == 0
}

func hasUserRun(msgs []memory.Message) bool {
	for i := 1; i < len(msgs); i++ {
		if plainUser(&msgs[i-1]) && plainUser(&msgs[i]) {
			return true
		}
	}
	return false
}

// mergeUsers joins runs of plain user messages into one (blank line
// between), keeping the first message's id.
func mergeUsers(msgs []memory.Message) []memory.Message {
	out := make([]memory.Message, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && plainUser(&out[n-1]) && plainUser(&m) {
			out[n-1].Content = out[n-1].Content + sectionSeparator + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}
