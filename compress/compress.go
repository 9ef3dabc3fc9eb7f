package compress

import (
	"context"
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
)

// ErrInvalid is wrapped by errors about malformed input or configuration.
var ErrInvalid = errors.New("compress: invalid input")

// TokenCounter counts the tokens of a text. The builder's BPE counters
// implement it.
type TokenCounter interface {
	Count(text string) int
}

// CharCounter estimates tokens as characters/4 (rounded up): the fallback
// when no counter is given.
type CharCounter struct{}

// Count returns ceil(runes/4).
func (CharCounter) Count(text string) int { return (utf8.RuneCountInString(text) + 3) / 4 }

// Per-message overheads, as in OpenAI's chat format (role and separators).
const (
	messageOverhead  = 4
	toolCallOverhead = 3
)

// MessageTokens is the token cost of one message: its content, name, tool
// calls and a fixed overhead for the role and separators.
func MessageTokens(c TokenCounter, m memory.Message) int {
	n := messageOverhead
	if m.Content != "" {
		n += c.Count(m.Content)
	}
	if m.Name != "" {
		n += 1 + c.Count(m.Name)
	}
	if m.ToolCallID != "" {
		n++
	}
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + c.Count(tc.Name)
		if len(tc.Arguments) > 0 {
			n += c.Count(string(tc.Arguments))
		}
	}
	return n
}

// SummaryStore keeps one agent's summaries: the only part of a store
// compression uses, defined here where it is consumed. An agent's
// *memory.Messages (store.Agent(id).Messages()) implements it. SaveSummary
// returns the summary as stored (its ID set); LatestSummary returns the
// agent's most recently saved summary, or an error wrapping
// memory.ErrNotFound when there is none.
type SummaryStore interface {
	SaveSummary(ctx context.Context, s memory.Summary) (memory.Summary, error)
	LatestSummary(ctx context.Context) (memory.Summary, error)
}

// A changed signature in memory must fail the build here, not in a caller.
var _ SummaryStore = (*memory.Messages)(nil)

// Input is one compression request.
type Input struct {
	// Agent owns the history (and its summaries).
	Agent string
	// Messages is the history in chronological order. Messages not yet
	// stored (ID 0) may follow; they must belong to the active batch to be
	// kept.
	Messages []memory.Message
	// Batches gives the state of the batches named by Messages; a batch
	// missing here is incomplete.
	Batches []memory.Batch
	// ActiveBatch is the batch being processed now: never compressed or
	// dropped. "" means none.
	ActiveBatch string
	// TokenBudget is how many tokens the output may use (MessageTokens of
	// each message, the summary message included); 0 means no limit.
	TokenBudget int
	// MaxMessages caps the number of output messages (the summary message
	// included); 0 means no cap. The active batch is kept even beyond it.
	MaxMessages int
	// Counter counts tokens; nil means CharCounter.
	Counter TokenCounter
	// Tokens optionally gives MessageTokens of each message (parallel to
	// Messages), e.g. from a cache; it is computed when its length differs.
	Tokens []int
	// Summaries stores and finds summaries (RecursiveSummarization only).
	Summaries SummaryStore
}

// Result is a compressed history.
type Result struct {
	// Messages is what the model sees: the summary message (if any), then
	// the kept messages in their original order. It may share its array
	// with Input.Messages: treat it as read-only.
	Messages []memory.Message
	// Summary is the summary rendered ahead of the history, if any.
	Summary *memory.Summary
	// Kept, Summarized, Dropped and Excluded partition the ids of the input
	// messages (unsaved messages, id 0, are left out of these lists):
	// kept verbatim, covered by the summary, dropped, and left out because
	// their batch is incomplete and not active.
	Kept, Summarized, Dropped, Excluded []int64
	// Tokens is the cost of Messages; ActiveTokens the part of it used by the
	// active batch.
	Tokens, ActiveTokens int
	// SummarizerCalls counts the Summarize calls this compression made.
	SummarizerCalls int
	// OverBudget is set when the active batch (with the summary) alone
	// exceeds TokenBudget or MaxMessages: it is kept anyway.
	OverBudget bool
	// Warnings explain degraded results (e.g. a failed summarizer with
	// DropOnError).
	Warnings []string
}

