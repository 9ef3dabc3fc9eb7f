package compress_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

// randomHistory builds a history of random batches: some complete, some
// abandoned (incomplete), maybe an active last batch; tool calls answered in
// the same batch, or occasionally in the next batch when both are complete.
func randomHistory(rng *rand.Rand) (*hist, string, map[string]bool) {
	h := &hist{}
	n := rng.Intn(14)
	complete := map[string]bool{}
	active := ""
	if n > 0 && rng.Intn(10) < 7 {
		active = fmt.Sprintf("b%d", n-1)
	}
	for i := range n {
		b := fmt.Sprintf("b%d", i)
		complete[b] = b != active && rng.Intn(10) < 8
	}
	var pending []string // call ids awaiting a result in the next batch
	for i := range n {
		b := fmt.Sprintf("b%d", i)
		for _, c := range pending {
			h.result(b, c, "slow", "late result for "+c+". More text.")
		}
		pending = nil
		h.user(b, fmt.Sprintf("Event %d arrives. It has %s.", i, words(rng)))
		for range rng.Intn(4) {
			switch rng.Intn(3) {
			case 0:
				h.assistant(b, "Thinking about it. "+words(rng))
			case 1:
				calls := 1 + rng.Intn(2)
				var ids []string
				var tcs []memory.ToolCall
				for range calls {
					h.calls++
					id := fmt.Sprintf("call_%d", h.calls)
					ids = append(ids, id)
					tcs = append(tcs, memory.ToolCall{ID: id, Name: "search", Arguments: []byte(`{"q":"` + words(rng) + `"}`)})
				}
				h.add(b, memory.Message{Role: memory.RoleAssistant, ToolCalls: tcs})
				for _, id := range ids {
					h.result(b, id, "search", "Result: "+words(rng)+". Second sentence.")
				}
			case 2:
				next := fmt.Sprintf("b%d", i+1)
				if complete[b] && complete[next] {
					pending = append(pending, h.call(b, "slow"))
				}
			}
		}
	}
	for i := range n {
		b := fmt.Sprintf("b%d", i)
		h.setBatch(b, complete[b])
	}
	return h, active, complete
}

func words(rng *rand.Rand) string {
	vocab := []string{"alpha", "beta", "gamma", "delta", "report", "budget", "meeting", "cat", "query", "result"}
	n := 1 + rng.Intn(12)
	out := make([]byte, 0, n*7)
	for i := range n {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, vocab[rng.Intn(len(vocab))]...)
	}
	return string(out)
}

// checkInvariants verifies what every strategy promises.
func checkInvariants(t *testing.T, h *hist, in compress.Input, complete map[string]bool, r compress.Result) {
	t.Helper()
	cat := map[int64]string{}
	for name, list := range map[string][]int64{"kept": r.Kept, "summarized": r.Summarized, "dropped": r.Dropped, "excluded": r.Excluded} {
		for _, id := range list {
			if prev, ok := cat[id]; ok {
				t.Fatalf("message %d is both %s and %s", id, prev, name)
			}
			cat[id] = name
		}
	}
	if len(cat) != len(h.msgs) {
		t.Fatalf("categories cover %d of %d messages", len(cat), len(h.msgs))
	}
	batchCat := map[string]string{}
	for _, m := range h.msgs {
		c := cat[m.ID]
		switch {
		case m.BatchID == in.ActiveBatch:
			if c != "kept" {
				t.Fatalf("active message %d is %s", m.ID, c)
			}
		case !complete[m.BatchID]:
			if c != "excluded" {
				t.Fatalf("message %d of incomplete batch %s is %s", m.ID, m.BatchID, c)
			}
		}
		if prev, ok := batchCat[m.BatchID]; ok && prev != c {
			t.Fatalf("batch %s split: %s and %s", m.BatchID, prev, c)
		}
		batchCat[m.BatchID] = c
	}
	// Tool calls and results share a fate.
	callAt := map[string]int64{}
	for _, m := range h.msgs {
		for _, tc := range m.ToolCalls {
			callAt[tc.ID] = m.ID
		}
		if m.Role == memory.RoleTool {
			if c, ok := callAt[m.ToolCallID]; ok && cat[c] != cat[m.ID] {
				t.Fatalf("tool call %d is %s, its result %d is %s", c, cat[c], m.ID, cat[m.ID])
			}
		}
	}
	// Output: optional summary, then kept messages in order.
	out := r.Messages
	if r.Summary != nil {
		if out[0].ID != 0 || out[0].Role != memory.RoleUser {
			t.Fatalf("summary message %+v", out[0])
		}
		out = out[1:]
	}
	if !slices.Equal(ids(out), r.Kept) {
		t.Fatalf("output %v, kept %v", ids(out), r.Kept)
	}
	if !slices.IsSorted(r.Kept) {
		t.Fatalf("not chronological: %v", r.Kept)
	}
	c := in.Counter
	if c == nil {
		c = compress.CharCounter{}
	}
	tokens := 0
	for _, m := range r.Messages {
		tokens += compress.MessageTokens(c, m)
	}
	if tokens != r.Tokens {
		t.Fatalf("Tokens %d, recomputed %d", r.Tokens, tokens)
	}
	fits := (in.TokenBudget == 0 || r.Tokens <= in.TokenBudget) && (in.MaxMessages == 0 || len(r.Messages) <= in.MaxMessages)
	if fits == r.OverBudget {
		t.Fatalf("OverBudget %v but tokens %d/%d messages %d/%d", r.OverBudget, r.Tokens, in.TokenBudget, len(r.Messages), in.MaxMessages)
	}
	if r.OverBudget {
		for _, id := range r.Kept {
			m := h.msgs[id-1]
			if m.BatchID != in.ActiveBatch && complete[m.BatchID] && !tiedToActive(h, m, in.ActiveBatch) {
				t.Fatalf("over budget, yet complete batch %s kept", m.BatchID)
			}
		}
	}
}

