package builder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

func sectionNames(req *builder.Request) []string {
	var out []string
	for _, s := range req.Sections {
		out = append(out, s.Name)
	}
	return out
}

func build(t *testing.T, b builder.Builder) *builder.Request {
	t.Helper()
	req, err := b.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestBuilderIsAValue(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	mustBlock(t, st, "other", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am the other agent."})
	// Three separate appends leave spare capacity (len 3, cap 4): a naive
	// append in a and b would then write to the same array.
	base := builder.New(nil, builder.DefaultConfig()).
		WithToolRules(toolrules.ExitLoop("send_message")).WithToolRules(toolrules.ContinueLoop("search")).WithToolRules(toolrules.MaxCalls("x", 1)).
		WithBatchBlocks("ticket-42").WithBatchBlocks("plan").WithBatchBlocks("persona").
		WithAttachment("k", "shared attachment", 5, false).WithAttachment("k2", "two", 5, false).WithAttachment("k3", "three", 5, false).
		WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "base message"}).
		WithCurrentMessage(memory.Message{Role: memory.RoleAssistant, Content: "ok"}).
		WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "base message"})
	a := base.ForAgent(st.Agent("entropy")).WithToolRules(toolrules.MaxCalls("a_tool", 2)).WithBatchBlocks("scratch").
		WithAttachment("k", "replaced in a", 5, false).WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "a message"})
	b := base.ForAgent(st.Agent("entropy")).WithToolRules(toolrules.MaxCalls("b_tool", 2)).
		WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "b message"})
	other := base.ForAgent(st.Agent("other"))

	ra, rb, ro := build(t, a), build(t, b), build(t, other)
	if !strings.Contains(ra.System, "`a_tool`") || strings.Contains(ra.System, "`b_tool`") {
		t.Fatalf("a's rules:\n%s", ra.System)
	}
	if !strings.Contains(rb.System, "`b_tool`") || strings.Contains(rb.System, "`a_tool`") {
		t.Fatalf("b's rules:\n%s", rb.System)
	}
	if !strings.Contains(ra.System, "<block:scratch") || strings.Contains(rb.System, "<block:scratch") {
		t.Fatal("batch blocks aliased")
	}
	if !strings.Contains(ra.System, "replaced in a") || !strings.Contains(rb.System, "shared attachment") || strings.Contains(rb.System, "replaced in a") {
		t.Fatal("attachments aliased")
	}
	last := func(r *builder.Request) string { return r.Messages[len(r.Messages)-1].Content }
	if last(ra) != "a message" || last(rb) != "b message" || last(ro) != "base message" {
		t.Fatalf("current messages: %q %q %q", last(ra), last(rb), last(ro))
	}
	if !strings.Contains(ro.System, "I am the other agent.") || strings.Contains(ro.System, "Entropy") {
		t.Fatal("agents mixed")
	}
	// The base itself is unchanged: building it fails only for want of an
	// agent.
	if _, err := base.Build(context.Background()); !errors.Is(err, builder.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestSystemPromptOrder(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	activity := builder.ActivityFunc(func(ctx context.Context, a builder.Agent, limit int) (string, error) {
		return fmt.Sprintf("# Recent Activity\n\n- %s did %d things <block:x>", a.ID(), limit), nil
	})
	for _, prefix := range []bool{false, true} {
		cfg := builder.DefaultConfig()
		cfg.ActivityRenderer = activity
		cfg.ActivityEntriesLimit = 3
		cfg.PrefixCacheOrder = prefix
		req := build(t, builder.New(st.Agent("entropy"), cfg).WithToolRules(toolrules.ExitLoop("send_message")).
			WithAttachment("a", "attached", 1, false))
		want := []string{"base_instructions", "core_blocks", "working_blocks", "attachments", "activity", "tool_rules"}
		if prefix {
			want = []string{"base_instructions", "tool_rules", "core_blocks", "working_blocks", "attachments", "activity"}
		}
		if got := sectionNames(req); !slices.Equal(got, want) {
			t.Fatalf("prefix=%v: sections %v", prefix, got)
		}
		var joined []string
		for _, s := range req.Sections {
			joined = append(joined, s.Text)
		}
		if strings.Join(joined, "\n\n") != req.System {
			t.Fatal("sections do not make up the system prompt")
		}
		if !strings.Contains(req.System, "- entropy did 3 things &lt;block:x>") {
			t.Fatalf("activity section:\n%s", req.System)
		}
		stable := req.Metadata.StablePrefixEnd
		if prefix {
			if req.System[:stable] != req.Sections[0].Text+"\n\n"+req.Sections[1].Text {
				t.Fatalf("stable prefix %q", req.System[:stable])
			}
		} else if req.System[:stable] != req.Sections[0].Text {
			t.Fatalf("stable prefix %q", req.System[:stable])
		}
	}
	failing := builder.ActivityFunc(func(context.Context, builder.Agent, int) (string, error) { return "", errors.New("no log") })
	cfg := builder.DefaultConfig()
	cfg.ActivityRenderer = failing
	if _, err := builder.New(st.Agent("entropy"), cfg).Build(context.Background()); err == nil || !strings.Contains(err.Error(), "no log") {
		t.Fatalf("err = %v", err)
	}
}

func TestBlockSelection(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "journal", Type: blocks.Log, Pinned: true})
	mustBlock(t, st, "entropy", memory.BlockSpec{Label: "library", Type: blocks.Archival, Pinned: true, Value: "archival text"})
	tests := []struct {
		name     string
		batch    []string
		descr    bool
		want     []string
		absent   []string
		warnings int
	}{
		{"pinned only", nil, true, []string{"<block:persona", "<block:human", "<block:shared_notes", "<block:plan", "Who you are."},
			[]string{"<block:ticket-42", "<block:scratch", "<block:journal", "<block:library"}, 0},
		{"named by batch", []string{"ticket-42", "scratch"}, true, []string{"<block:ticket-42", "<block:scratch"}, nil, 0},
		{"unknown name warns", []string{"nope", "nope"}, true, nil, []string{"<block:nope"}, 1},
		{"descriptions off", nil, false, []string{"<block:persona permission=\"ReadWrite\">\nYou are Entropy."}, []string{"Who you are."}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := builder.DefaultConfig()
			cfg.OmitDescriptions = !tc.descr
			req := build(t, builder.New(st.Agent("entropy"), cfg).WithBatchBlocks(tc.batch...))
			for _, w := range tc.want {
				if !strings.Contains(req.System, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, w := range tc.absent {
				if strings.Contains(req.System, w) {
					t.Errorf("unexpected %q", w)
				}
			}
			if len(req.Metadata.Warnings) != tc.warnings {
				t.Errorf("warnings %v", req.Metadata.Warnings)
			}
		})
	}
}

