package compress_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// threeBatches: b1 (complete, 3 msgs with a tool pair), b2 (complete, 2),
// b3 (incomplete, not active, 2), b4 (active, 2).
func threeBatches() *hist {
	h := &hist{}
	h.user("b1", "Find the report.")
	c := h.call("b1", "search")
	h.result("b1", c, "search", "Found report.pdf in /docs.")
	h.user("b2", "Thanks. Summarise it.")
	h.assistant("b2", "It says revenue grew.")
	h.user("b3", "Half-finished event.")
	h.assistant("b3", "Working on it")
	h.user("b4", "What next?")
	h.assistant("b4", "Let me check.")
	h.setBatch("b1", true)
	h.setBatch("b2", true)
	h.setBatch("b3", false)
	h.setBatch("b4", false)
	return h
}

func TestTruncate(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		keep       int
		maxMsgs    int
		budget     int
		active     string
		wantKept   []int64
		wantDrop   []int64
		wantExcl   []int64
		overBudget bool
	}{
		{name: "no limits keeps all complete and active", active: "b4",
			wantKept: []int64{1, 2, 3, 4, 5, 8, 9}, wantExcl: []int64{6, 7}},
		{name: "keep recent counts active first", keep: 4, active: "b4",
			wantKept: []int64{4, 5, 8, 9}, wantDrop: []int64{1, 2, 3}, wantExcl: []int64{6, 7}},
		{name: "batch that does not fit whole is dropped whole", keep: 5, active: "b4",
			wantKept: []int64{4, 5, 8, 9}, wantDrop: []int64{1, 2, 3}, wantExcl: []int64{6, 7}},
		{name: "max messages caps like keep recent", maxMsgs: 2, keep: 10, active: "b4",
			wantKept: []int64{8, 9}, wantDrop: []int64{1, 2, 3, 4, 5}, wantExcl: []int64{6, 7}},
		{name: "active kept beyond keep recent", keep: 1, active: "b4",
			wantKept: []int64{8, 9}, wantDrop: []int64{1, 2, 3, 4, 5}, wantExcl: []int64{6, 7}},
		{name: "tiny token budget keeps only active", budget: 1, active: "b4", overBudget: true,
			wantKept: []int64{8, 9}, wantDrop: []int64{1, 2, 3, 4, 5}, wantExcl: []int64{6, 7}},
		{name: "no active batch: incomplete ones are all excluded",
			wantKept: []int64{1, 2, 3, 4, 5}, wantExcl: []int64{6, 7, 8, 9}},
		{name: "incomplete batch can be the active one", active: "b3",
			wantKept: []int64{1, 2, 3, 4, 5, 6, 7}, wantExcl: []int64{8, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := threeBatches().input(tc.active)
			in.MaxMessages = tc.maxMsgs
			in.TokenBudget = tc.budget
			r, err := compress.Truncate{KeepRecent: tc.keep}.Compress(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.Kept, tc.wantKept) || !slices.Equal(r.Dropped, tc.wantDrop) || !slices.Equal(r.Excluded, tc.wantExcl) {
				t.Fatalf("kept %v dropped %v excluded %v; want %v %v %v", r.Kept, r.Dropped, r.Excluded, tc.wantKept, tc.wantDrop, tc.wantExcl)
			}
			if !slices.Equal(ids(r.Messages), r.Kept) {
				t.Fatalf("messages %v != kept %v", ids(r.Messages), r.Kept)
			}
			if r.OverBudget != tc.overBudget {
				t.Fatalf("OverBudget = %v", r.OverBudget)
			}
			if len(r.Summarized) != 0 || r.Summary != nil {
				t.Fatal("truncate summarized")
			}
		})
	}
}

