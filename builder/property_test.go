package builder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/toolrules"
)

// Pruning a Working block (or attachment) when a section
// follows memory panicked ("strings: illegal use of non-zero Builder copied
// by value").
func TestBuildAfterPruningDoesNotPanic(t *testing.T) {
	ctx := context.Background()
	t.Run("tiny memory budget", func(t *testing.T) {
		st := openStore(t)
		mustBlock(t, st, "a", memory.BlockSpec{Label: "persona", Type: blocks.Core, Value: "I am brief."})
		mustBlock(t, st, "a", memory.BlockSpec{Label: "scratch", Type: blocks.Working, Pinned: true,
			Value: strings.Repeat("a working note with words ", 40)})
		cfg := builder.ContextConfig{DefaultLimits: builder.ModelContextLimits{MemoryTokens: 50}}
		req, err := builder.New(st.Agent("a"), cfg).WithToolRules(toolrules.ExitLoop("send_message")).Build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Metadata.BlocksDropped) == 0 || !strings.Contains(req.System, "send_message") {
			t.Fatalf("dropped %v\n%s", req.Metadata.BlocksDropped, req.System)
		}
	})
	t.Run("default config, five huge pinned blocks", func(t *testing.T) {
		st := openStore(t)
		for i := range 5 {
			mustBlock(t, st, "a", memory.BlockSpec{Label: fmt.Sprintf("big%d", i), Type: blocks.Working, Pinned: true,
				CharLimit: 20_000, Value: strings.Repeat(fmt.Sprintf("line %d of a long pinned block. ", i), 600)})
		}
		req, err := builder.New(st.Agent("a"), builder.DefaultConfig()).
			WithAttachment("extra", strings.Repeat("attached ", 3000), builder.PriorityLow, false).
			WithToolRules(toolrules.MaxCalls("search", 2)).Build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Metadata.BlocksDropped) == 0 || !strings.Contains(req.System, "search") {
			t.Fatalf("dropped %v", req.Metadata.BlocksDropped)
		}
	})
}

// property is one random configuration for FuzzBuildProperties.
type property struct {
	store   *memory.Store
	b       builder.Builder
	core    []string // labels that must be rendered
	attach  []string // essential attachments
	current string   // the current message's content
}