func TestMemoryBudgetPruning(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	text := strings.Repeat("word ", 40) // ~40 tokens per block
	mustBlock(t, st, "a", memory.BlockSpec{Label: "core1", Type: blocks.Core, Value: text})
	for _, p := range []struct {
		label string
		prio  int
	}{{"w_low", 1}, {"w_high", 9}, {"w_mid", 5}, {"w_mid2", 5}} {
		mustBlock(t, st, "a", memory.BlockSpec{Label: p.label, Type: blocks.Working, Pinned: true, Priority: p.prio, Value: text})
	}
	cfg := builder.DefaultConfig()
	cfg.Counter = builder.CharCounter{}
	measure := build(t, builder.New(st.Agent("a"), cfg))
	per := measure.Metadata.BlocksIncluded[1].Tokens
	core := measure.Metadata.BlocksIncluded[0].Tokens

	tests := []struct {
		name        string
		budget      int
		attachments [][3]any // key, priority, essential
		wantDropped []string
		over        bool
	}{
		{"fits", core + 4*per + 10, nil, nil, false},
		{"one over: highest number first", core + 3*per + 10, nil, []string{"w_high"}, false},
		{"ties: later first", core + 2*per + 10, nil, []string{"w_high", "w_mid2"}, false},
		{"attachments compete by priority", core + 3*per + 10, [][3]any{{"att", 7, false}}, []string{"w_high", "att"}, false},
		{"essential attachment stays", core + per + 10, [][3]any{{"ess", 99, true}}, []string{"w_high", "w_mid", "w_mid2", "w_low"}, false},
		{"core never dropped", 5, nil, []string{"w_high", "w_mid", "w_mid2", "w_low"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg
			c.DefaultLimits = builder.ModelContextLimits{MemoryTokens: tc.budget}
			b := builder.New(st.Agent("a"), c)
			for _, a := range tc.attachments {
				b = b.WithAttachment(a[0].(string), text, a[1].(int), a[2].(bool))
			}
			req, err := b.Build(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var dropped []string
			for _, d := range req.Metadata.BlocksDropped {
				dropped = append(dropped, d.Label)
				if !strings.Contains(d.Reason, "memory budget") {
					t.Errorf("reason %q", d.Reason)
				}
				if strings.Contains(req.System, "<block:"+d.Label+" ") {
					t.Errorf("%s dropped but present", d.Label)
				}
			}
			slices.Sort(dropped)
			want := slices.Clone(tc.wantDropped)
			slices.Sort(want)
			if !slices.Equal(dropped, want) {
				t.Fatalf("dropped %v, want %v", dropped, tc.wantDropped)
			}
			if !strings.Contains(req.System, "<block:core1") {
				t.Fatal("core block dropped")
			}
			mem := req.Metadata.Tokens.Core + req.Metadata.Tokens.Working + req.Metadata.Tokens.Attachments
			if !tc.over && mem > tc.budget {
				t.Fatalf("memory %d over budget %d", mem, tc.budget)
			}
			if tc.over != (len(req.Metadata.Warnings) > 0) {
				t.Fatalf("warnings %v", req.Metadata.Warnings)
			}
		})
	}
}

func TestBudgets(t *testing.T) {
	st := openStore(t)
	mustBlock(t, st, "a", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am brief."})
	for i := range 30 {
		exchange(t, st, "a", fmt.Sprintf("b%02d", i), fmt.Sprintf("Question %d with a few words of padding here.", i), fmt.Sprintf("Answer %d, also padded with several words.", i))
	}
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "now", Content: "The current question, which must never be dropped."})
	tests := []struct {
		name   string
		limits builder.ModelContextLimits
		cap    int
		check  func(t *testing.T, req *builder.Request)
	}{
		{"no limits keep everything", builder.ModelContextLimits{MaxTokens: -1, MemoryTokens: -1, ReservedResponseTokens: -1}, -1, func(t *testing.T, req *builder.Request) {
			if len(req.Messages) != 61 || req.Metadata.OverBudget {
				t.Fatalf("%d messages", len(req.Messages))
			}
		}},
		{"zero values mean the defaults: at most 50 messages, whole batches", builder.ModelContextLimits{}, 0, func(t *testing.T, req *builder.Request) {
			if n := len(req.Messages); n > builder.DefaultMaxMessagesCap || n < builder.DefaultMaxMessagesCap-2 || req.Metadata.Tokens.InputBudget != builder.DefaultMaxTokens-builder.DefaultReservedResponseTokens {
				t.Fatalf("%d messages, tokens %+v", n, req.Metadata.Tokens)
			}
		}},
		{"reserved response tokens shrink the input budget", builder.ModelContextLimits{MaxTokens: 800, ReservedResponseTokens: 300}, 0, func(t *testing.T, req *builder.Request) {
			md := req.Metadata
			if md.Tokens.InputBudget != 500 || md.Tokens.Total > 500 || md.Tokens.HistoryBudget != 500-md.Tokens.System-md.Tokens.Tools {
				t.Fatalf("tokens %+v", md.Tokens)
			}
			if len(md.MessagesDropped) == 0 || md.OverBudget {
				t.Fatalf("dropped %v over %v", md.MessagesDropped, md.OverBudget)
			}
		}},
		{"history tokens", builder.ModelContextLimits{HistoryTokens: 120}, 0, func(t *testing.T, req *builder.Request) {
			if h := req.Metadata.Tokens.History; h > 120 || h < 60 {
				t.Fatalf("history %d", h)
			}
		}},
		{"max messages cap", builder.ModelContextLimits{}, 7, func(t *testing.T, req *builder.Request) {
			if len(req.Messages) != 7 || req.Messages[6].BatchID != "now" {
				t.Fatalf("%d messages", len(req.Messages))
			}
		}},
		{"current message survives a tiny budget", builder.ModelContextLimits{MaxTokens: 60, ReservedResponseTokens: 10}, 0, func(t *testing.T, req *builder.Request) {
			if len(req.Messages) != 1 || req.Messages[0].BatchID != "now" || !req.Metadata.OverBudget || len(req.Metadata.Warnings) == 0 {
				t.Fatalf("%+v", req.Metadata)
			}
			if !strings.Contains(req.System, "I am brief.") {
				t.Fatal("system prompt lost")
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := builder.ContextConfig{DefaultLimits: tc.limits, MaxMessagesCap: tc.cap}
			req := build(t, builder.New(st.Agent("a"), cfg).WithMessages(st.Agent("a").Messages()).WithActiveBatch("now"))
			tc.check(t, req)
		})
	}
}

func TestLimitsFor(t *testing.T) {
	cfg := builder.ContextConfig{
		DefaultLimits: builder.ModelContextLimits{MaxTokens: 1000, MemoryTokens: 100, HistoryTokens: 200, ReservedResponseTokens: 50},
		ModelOverrides: map[string]builder.ModelContextLimits{
			"gpt-4o":      {MaxTokens: 128000},
			"gpt-4o-mini": {MaxTokens: 64000, MemoryTokens: 5000},
			"claude":      {MaxTokens: 200000, ReservedResponseTokens: 4096},
		},
	}
	tests := []struct {
		model string
		want  builder.ModelContextLimits
	}{
		{"unknown", builder.ModelContextLimits{MaxTokens: 1000, MemoryTokens: 100, HistoryTokens: 200, ReservedResponseTokens: 50}},
		{"gpt-4o", builder.ModelContextLimits{MaxTokens: 128000, MemoryTokens: 100, HistoryTokens: 200, ReservedResponseTokens: 50}},
		{"gpt-4o-2024-08-06", builder.ModelContextLimits{MaxTokens: 128000, MemoryTokens: 100, HistoryTokens: 200, ReservedResponseTokens: 50}},
		{"gpt-4o-mini-2024", builder.ModelContextLimits{MaxTokens: 64000, MemoryTokens: 5000, HistoryTokens: 200, ReservedResponseTokens: 50}},
		{"anthropic/Claude-3-5-sonnet", builder.ModelContextLimits{MaxTokens: 200000, MemoryTokens: 100, HistoryTokens: 200, ReservedResponseTokens: 4096}},
	}
	for _, tc := range tests {
		if got := cfg.LimitsFor(tc.model); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.model, got, tc.want)
		}
	}
	if got := (builder.ModelContextLimits{MaxTokens: 100, ReservedResponseTokens: 30}).InputBudget(); got != 70 {
		t.Fatalf("input budget %d", got)
	}
}