func TestTruncateTokenBudget(t *testing.T) {
	h := threeBatches()
	in := h.input("b4")
	c := compress.CharCounter{}
	cost := func(from, to int64) int {
		n := 0
		for _, m := range h.msgs[from-1 : to] {
			n += compress.MessageTokens(c, m)
		}
		return n
	}
	// Exactly active + b2 fits; one token less drops b2 as well.
	in.TokenBudget = cost(8, 9) + cost(4, 5)
	r, _ := compress.Truncate{}.Compress(context.Background(), in)
	if !slices.Equal(r.Kept, []int64{4, 5, 8, 9}) || r.Tokens != in.TokenBudget || r.OverBudget {
		t.Fatalf("kept %v tokens %d budget %d", r.Kept, r.Tokens, in.TokenBudget)
	}
	in.TokenBudget--
	r, _ = compress.Truncate{}.Compress(context.Background(), in)
	if !slices.Equal(r.Kept, []int64{8, 9}) || r.ActiveTokens != cost(8, 9) {
		t.Fatalf("kept %v", r.Kept)
	}
}

func TestToolPairAcrossBatches(t *testing.T) {
	h := &hist{}
	h.user("b1", "old")
	h.user("b2", "start")
	c := h.call("b2", "slow_job")
	h.user("b3", "unrelated")
	h.result("b4", c, "slow_job", "done")
	h.user("b5", "now")
	for _, b := range []string{"b1", "b2", "b3", "b4"} {
		h.setBatch(b, true)
	}
	in := h.input("b5")
	in.MaxMessages = 3 // b5 + b4 would fit, but b4 is tied to b2
	r, err := compress.Truncate{}.Compress(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// b2+b4 is one unit of 3 messages: it does not fit beside b5.
	if !slices.Equal(r.Kept, []int64{6}) {
		t.Fatalf("kept %v", r.Kept)
	}
	in.MaxMessages = 5
	r, _ = compress.Truncate{}.Compress(context.Background(), in)
	if !slices.Equal(r.Kept, []int64{2, 3, 4, 5, 6}) {
		t.Fatalf("kept %v", r.Kept)
	}
	// A tool result in the active batch pulls its call's batch in.
	h2 := &hist{}
	c2 := h2.call("b1", "job")
	h2.user("b2", "x")
	h2.result("b3", c2, "job", "ok")
	h2.setBatch("b1", true)
	h2.setBatch("b2", true)
	in2 := h2.input("b3")
	in2.MaxMessages = 1
	r, _ = compress.Truncate{}.Compress(context.Background(), in2)
	if !slices.Equal(r.Kept, []int64{1, 3}) || !r.OverBudget {
		t.Fatalf("kept %v over %v", r.Kept, r.OverBudget)
	}
	// ... and an incomplete batch tied to a complete one excludes both.
	h3 := &hist{}
	c3 := h3.call("b1", "job")
	h3.result("b2", c3, "job", "ok")
	h3.setBatch("b1", true)
	r, _ = compress.Truncate{}.Compress(context.Background(), h3.input(""))
	if len(r.Kept) != 0 || !slices.Equal(r.Excluded, []int64{1, 2}) {
		t.Fatalf("kept %v excluded %v", r.Kept, r.Excluded)
	}
}

func TestTruncateInvalid(t *testing.T) {
	if _, err := (compress.Truncate{KeepRecent: -1}).Compress(context.Background(), compress.Input{}); !errors.Is(err, compress.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (compress.Truncate{}).Compress(ctx, compress.Input{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// storedHistory appends n complete batches of two messages each (and an
// active batch of one) to a real store and returns the Input read back.
func storedHistory(t *testing.T, st *memory.Store, agent string, n int, activeID string) compress.Input {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		b := "batch-" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		if _, err := st.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: b, Content: "Question number " + b + ". Some more words here."}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: b, Content: "Answer for " + b + ". Details follow."}); err != nil {
			t.Fatal(err)
		}
		if err := st.Agent(agent).Messages().CompleteBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if activeID != "" {
		if _, err := st.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: activeID, Content: "The current question."}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, err := st.Agent(agent).Messages().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	batches, err := st.Agent(agent).Messages().Batches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return compress.Input{Agent: agent, Messages: msgs, Batches: batches, ActiveBatch: activeID, Summaries: st.Agent(agent).Messages()}
}

func TestRecursiveSummarizationReusesSummaries(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 10, "active") // ids 1..20 complete, 21 active
	in.MaxMessages = 8
	sum := &countingSummarizer{}
	rs := compress.RecursiveSummarization{ChunkSize: 6, SummarizationModel: "test-model", Summarizer: sum}

	r1, err := rs.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	// 21 messages, cap 8 = summary + active + 6 kept: 14 must go, in chunks
	// of >= 6 messages (3 batches): 6 + 6 + 6 → ids 1..18 summarized.
	if sum.calls != 3 || r1.SummarizerCalls != 3 {
		t.Fatalf("calls = %d", sum.calls)
	}
	if !slices.Equal(r1.Summarized, idRange(1, 18)) || !slices.Equal(r1.Kept, idRange(19, 21)) || len(r1.Dropped) != 0 {
		t.Fatalf("summarized %v kept %v dropped %v", r1.Summarized, r1.Kept, r1.Dropped)
	}
	if r1.Summary == nil || r1.Messages[0].Role != memory.RoleUser || !strings.HasPrefix(r1.Messages[0].Content, compress.SummaryHeading) {
		t.Fatalf("no summary message first: %+v", r1.Messages[0])
	}
	// Each chunk folded in the previous summary.
	if sum.previous[0] != "" || !strings.HasPrefix(sum.previous[1], "summary 1 ") || !strings.HasPrefix(sum.previous[2], "summary 2 ") {
		t.Fatalf("previous texts %q", sum.previous)
	}
	latest, err := st.Agent("ann").Messages().LatestSummary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if latest.ID != r1.Summary.ID || latest.LastMessageID != 18 || latest.FirstMessageID != 13 || latest.Model != "test-model" || latest.PreviousID == 0 {
		t.Fatalf("latest summary %+v", latest)
	}

	// Second build, same history: no new summary, same output.
	r2, err := rs.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if sum.calls != 3 || r2.SummarizerCalls != 0 {
		t.Fatalf("re-summarized: calls = %d", sum.calls)
	}
	if !slices.Equal(r2.Kept, r1.Kept) || !slices.Equal(r2.Summarized, r1.Summarized) || r2.Messages[0].Content != r1.Messages[0].Content {
		t.Fatalf("second build differs: %v %v", r2.Kept, r2.Summarized)
	}

	// One more batch: it fits after summarizing one more chunk, which
	// folds in the stored summary.
	if err := st.Agent("ann").Messages().CompleteBatch(ctx, "active"); err != nil {
		t.Fatal(err)
	}
	in3 := storedHistory(t, st, "ann", 0, "")
	in3.MaxMessages = 8
	in3.Messages = append(in3.Messages, memory.Message{Role: memory.RoleUser, BatchID: "next", Content: "unsaved current message"})
	in3.ActiveBatch = "next"
	r3, err := rs.Compress(ctx, in3)
	if err != nil {
		t.Fatal(err)
	}
	if r3.SummarizerCalls != 0 {
		// 19..21 + unsaved + summary = 5 messages: still fits.
		t.Fatalf("calls %d", r3.SummarizerCalls)
	}
	if got := r3.Messages[len(r3.Messages)-1].Content; got != "unsaved current message" {
		t.Fatalf("last message %q", got)
	}
}

func TestRecursiveSummarizationFoldsStoredSummary(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 6, "active") // 1..12, 13 active
	in.MaxMessages = 4
	sum := &countingSummarizer{inner: compress.Extractive{}}
	rs := compress.RecursiveSummarization{ChunkSize: 4, Summarizer: sum}
	r1, err := rs.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	first := r1.Summary
	// A longer history on the next request: the new summary starts from the
	// stored one.
	if err := st.Agent("ann").Messages().CompleteBatch(ctx, "active"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		b := "late" + string(rune('0'+i))
		st.Agent("ann").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: b, Content: "Late question " + b + "."})
		st.Agent("ann").Messages().CompleteBatch(ctx, b)
	}
	in2 := storedHistory(t, st, "ann", 0, "active2")
	in2.MaxMessages = 4
	calls := sum.calls
	r2, err := rs.Compress(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	if r2.SummarizerCalls == 0 || sum.calls != calls+r2.SummarizerCalls {
		t.Fatalf("no new summary")
	}
	if sum.previous[calls] != first.Content {
		t.Fatalf("new summary did not start from the stored one: %q", sum.previous[calls])
	}
	// The stored chain links back.
	if r2.Summary.PreviousID == 0 || r2.Summary.ID <= first.ID {
		t.Fatalf("summary chain %+v", r2.Summary)
	}
	if !strings.Contains(r2.Summary.Content, "Late question") {
		t.Fatalf("summary misses new messages: %q", r2.Summary.Content)
	}
}

