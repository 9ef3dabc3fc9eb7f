package compress

import (
	"context"
	"errors"
	"fmt"

	"github.com/engram-go/engram/memory"
)

// DefaultChunkSize is RecursiveSummarization's chunk size when ChunkSize is 0.
const DefaultChunkSize = 20

// Summarizer condenses messages into a summary that folds in the previous
// summary ("" when there is none).
type Summarizer interface {
	Summarize(ctx context.Context, previous string, msgs []memory.Message) (string, error)
}

// modelNamer is implemented by summarizers that can name their model
// (recorded in memory.Summary.Model).
type modelNamer interface{ Model() string }

// RecursiveSummarization keeps the most recent complete batches that fit the
// budget and folds the older ones into a running summary, ChunkSize
// messages (whole batches) at a time. Each chunk's summary folds in the one
// before it and is saved through Input.Summaries; the next compression
// starts from LatestSummary, so batches already summarized are not
// summarized again. A new summary is made only when the history does not
// fit, and then covers at least ChunkSize messages, so summarizer calls are
// rare.
//
// Only batches that ended before the active batch began are summarized
// (a summary covers a contiguous range of message ids); complete batches
// interleaved with the active one are kept if they fit, else dropped.
//
// Limitation: a summary records the last message id it covers. A batch that
// was incomplete when a summary was made and completes later, with all its
// messages before that id, counts as summarized though it is not in the
// summary text.
type RecursiveSummarization struct {
	// ChunkSize is how many messages (whole batches; at least one batch)
	// go into one Summarize call; 0 means DefaultChunkSize.
	ChunkSize int
	// SummarizationModel names the model, recorded with each summary. When
	// Summarizer is nil, "" or "extractive" selects Extractive, and any other
	// name an OpenAISummarizer for that model configured from the
	// environment (see OpenAIOptions).
	SummarizationModel string
	// Summarizer makes the summaries; see SummarizationModel for nil.
	Summarizer Summarizer
	// DropOnError drops the batches that should have been summarized when
	// the summarizer fails (with a warning in the Result) instead of
	// returning the error.
	DropOnError bool
}

func (r RecursiveSummarization) summarizer() (Summarizer, string, error) {
	s := r.Summarizer
	if s == nil {
		if r.SummarizationModel == "" || r.SummarizationModel == "extractive" {
			s = Extractive{}
		} else {
			o, err := NewOpenAI(&OpenAIOptions{Model: r.SummarizationModel})
			if err != nil {
				return nil, "", err
			}
			s = o
		}
	}
	model := r.SummarizationModel
	if model == "" {
		if n, ok := s.(modelNamer); ok {
			model = n.Model()
		}
	}
	return s, model, nil
}

// Compress implements MessageCompressor.
func (r RecursiveSummarization) Compress(ctx context.Context, in Input) (Result, error) {
	if r.ChunkSize < 0 {
		return Result{}, fmt.Errorf("%w: RecursiveSummarization.ChunkSize %d is negative", ErrInvalid, r.ChunkSize)
	}
	if in.Summaries == nil {
		return Result{}, fmt.Errorf("%w: RecursiveSummarization needs Input.Summaries", ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	chunkSize := r.ChunkSize
	if chunkSize == 0 {
		chunkSize = DefaultChunkSize
	}
	counter := in.Counter
	if counter == nil {
		counter = CharCounter{}
	}
	a := analyze(in)
	s := newSelection(in, a)

	var cur *memory.Summary
	if prev, err := in.Summaries.LatestSummary(ctx); err == nil {
		cur = &prev
	} else if !errors.Is(err, memory.ErrNotFound) {
		return Result{}, fmt.Errorf("compress: latest summary of %q: %w", in.Agent, err)
	}

	base := limits{budget: in.TokenBudget, maxMsgs: in.MaxMessages}
	var activeMin int64
	for _, u := range a.units {
		if u.state == stateActive {
			base.add(u)
			if u.minID > 0 && (activeMin == 0 || u.minID < activeMin) {
				activeMin = u.minID
			}
		}
	}
	var rest []*unit
	for _, u := range a.units {
		if u.state != stateComplete {
			continue
		}
		if cur != nil && u.minID > 0 && u.maxID <= cur.LastMessageID {
			s.mark(u, outSummarized)
			continue
		}
		rest = append(rest, u)
	}
	summarizable := func(u *unit) bool {
		return u.minID > 0 && (activeMin == 0 || u.maxID < activeMin)
	}

	var res Result
	var calls int
	var warnings []string
	var keepFrom int // rest[keepFrom:] are kept
	for {
		l := base
		if cur != nil {
			l.reserveTok = MessageTokens(counter, SummaryMessage(*cur))
			l.reserveN = 1
		}
		k := len(rest)
		for k > 0 && l.fits(rest[k-1]) {
			l.add(rest[k-1])
			k--
		}
		keepFrom = k
		if k == 0 || !summarizable(rest[0]) {
			break
		}
		var chunk []memory.Message
		n := 0
		first, last := rest[0].minID, int64(0)
		for n < len(rest) && summarizable(rest[n]) && (n == 0 || len(chunk) < chunkSize) {
			u := rest[n]
			for _, i := range u.idx {
				chunk = append(chunk, in.Messages[i])
			}
			first = min(first, u.minID)
			last = max(last, u.maxID)
			n++
		}
		summ, model, err := r.summarizer()
		if err != nil {
			return Result{}, err
		}
		prevText := ""
		var prevID int64
		if cur != nil {
			prevText, prevID = cur.Content, cur.ID
		}
		calls++
		text, err := summ.Summarize(ctx, prevText, chunk)
		if err != nil {
			if !r.DropOnError || ctx.Err() != nil {
				return Result{}, fmt.Errorf("compress: summarize messages %d..%d of %q: %w", first, last, in.Agent, err)
			}
			warnings = append(warnings, fmt.Sprintf("summarizer failed, %d older messages dropped: %v", k, err))
			break
		}
		saved, err := in.Summaries.SaveSummary(ctx, memory.Summary{
			Agent:          in.Agent,
			FirstMessageID: first,
			LastMessageID:  last,
			PreviousID:     prevID,
			Content:        text,
			Model:          model,
		})
		if err != nil {
			return Result{}, fmt.Errorf("compress: save summary of messages %d..%d of %q: %w", first, last, in.Agent, err)
		}
		cur = &saved
		for _, u := range rest[:n] {
			s.mark(u, outSummarized)
		}
		rest = rest[n:]
	}
	for _, u := range rest[keepFrom:] {
		s.mark(u, outKept)
	}
	if cur != nil && in.TokenBudget > 0 {
		st := MessageTokens(counter, SummaryMessage(*cur))
		if base.tokens+st > in.TokenBudget {
			warnings = append(warnings, fmt.Sprintf("summary #%d left out: its %d tokens do not fit beside the active batch (%d of %d tokens)", cur.ID, st, base.tokens, in.TokenBudget))
			cur = nil
		}
	}
	res = s.result(cur, in.TokenBudget, in.MaxMessages)
	res.SummarizerCalls = calls
	res.Warnings = warnings
	return res, nil
}

// SummaryHeading starts the content of a summary message.
const SummaryHeading = "[Summary of the earlier conversation]"

// SummaryMessage renders a summary as the user message placed ahead of the
// kept history (ID 0: it is not a stored message).
func SummaryMessage(s memory.Summary) memory.Message {
	return memory.Message{
		Agent:   s.Agent,
		Role:    memory.RoleUser,
		Content: SummaryHeading + "\n" + s.Content,
	}
}