func TestModelAdjustments(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	// b1: an assistant message calling two tools, only one answered.
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b1", Content: "Check two things."})
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: "b1", Content: "Checking.", ToolCalls: []memory.ToolCall{{ID: "c1", Name: "one"}, {ID: "c2", Name: "two"}}})
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleTool, BatchID: "b1", ToolCallID: "c1", Name: "one", Content: "ok"})
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: "b1", ToolCalls: []memory.ToolCall{{ID: "c3", Name: "three"}}})
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleSystem, BatchID: "b1", Content: "System note in history."})
	complete(t, st, "a", "b1")
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b2", Content: "Next."})
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b2", Content: "And more."})

	plain := build(t, builder.New(st.Agent("a"), builder.DefaultConfig()).WithMessages(st.Agent("a").Messages()).WithModelInfo(builder.ModelInfoFor("gpt-4o")))
	// The unanswered call c2 is removed, the call-only message with c3 dropped.
	var got []string
	for _, m := range plain.Messages {
		s := string(m.Role) + ":" + m.Content
		for _, tc := range m.ToolCalls {
			s += "+" + tc.ID
		}
		got = append(got, s)
	}
	want := []string{"user:Check two things.", "assistant:Checking.+c1", "tool:ok", "system:System note in history.", "user:Next.", "user:And more."}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
	if !slices.Contains(plain.Metadata.MessagesDropped, 4) || slices.Contains(plain.Metadata.MessagesKept, 4) || plain.System == "" {
		t.Fatalf("metadata %+v", plain.Metadata)
	}
	// The stored message is unchanged.
	stored, _ := st.Agent("a").Messages().List(ctx, &memory.MessageQuery{AfterID: 1, Limit: 1})
	if len(stored[0].ToolCalls) != 2 {
		t.Fatal("adjustment modified the store's message")
	}

	gemma := build(t, builder.New(st.Agent("a"), builder.DefaultConfig()).WithMessages(st.Agent("a").Messages()).WithModelInfo(builder.ModelInfoFor("gemma-2")))
	if gemma.System != "" || gemma.Messages[0].Role != memory.RoleUser || !strings.HasPrefix(gemma.Messages[0].Content, builder.DefaultBaseInstructions[:20]) {
		t.Fatalf("system prompt not sent as user: %q", gemma.Messages[0].Content[:40])
	}
	if !strings.HasSuffix(gemma.Messages[0].Content, "\n\nCheck two things.") {
		t.Fatal("system prompt not merged into the first user message")
	}
	for i, m := range gemma.Messages {
		if m.Role == memory.RoleSystem {
			t.Fatal("system role left")
		}
		if i > 0 && m.Role == memory.RoleUser && gemma.Messages[i-1].Role == memory.RoleUser && m.ToolCallID == "" {
			t.Fatalf("consecutive user messages at %d", i)
		}
		if strings.TrimSpace(m.Content) == "" && len(m.ToolCalls) == 0 {
			t.Fatalf("empty message %d", i)
		}
	}
}