// MessageCompressor fits a history into a budget. Implementations must keep
// the invariants described in the package documentation.
type MessageCompressor interface {
	Compress(ctx context.Context, in Input) (Result, error)
}

// unitState classifies a unit of batches.
type unitState int

const (
	stateComplete unitState = iota
	stateActive
	stateExcluded
)

// unit is a set of batches that share one fate: one batch, or several tied
// together by tool calls and their results.
type unit struct {
	idx    []int // message indexes, ascending
	first  int   // smallest message index
	last   int   // largest message index
	maxID  int64 // largest stored message id
	minID  int64 // smallest stored message id (0 if none)
	tokens int
	state  unitState
}

// analysis is an input split into units.
type analysis struct {
	units  []*unit // ordered by last message index
	tokens []int   // per message
}

// analyze groups the messages into units and prices them. It allocates a
// fixed handful of slices whatever the number of batches.
func analyze(in Input) analysis {
	msgs := in.Messages
	n := len(msgs)
	// Batch index per message; messages without a batch get their own.
	// Consecutive messages of one batch skip the map.
	batchOf := make([]int32, n)
	batchIdx := make(map[string]int32, len(in.Batches)+1)
	names := make([]string, 0, len(in.Batches)+1)
	prev := int32(-1)
	for i := range msgs {
		id := msgs[i].BatchID
		switch {
		case id == "":
			prev = -1
			batchOf[i] = int32(len(names))
			names = append(names, "")
			continue
		case prev >= 0 && names[prev] == id:
		default:
			j, ok := batchIdx[id]
			if !ok {
				j = int32(len(names))
				batchIdx[id] = j
				names = append(names, id)
			}
			prev = j
		}
		batchOf[i] = prev
	}
	// Union batches tied by tool calls: a tool result joins the batch of
	// the latest earlier call with its id.
	parent := make([]int32, len(names))
	for i := range parent {
		parent[i] = int32(i)
	}
	find := func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	var callBatch map[string]int32
	for i := range msgs {
		m := &msgs[i]
		for _, tc := range m.ToolCalls {
			if tc.ID != "" {
				if callBatch == nil {
					callBatch = make(map[string]int32)
				}
				callBatch[tc.ID] = batchOf[i]
			}
		}
		if m.Role == memory.RoleTool && m.ToolCallID != "" {
			if b, ok := callBatch[m.ToolCallID]; ok {
				ra, rb := find(b), find(batchOf[i])
				if ra != rb {
					parent[max(ra, rb)] = min(ra, rb)
				}
			}
		}
	}
	// Prices.
	a := analysis{tokens: in.Tokens}
	if len(a.tokens) != n {
		counter := in.Counter
		if counter == nil {
			counter = CharCounter{}
		}
		a.tokens = make([]int, n)
		for i := range msgs {
			a.tokens[i] = MessageTokens(counter, msgs[i])
		}
	}
	// Units, numbered in order of their first message; their message
	// indexes share one array.
	unitOfRoot := make([]int32, len(names))
	for i := range unitOfRoot {
		unitOfRoot[i] = -1
	}
	unitOf := make([]int32, n)
	var count []int
	for i := range msgs {
		r := find(batchOf[i])
		u := unitOfRoot[r]
		if u < 0 {
			u = int32(len(count))
			unitOfRoot[r] = u
			count = append(count, 0)
		}
		unitOf[i] = u
		count[u]++
	}
	units := make([]unit, len(count))
	all := make([]int, n)
	off := 0
	for u := range units {
		units[u].idx = all[off : off : off+count[u]]
		off += count[u]
	}
	for i := range msgs {
		u := &units[unitOf[i]]
		if len(u.idx) == 0 {
			u.first = i
		}
		u.idx = append(u.idx, i)
		u.last = i
		u.tokens += a.tokens[i]
		if id := msgs[i].ID; id > 0 {
			if u.minID == 0 || id < u.minID {
				u.minID = id
			}
			u.maxID = max(u.maxID, id)
		}
	}
	// States: active wins, then incomplete.
	complete := make([]bool, len(names))
	for _, b := range in.Batches {
		if j, ok := batchIdx[b.ID]; ok && b.Complete && b.ID != "" {
			complete[j] = true
		}
	}
	for i, name := range names {
		u := unitOfRoot[find(int32(i))]
		if u < 0 {
			continue
		}
		switch {
		case name != "" && name == in.ActiveBatch:
			units[u].state = stateActive
		case name != "" && !complete[i] && units[u].state != stateActive:
			units[u].state = stateExcluded
		}
	}
	a.units = make([]*unit, len(units))
	for i := range units {
		a.units[i] = &units[i]
	}
	cmp := func(x, y *unit) int { return x.last - y.last }
	if !slices.IsSortedFunc(a.units, cmp) {
		slices.SortStableFunc(a.units, cmp)
	}
	return a
}