func TestRecursiveSummarizationErrors(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 4, "active")
	in.MaxMessages = 3
	boom := errors.New("boom")
	_, err := compress.RecursiveSummarization{Summarizer: &countingSummarizer{fail: boom}}.Compress(ctx, in)
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	r, err := compress.RecursiveSummarization{Summarizer: &countingSummarizer{fail: boom}, DropOnError: true}.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || r.Summary != nil || !slices.Equal(r.Kept, []int64{7, 8, 9}) || !slices.Equal(r.Dropped, idRange(1, 6)) {
		t.Fatalf("kept %v dropped %v warnings %v", r.Kept, r.Dropped, r.Warnings)
	}
	in.Summaries = nil
	if _, err := (compress.RecursiveSummarization{}).Compress(ctx, in); !errors.Is(err, compress.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if _, err := (compress.RecursiveSummarization{ChunkSize: -1}).Compress(ctx, in); !errors.Is(err, compress.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestRecursiveSummarizationSummaryTooBig(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 3, "active")
	c := compress.CharCounter{}
	active := compress.MessageTokens(c, in.Messages[len(in.Messages)-1])
	in.TokenBudget = active + 2 // nothing else fits, not even a summary
	r, err := compress.RecursiveSummarization{Summarizer: &countingSummarizer{}}.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary != nil || len(r.Warnings) != 1 || !slices.Equal(r.Kept, []int64{7}) || !slices.Equal(r.Summarized, idRange(1, 6)) || r.OverBudget {
		t.Fatalf("%+v", r)
	}
}

func TestRecursiveSummarizationKeepsInterleavedBatches(t *testing.T) {
	// b2 completes after the active batch began: it cannot be summarized
	// (summaries cover id ranges), so it is kept or dropped.
	ctx := context.Background()
	st := openStore(t)
	h := &hist{}
	h.user("b1", "one")
	h.user("b1", "two")
	h.user("act", "current")
	h.user("b2", "late")
	h.setBatch("b1", true)
	h.setBatch("b2", true)
	in := h.input("act")
	in.Summaries = st.Agent(in.Agent).Messages()
	in.MaxMessages = 2
	r, err := compress.RecursiveSummarization{Summarizer: &countingSummarizer{}}.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	// summary + active fill the cap; b2 (newest) does not fit and cannot be
	// summarized, b1 is summarized.
	if !slices.Equal(r.Summarized, []int64{1, 2}) || !slices.Equal(r.Dropped, []int64{4}) || !slices.Equal(r.Kept, []int64{3}) {
		t.Fatalf("%v %v %v", r.Summarized, r.Dropped, r.Kept)
	}
}

func TestSummaryMessage(t *testing.T) {
	m := compress.SummaryMessage(memory.Summary{Agent: "a", Content: "x"})
	if m.Role != memory.RoleUser || m.Content != compress.SummaryHeading+"\nx" || m.ID != 0 {
		t.Fatalf("%+v", m)
	}
}

func TestMessageTokens(t *testing.T) {
	c := compress.CharCounter{}
	if got := compress.MessageTokens(c, memory.Message{Content: "abcdefgh"}); got != 4+2 {
		t.Fatalf("got %d", got)
	}
	m := memory.Message{ToolCalls: []memory.ToolCall{{Name: "abcd", Arguments: []byte(`{}`)}}, ToolCallID: "x", Name: "ab"}
	if got := compress.MessageTokens(c, m); got != 4+1+1+1+3+1+1 {
		t.Fatalf("got %d", got)
	}
	if got := (compress.CharCounter{}).Count("héllo"); got != 2 {
		t.Fatalf("got %d", got)
	}
}

func TestDefaultSummarizerIsExtractive(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	in := storedHistory(t, st, "ann", 3, "active")
	in.MaxMessages = 2
	r, err := compress.RecursiveSummarization{}.Compress(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary == nil || r.Summary.Model != "extractive" || !strings.Contains(r.Summary.Content, "- user: Question number batch-aa.") {
		t.Fatalf("%+v", r.Summary)
	}
}