func TestStablePrefixHash(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	ctx := context.Background()
	cfg := builder.DefaultConfig()
	cfg.PrefixCacheOrder = true
	b := builder.New(st.Agent("entropy"), cfg).WithTools(testTools).WithToolRules(toolrules.ExitLoop("send_message"))
	r1 := build(t, b)
	if err := st.Agent("entropy").Block("persona").SetText(ctx, "A new persona."); err != nil {
		t.Fatal(err)
	}
	r2 := build(t, b.WithAttachment("x", "volatile", 1, false))
	if r1.Metadata.StablePrefixHash != r2.Metadata.StablePrefixHash || r1.System == r2.System {
		t.Fatal("memory changes moved the stable prefix")
	}
	if !strings.HasPrefix(r2.System, r1.System[:r1.Metadata.StablePrefixEnd]) {
		t.Fatal("prefix bytes differ")
	}
	r3 := build(t, b.WithTools(testTools[:2]))
	r4 := build(t, b.WithBaseInstructions("Different."))
	r5 := build(t, b.WithToolRules(toolrules.MaxCalls("x", 1)))
	for i, r := range []*builder.Request{r3, r4, r5} {
		if r.Metadata.StablePrefixHash == r1.Metadata.StablePrefixHash {
			t.Fatalf("case %d: hash did not change", i)
		}
	}
}