// tiedToActive reports whether m is a tool call answered in the active
// batch or an answer to a call made there (it then shares its fate).
func tiedToActive(h *hist, m memory.Message, active string) bool {
	for _, o := range h.msgs {
		if o.BatchID != active {
			continue
		}
		for _, tc := range m.ToolCalls {
			if o.ToolCallID == tc.ID {
				return true
			}
		}
		for _, tc := range o.ToolCalls {
			if tc.ID == m.ToolCallID {
				return true
			}
		}
	}
	return false
}

func randomLimits(rng *rand.Rand, in *compress.Input) {
	if rng.Intn(3) > 0 {
		in.TokenBudget = 10 + rng.Intn(400)
	}
	if rng.Intn(3) == 0 {
		in.MaxMessages = 1 + rng.Intn(20)
	}
}

func TestTruncateProperties(t *testing.T) {
	var withDrops, withExcluded, over int
	defer func() {
		t.Logf("500 histories: %d with drops, %d with excluded batches, %d over budget", withDrops, withExcluded, over)
	}()
	for seed := int64(1); seed <= 500; seed++ {
		rng := rand.New(rand.NewSource(seed))
		h, active, complete := randomHistory(rng)
		in := h.input(active)
		randomLimits(rng, &in)
		keep := 0
		if rng.Intn(2) == 0 {
			keep = rng.Intn(15)
		}
		r, err := compress.Truncate{KeepRecent: keep}.Compress(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		withDrops += min(len(r.Dropped), 1)
		withExcluded += min(len(r.Excluded), 1)
		if r.OverBudget {
			over++
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, h, in, complete, r)
			if len(r.Summarized) != 0 {
				t.Fatal("truncate summarized")
			}
			// Kept complete batches are the most recent ones.
			lastDropped := int64(0)
			for _, id := range r.Dropped {
				lastDropped = max(lastDropped, id)
			}
			// (The generator makes contiguous units, so this is exact.)
			for _, id := range r.Kept {
				if h.msgs[id-1].BatchID != active && id < lastDropped {
					t.Fatalf("kept %d is older than dropped %d", id, lastDropped)
				}
			}
		})
	}
}

func TestRecursiveSummarizationProperties(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	var withSummary, calls int
	defer func() { t.Logf("200 histories: %d with a summary, %d summarizer calls", withSummary, calls) }()
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		h, active, complete := randomHistory(rng)
		in := h.input(active)
		in.Agent = fmt.Sprintf("agent-%d", seed)
		for i := range h.msgs {
			h.msgs[i].Agent = in.Agent
		}
		in.Summaries = st.Agent(in.Agent).Messages()
		randomLimits(rng, &in)
		sum := &countingSummarizer{inner: compress.Extractive{MaxChars: 300}}
		rs := compress.RecursiveSummarization{ChunkSize: 1 + rng.Intn(8), Summarizer: sum}
		r, err := rs.Compress(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if r.Summary != nil {
			withSummary++
		}
		calls += r.SummarizerCalls
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkInvariants(t, h, in, complete, r)
			// With the active batch last, every complete batch is either
			// kept or summarized.
			if len(r.Dropped) != 0 {
				t.Fatalf("dropped %v", r.Dropped)
			}
			if sum.calls != r.SummarizerCalls {
				t.Fatalf("calls %d vs %d", sum.calls, r.SummarizerCalls)
			}
			// The same request again makes no summarizer call and the same
			// output.
			r2, err := rs.Compress(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			if r2.SummarizerCalls != 0 {
				t.Fatalf("re-summarized %d times", r2.SummarizerCalls)
			}
			if !slices.Equal(r2.Kept, r.Kept) || !slices.Equal(r2.Summarized, r.Summarized) || len(r2.Messages) != len(r.Messages) {
				t.Fatalf("second run differs: kept %v/%v summarized %v/%v", r.Kept, r2.Kept, r.Summarized, r2.Summarized)
			}
			for i := range r.Messages {
				if r.Messages[i].Content != r2.Messages[i].Content {
					t.Fatalf("message %d differs", i)
				}
			}
		})
	}
}