// Outcomes of a message.
const (
	outDropped uint8 = iota
	outKept
	outSummarized
	outExcluded
)

// selection collects the outcome for each message.
type selection struct {
	in  Input
	a   analysis
	out []uint8
}

func newSelection(in Input, a analysis) *selection {
	s := &selection{in: in, a: a, out: make([]uint8, len(in.Messages))}
	for _, u := range a.units {
		switch u.state {
		case stateActive:
			s.mark(u, outKept)
		case stateExcluded:
			s.mark(u, outExcluded)
		}
	}
	return s
}

func (s *selection) mark(u *unit, o uint8) {
	for _, i := range u.idx {
		s.out[i] = o
	}
}

// result assembles the Result; summary (if non-nil) is rendered first.
// When no summary is rendered and the kept messages are a contiguous tail
// of the input, Messages shares the input's array.
func (s *selection) result(summary *memory.Summary, budget, maxMsgs int) Result {
	var r Result
	counter := s.in.Counter
	if counter == nil {
		counter = CharCounter{}
	}
	var counts [4]int
	firstKept := -1
	for i, o := range s.out {
		counts[o]++
		if o == outKept && firstKept < 0 {
			firstKept = i
		}
	}
	kept := counts[outKept]
	n := len(s.out)
	r.Kept = make([]int64, 0, kept)
	if counts[outSummarized] > 0 {
		r.Summarized = make([]int64, 0, counts[outSummarized])
	}
	if counts[outDropped] > 0 {
		r.Dropped = make([]int64, 0, counts[outDropped])
	}
	if counts[outExcluded] > 0 {
		r.Excluded = make([]int64, 0, counts[outExcluded])
	}
	tail := summary == nil && (kept == 0 || firstKept+kept == n)
	if tail {
		if kept > 0 {
			r.Messages = s.in.Messages[firstKept:n:n]
		}
	} else {
		r.Messages = make([]memory.Message, 0, kept+1)
	}
	if summary != nil {
		r.Summary = summary
		sm := SummaryMessage(*summary)
		r.Messages = append(r.Messages, sm)
		r.Tokens += MessageTokens(counter, sm)
	}
	for i, o := range s.out {
		id := s.in.Messages[i].ID
		switch o {
		case outKept:
			if !tail {
				r.Messages = append(r.Messages, s.in.Messages[i])
			}
			r.Tokens += s.a.tokens[i]
			appendID(&r.Kept, id)
		case outSummarized:
			appendID(&r.Summarized, id)
		case outExcluded:
			appendID(&r.Excluded, id)
		default:
			appendID(&r.Dropped, id)
		}
	}
	for _, u := range s.a.units {
		if u.state == stateActive {
			r.ActiveTokens += u.tokens
		}
	}
	if (budget > 0 && r.Tokens > budget) || (maxMsgs > 0 && len(r.Messages) > maxMsgs) {
		r.OverBudget = true
	}
	return r
}

func appendID(dst *[]int64, id int64) {
	if id > 0 {
		*dst = append(*dst, id)
	}
}

// limits tracks what is left of the budget while units are added.
type limits struct {
	tokens, msgs         int // used
	budget, maxMsgs      int // 0 = unlimited
	reserveTok, reserveN int // held back (e.g. for a summary)
}

func (l *limits) fits(u *unit) bool {
	if l.budget > 0 && l.tokens+l.reserveTok+u.tokens > l.budget {
		return false
	}
	if l.maxMsgs > 0 && l.msgs+l.reserveN+len(u.idx) > l.maxMsgs {
		return false
	}
	return true
}

func (l *limits) add(u *unit) {
	l.tokens += u.tokens
	l.msgs += len(u.idx)
}

// minPositive returns the smaller of two limits where 0 means unlimited.
func minPositive(a, b int) int {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}