func TestByteStableAcrossCaches(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	shared := builder.DefaultConfig()
	b := builder.New(st.Agent("entropy"), shared).WithMessages(st.Agent("entropy").Messages()).WithTools(testTools).WithBatchBlocks("ticket-42")
	first := dump(build(t, b))
	warm := dump(build(t, b)) // cached counts and history
	cold := builder.DefaultConfig()
	fresh := dump(build(t, builder.New(st.Agent("entropy"), cold).WithMessages(st.Agent("entropy").Messages()).WithTools(testTools).WithBatchBlocks("ticket-42")))
	if first != warm || first != fresh {
		t.Fatal("output depends on cache state")
	}
}

func TestTools(t *testing.T) {
	st := openStore(t)
	b := builder.New(st.Agent("a"), builder.DefaultConfig())
	req := build(t, b.WithTools(testTools))
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"context", "search_tickets", "send_message"}) {
		t.Fatalf("order %v", names)
	}
	if string(req.Tools[1].Parameters) != `{"type":"object","properties":{"query":{"type":"string"}}}` {
		t.Fatalf("not compacted: %s", req.Tools[1].Parameters)
	}
	if testTools[1].Parameters[1] != ' ' {
		t.Fatal("caller's tool modified")
	}
	bad := []builder.ToolList{
		{{Name: ""}},
		{{Name: "x"}, {Name: "x"}},
		{{Name: "x", Parameters: json.RawMessage(`{`)}},
		{{Name: "x", Parameters: json.RawMessage(`[1]`)}},
	}
	for i, tl := range bad {
		if _, err := b.WithTools(tl).Build(context.Background()); !errors.Is(err, builder.ErrInvalid) {
			t.Errorf("case %d: err = %v", i, err)
		}
	}
	type args struct {
		Query string `json:"query" jsonschema:"description=What to look for"`
	}
	tool, err := builder.NewTool("search", "Search memory.", jsonschema.Reflect(&args{}))
	if err != nil {
		t.Fatal(err)
	}
	if req := build(t, b.WithTools(builder.ToolList{tool})); !strings.Contains(string(req.Tools[0].Parameters), `"What to look for"`) {
		t.Fatalf("%s", req.Tools[0].Parameters)
	}
}