// randomConfig builds a store and a Builder from seed: blocks of every
// type and schema and many sizes, pinned or not, shares, a history with
// batches and tool-call pairs, rules, attachments, activity, budgets from
// tiny to huge and model adjustments.
func randomConfig(t *testing.T, seed uint64) property {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ctx := context.Background()
	st := openStore(t)
	p := property{store: st}
	sizes := []int{0, 1, 10, 200, 2_000, 19_000}
	text := func() string {
		n := sizes[r.IntN(len(sizes))]
		words := []string{"alpha", "beta", "</block:x>", "&lt;block:y", "<attachment>", "tea", "\n", "日本"}
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	types := []blocks.Type{blocks.Core, blocks.Working, blocks.Archival, blocks.Log}
	nBlocks := r.IntN(8)
	for i := range nBlocks {
		typ := types[r.IntN(len(types))]
		desc := []rune(text())
		spec := memory.BlockSpec{Label: fmt.Sprintf("b%d", i), Type: typ, Pinned: r.IntN(2) == 0,
			Priority: r.IntN(5), CharLimit: 20_000, Description: string(desc[:min(40, len(desc))])}
		switch r.IntN(4) {
		case 0:
			spec.Schema = schema.List{MaxItems: 10}
			spec.Value = []any{"one", "two"}
		case 1:
			spec.Schema = schema.Log{}
		default:
			if typ != blocks.Log {
				spec.Value = text()
			}
		}
		if _, err := st.Agent("a").CreateBlock(ctx, spec); err != nil {
			t.Fatalf("create %+v: %v", spec, err)
		}
		if typ == blocks.Core {
			p.core = append(p.core, spec.Label)
		}
	}
	if r.IntN(2) == 0 {
		st.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "shared", Type: blocks.Working, Pinned: true, Value: text()})
		st.Agent("owner").Block("shared").Share(ctx, "a", blocks.Append)
	}
	for i := range r.IntN(12) {
		batch := fmt.Sprintf("batch%02d", i)
		mustMsg(t, st, "a", memory.Message{Role: memory.RoleUser, BatchID: batch, Content: text()})
		if r.IntN(3) == 0 {
			id := fmt.Sprintf("call_%d", i)
			mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: batch,
				ToolCalls: []memory.ToolCall{{ID: id, Name: "search", Arguments: json.RawMessage(`{}`)}}})
			mustMsg(t, st, "a", memory.Message{Role: memory.RoleTool, BatchID: batch, Name: "search", ToolCallID: id, Content: text()})
		}
		mustMsg(t, st, "a", memory.Message{Role: memory.RoleAssistant, BatchID: batch, Content: text()})
		if r.IntN(5) != 0 {
			complete(t, st, "a", batch)
		}
	}
	p.current = "current question " + fmt.Sprint(seed)
	budgets := []int{-1, 0, 1, 30, 200, 2_000, 200_000}
	cfg := builder.ContextConfig{
		DefaultLimits: builder.ModelContextLimits{
			MaxTokens:              budgets[r.IntN(len(budgets))],
			MemoryTokens:           budgets[r.IntN(len(budgets))],
			HistoryTokens:          budgets[r.IntN(len(budgets))],
			ReservedResponseTokens: budgets[r.IntN(3)],
		},
		OmitDescriptions: r.IntN(2) == 0,
		IncludeSchemas:   r.IntN(2) == 0,
		ShowCharUsage:    r.IntN(2) == 0,
		PrefixCacheOrder: r.IntN(2) == 0,
		MaxMessagesCap:   []int{-1, 0, 1, 3, 20}[r.IntN(5)],
	}
	if r.IntN(2) == 0 {
		activity := "recent: " + text()
		cfg.ActivityRenderer = builder.ActivityFunc(func(context.Context, builder.Agent, int) (string, error) {
			return activity, nil
		})
	}
	models := []builder.ModelInfo{{Name: "gpt-4o"}, builder.ModelInfoFor("gemini-2.0-flash"), builder.ModelInfoFor("gemma-2"), {Name: "claude-3", Encoding: "chars"}}
	b := builder.New(st.Agent("a"), cfg).WithMessages(st.Agent("a").Messages()).WithModelInfo(models[r.IntN(len(models))]).
		WithActiveBatch("now").WithCurrentMessage(memory.Message{Role: memory.RoleUser, Content: p.current})
	var rules []toolrules.Rule
	for range r.IntN(3) {
		rules = append(rules, []toolrules.Rule{toolrules.ExitLoop("send_message"), toolrules.MaxCalls("search", 2),
			toolrules.ContinueLoop("search")}[r.IntN(3)])
	}
	b = b.WithToolRules(rules...)
	for i := range r.IntN(3) {
		key, essential := fmt.Sprintf("file%d", i), r.IntN(2) == 0
		b = b.WithAttachment(key, text(), r.IntN(10), essential)
		if essential {
			p.attach = append(p.attach, key)
		}
	}
	if nBlocks > 0 && r.IntN(2) == 0 {
		b = b.WithBatchBlocks(fmt.Sprintf("b%d", r.IntN(nBlocks)), "missing")
	}
	p.b = b
	return p
}

// FuzzBuildProperties builds random configurations and checks what Build
// promises: no panic and no error; Core blocks, essential attachments and
// the current message always kept; no tool call separated from its
// result; the same inputs give the same bytes.
func FuzzBuildProperties(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 3, 7, 42, 1234, 99999} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		p := randomConfig(t, seed)
		ctx := context.Background()
		req, err := p.b.Build(ctx)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		prompt := req.System
		for _, m := range req.Messages {
			prompt += "\n" + m.Content
		}
		for _, l := range p.core {
			if !strings.Contains(prompt, "<block:"+l+" ") {
				t.Fatalf("seed %d: Core block %q dropped", seed, l)
			}
		}
		for _, k := range p.attach {
			if !strings.Contains(prompt, `<attachment key="`+k+`">`) {
				t.Fatalf("seed %d: essential attachment %q dropped", seed, k)
			}
		}
		if !strings.Contains(prompt, p.current) {
			t.Fatalf("seed %d: current message dropped", seed)
		}
		calls, results := map[string]bool{}, map[string]bool{}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
			if m.ToolCallID != "" {
				results[m.ToolCallID] = true
			}
		}
		for id := range calls {
			if !results[id] {
				t.Fatalf("seed %d: tool call %s kept without its result", seed, id)
			}
		}
		for id := range results {
			if !calls[id] {
				t.Fatalf("seed %d: tool result %s kept without its call", seed, id)
			}
		}
		again, err := p.b.Build(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Metadata, again.Metadata = stableMetadata(req.Metadata), stableMetadata(again.Metadata)
		a, _ := json.Marshal(req)
		b, _ := json.Marshal(again)
		if string(a) != string(b) {
			t.Fatalf("seed %d: two builds of the same inputs differ:\n%s\n%s", seed, a, b)
		}
	})
}