func TestBuildErrors(t *testing.T) {
	st := openStore(t)
	if _, err := builder.New(st.Agent(""), builder.ContextConfig{}).Build(context.Background()); !errors.Is(err, builder.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if _, err := builder.New(nil, builder.ContextConfig{}).Build(context.Background()); !errors.Is(err, builder.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := builder.New(st.Agent("a"), builder.ContextConfig{}).Build(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	cfg := builder.ContextConfig{Compression: compress.Truncate{KeepRecent: -1}}
	exchange(t, st, "a", "b1", "q", "a")
	if _, err := builder.New(st.Agent("a"), cfg).WithMessages(st.Agent("a").Messages()).Build(context.Background()); !errors.Is(err, compress.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if _, err := builder.New(st.Agent("a"), builder.ContextConfig{}).WithModelInfo(builder.ModelInfo{Encoding: "nope"}).Build(context.Background()); err != nil {
		t.Fatalf("unknown encoding should fall back: %v", err)
	}
}

// summaryCounter counts Summarize calls.
type summaryCounter struct {
	mu    sync.Mutex
	calls int
}

func (s *summaryCounter) Summarize(ctx context.Context, previous string, msgs []memory.Message) (string, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return compress.Extractive{}.Summarize(ctx, previous, msgs)
}

func TestSummariesAreReusedAcrossBuilds(t *testing.T) {
	st := openStore(t)
	for i := range 20 {
		exchange(t, st, "a", fmt.Sprintf("b%02d", i), fmt.Sprintf("Question %d.", i), fmt.Sprintf("Answer %d.", i))
	}
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "now", Content: "Current."})
	sum := &summaryCounter{}
	cfg := builder.DefaultConfig()
	cfg.MaxMessagesCap = 12
	cfg.Compression = compress.RecursiveSummarization{ChunkSize: 10, Summarizer: sum}
	b := builder.New(st.Agent("a"), cfg).WithMessages(st.Agent("a").Messages()).WithActiveBatch("now")
	r1 := build(t, b)
	if sum.calls == 0 || r1.Metadata.SummaryID == 0 || len(r1.Metadata.MessagesSummarized) == 0 {
		t.Fatalf("no summary: %+v", r1.Metadata)
	}
	calls := sum.calls
	r2 := build(t, b)
	if sum.calls != calls || r2.Metadata.SummarizerCalls != 0 || dump(r1) == "" {
		t.Fatalf("second build summarized again (%d → %d calls)", calls, sum.calls)
	}
	if r1.Messages[0].Content != r2.Messages[0].Content || r2.Metadata.SummaryID != r1.Metadata.SummaryID {
		t.Fatal("second build differs")
	}
	// A fresh cache (another process) also reuses the stored summary.
	cfg.Cache = builder.NewCache()
	build(t, builder.New(st.Agent("a"), cfg).WithMessages(st.Agent("a").Messages()).WithActiveBatch("now"))
	if sum.calls != calls {
		t.Fatal("fresh cache summarized again")
	}
}

// spySource delegates to the real store and records the queries.
type spySource struct {
	store   *memory.Store
	mu      sync.Mutex
	afterID []int64
	batches int
}

func (s *spySource) List(ctx context.Context, q *memory.MessageQuery) ([]memory.Message, error) {
	s.mu.Lock()
	var after int64
	if q != nil {
		after = q.AfterID
	}
	s.afterID = append(s.afterID, after)
	s.mu.Unlock()
	return s.store.Agent("a").Messages().List(ctx, q)
}

func (s *spySource) Batches(ctx context.Context) ([]memory.Batch, error) {
	s.mu.Lock()
	s.batches++
	s.mu.Unlock()
	return s.store.Agent("a").Messages().Batches(ctx)
}

func TestHistoryIsReadIncrementally(t *testing.T) {
	st := openStore(t)
	exchange(t, st, "a", "b1", "one", "two")
	exchange(t, st, "a", "b2", "three", "four")
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b3", Content: "five"})
	spy := &spySource{store: st}
	b := builder.New(st.Agent("a"), builder.DefaultConfig()).WithMessages(spy).WithActiveBatch("b3")
	r1 := build(t, b)
	r2 := build(t, b)
	if !slices.Equal(spy.afterID, []int64{0, 5}) || spy.batches != 1 {
		t.Fatalf("queries after=%v batches=%d", spy.afterID, spy.batches)
	}
	if dump(r1) != dump(r2) {
		t.Fatal("warm build differs")
	}
	// New messages are fetched; a new incomplete batch makes it ask again.
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: "b3", Content: "six"})
	complete(t, st, "a", "b3")
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b4", Content: "seven"})
	r3 := build(t, b.WithActiveBatch("b4"))
	if !slices.Equal(spy.afterID, []int64{0, 5, 5}) || spy.batches != 2 || len(r3.Messages) != 7 {
		t.Fatalf("queries after=%v batches=%d messages=%d", spy.afterID, spy.batches, len(r3.Messages))
	}
	// Without an explicit active batch the last (incomplete) batch is
	// active.
	r4 := build(t, builder.New(st.Agent("a"), builder.DefaultConfig()).WithMessages(st.Agent("a").Messages()))
	if r4.Metadata.ActiveBatch != "b4" {
		t.Fatalf("active %q", r4.Metadata.ActiveBatch)
	}
}

func TestConcurrentBuilds(t *testing.T) {
	st := openStore(t)
	seedEntropy(t, st)
	cfg := builder.DefaultConfig()
	b := builder.New(st.Agent("entropy"), cfg).WithMessages(st.Agent("entropy").Messages()).WithTools(testTools)
	want := dump(build(t, b))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := b.Build(context.Background())
			if err != nil {
				errs <- err
				return
			}
			if dump(req) != want {
				errs <- errors.New("concurrent build differs")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestModelInfoFor(t *testing.T) {
	tests := []struct {
		name string
		want builder.ModelInfo
	}{
		{"gemini-1.5-pro", builder.ModelInfo{Name: "gemini-1.5-pro", Provider: "google", Family: "gemini", UserFirst: true}},
		{"google/gemma-2-9b", builder.ModelInfo{Name: "google/gemma-2-9b", Provider: "google", Family: "gemma", UserFirst: true, NoSystemRole: true}},
		{"o1-mini", builder.ModelInfo{Name: "o1-mini", Provider: "openai", Family: "o1", NoSystemRole: true}},
		{"o3", builder.ModelInfo{Name: "o3", Provider: "openai", Family: "o"}},
		{"gpt-4o", builder.ModelInfo{Name: "gpt-4o", Provider: "openai", Family: "gpt"}},
		{"claude-3-opus", builder.ModelInfo{Name: "claude-3-opus", Provider: "anthropic", Family: "claude"}},
		{"llama3", builder.ModelInfo{Name: "llama3"}},
	}
	for _, tc := range tests {
		if got := builder.ModelInfoFor(tc.name); got != tc.want {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
}

// The zero ContextConfig is DefaultConfig: same request, byte for byte.
func TestZeroConfigIsDefaultConfig(t *testing.T) {
	st := openStore(t)
	mustBlock(t, st, "a", memory.BlockSpec{Label: "persona", Type: blocks.Core, Description: "Who I am.", Value: "I am brief."})
	for i := range 40 {
		exchange(t, st, "a", fmt.Sprintf("b%02d", i), fmt.Sprintf("Question %d.", i), fmt.Sprintf("Answer %d.", i))
	}
	zero := build(t, builder.New(st.Agent("a"), builder.ContextConfig{}).WithMessages(st.Agent("a").Messages()))
	def := build(t, builder.New(st.Agent("a"), builder.DefaultConfig()).WithMessages(st.Agent("a").Messages()))
	if zero.System != def.System || len(zero.Messages) != len(def.Messages) || zero.Metadata.StablePrefixHash != def.Metadata.StablePrefixHash {
		t.Fatalf("zero config and DefaultConfig differ:\n%s\n---\n%s\n%d vs %d messages", zero.System, def.System, len(zero.Messages), len(def.Messages))
	}
	if !strings.Contains(zero.System, "Who I am.") {
		t.Fatal("the zero config leaves out block descriptions")
	}
	if len(zero.Messages) > builder.DefaultMaxMessagesCap {
		t.Fatalf("%d messages with the default cap %d", len(zero.Messages), builder.DefaultMaxMessagesCap)
	}
}

// TestTruncationReuseMatchesFreshBuilds: a warm builder reuses its last
// truncation while the history, batch states and budget are unchanged;
// after each kind of change it must produce what a cold builder does.
func TestTruncationReuseMatchesFreshBuilds(t *testing.T) {
	st := openStore(t)
	for i := range 30 {
		exchange(t, st, "a", fmt.Sprintf("b%d", i), strings.Repeat("question ", 20+i), strings.Repeat("answer ", 30))
	}
	warmCfg := builder.DefaultConfig()
	warmCfg.DefaultLimits.HistoryTokens = 900
	warm := builder.New(st.Agent("a"), warmCfg).WithMessages(st.Agent("a").Messages())
	check := func(step string, b func(builder.Builder) builder.Builder, cfg func(*builder.ContextConfig)) {
		t.Helper()
		if cfg != nil {
			cfg(&warmCfg)
			warm = builder.New(st.Agent("a"), warmCfg).WithMessages(st.Agent("a").Messages())
		}
		got := build(t, b(warm))
		again := build(t, b(warm))
		coldCfg := warmCfg
		coldCfg.Cache = builder.DefaultConfig().Cache // nothing read or counted yet
		want := build(t, b(builder.New(st.Agent("a"), coldCfg).WithMessages(st.Agent("a").Messages())))
		if dump(got) != dump(want) || dump(again) != dump(want) {
			t.Fatalf("%s: warm build differs from a cold one\nwarm %s\ncold %s", step, dump(got), dump(want))
		}
		// What a caller does with one request must not reach the next.
		if len(got.Metadata.MessagesKept) > 0 {
			got.Metadata.MessagesKept[0] = -1
		}
		if len(got.Metadata.MessagesDropped) > 0 {
			got.Metadata.MessagesDropped[0] = -1
		}
	}
	same := func(b builder.Builder) builder.Builder { return b }
	check("first", same, nil)
	check("unchanged", same, nil)
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b30", Content: "a new question"})
	check("new batch", same, nil)
	// Only the message count changes (the batch is known, still open).
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: "b30", Content: "its answer"})
	check("one more message", same, nil)
	// b30 stays open while b31 becomes the active batch: b30 is left out.
	mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: "b31", Content: "another question"})
	check("open batch left out", same, nil)
	// Only a batch state changes: b30 completes and comes back.
	complete(t, st, "a", "b30")
	check("batch completed", same, nil)
	check("other active batch", func(b builder.Builder) builder.Builder { return b.WithActiveBatch("b12") }, nil)
	check("smaller budget", same, func(c *builder.ContextConfig) { c.DefaultLimits.HistoryTokens = 300 })
	check("message cap", same, func(c *builder.ContextConfig) { c.MaxMessagesCap = 5 })
	check("current message", func(b builder.Builder) builder.Builder {
		return b.WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: "now"})
	}, nil)
}
