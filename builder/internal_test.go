package builder

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

// spyCodec counts the texts a real codec tokenizes.
type spyCodec struct {
	tokenizer.Codec
	long atomic.Int64 // texts long enough to be cached
}

func (s *spyCodec) Count(text string) (int, error) {
	if len(text) >= minCachedLen {
		s.long.Add(1)
	}
	return s.Codec.Count(text)
}

// spyCache returns a Cache whose cl100k tokenizer is spied on.
func spyCache(t testing.TB) (*Cache, *spyCodec) {
	c := NewCache()
	real, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyCodec{Codec: real}
	c.cl100k.once.Do(func() { c.cl100k.counter = &BPECounter{name: EncodingCl100k, codec: spy} })
	return c, spy
}

func fixedNow() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return time.Unix(1_700_000_000+n.Add(1), 0).UTC() }
}

// benchStore makes an agent with 20 blocks (5 Core, 15 pinned Working) and
// 500 messages in 100 complete batches plus an active one.
func benchStore(t testing.TB) *memory.Store {
	ctx := context.Background()
	st, err := memory.Open(ctx, filepath.Join(t.TempDir(), "bench.db"), &memory.Options{Now: fixedNow()})
	if err != nil {
		t.Fatal(err)
	}
	para := "The team agreed to ship the export fix on Friday after the review. Owners: Sam for the backend, Kim for the UI. "
	for i := range 20 {
		typ := blocks.Working
		if i < 5 {
			typ = blocks.Core
		}
		_, err := st.Agent("bench").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("block-%02d", i), Description: "Block number " + fmt.Sprint(i) + ".",
			Type: typ, Pinned: true, Priority: i % 7, Value: strings.Repeat(para, 4+i%5)})

		if err != nil {
			t.Fatal(err)
		}
	}
	for b := range 100 {
		batch := fmt.Sprintf("evt-%03d", b)
		for j := range 5 {
			role := memory.RoleUser
			if j%2 == 1 {
				role = memory.RoleAssistant
			}
			content := fmt.Sprintf("Message %d of event %d. %s", j, b, para[:40+(b*7+j*13)%60])
			if _, err := st.Agent("bench").Messages().Append(ctx, memory.Message{Role: role, BatchID: batch, Content: content}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Agent("bench").Messages().CompleteBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Agent("bench").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "now", Content: "What is the plan for Friday?"}); err != nil {
		t.Fatal(err)
	}
	return st
}

func benchBuilder(st *memory.Store, cache *Cache) Builder {
	cfg := ContextConfig{
		DefaultLimits: ModelContextLimits{MaxTokens: 128_000, MemoryTokens: 32_000, ReservedResponseTokens: 4_000},
		// The whole history (500 messages) fits: no default cap of 50.
		MaxMessagesCap: -1,
		Cache:          cache,
	}
	return New(st.Agent("bench"), cfg).WithMessages(st.Agent("bench").Messages()).WithActiveBatch("now").
		WithModelInfo(ModelInfo{Name: "gpt-4"}).
		WithBaseInstructions("You are a careful project assistant.").
		WithToolRules(toolrules.ExitLoop("send_message"), toolrules.MaxCalls("search", 3)).
		WithTools(ToolList{{Name: "send_message", Description: "Reply.", Parameters: []byte(`{"type":"object"}`)},
			{Name: "search", Description: "Search memory.", Parameters: []byte(`{"type":"object"}`)}})
}

func TestWarmBuildDoesNotRetokenize(t *testing.T) {
	st := benchStore(t)
	defer st.Close()
	cache, spy := spyCache(t)
	b := benchBuilder(st, cache)
	if _, err := b.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	cold := spy.long.Load()
	if cold < 500 {
		t.Fatalf("cold build tokenized only %d texts", cold)
	}
	if _, err := b.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if warm := spy.long.Load() - cold; warm != 0 {
		t.Fatalf("warm build tokenized %d texts again", warm)
	}
	// A changed block is tokenized again, and only it.
	if err := st.Agent("bench").Block("block-07").Append(context.Background(), " One more line."); err != nil {
		t.Fatal(err)
	}
	before := spy.long.Load()
	if _, err := b.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := spy.long.Load() - before; n != 1 {
		t.Fatalf("tokenized %d texts after one block changed", n)
	}
}

func TestSectionsAreSlicesOfSystem(t *testing.T) {
	st := benchStore(t)
	defer st.Close()
	req, err := benchBuilder(st, NewCache()).Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Section tokens add up to the system total (plus one per separator).
	sum := 0
	for _, s := range req.Sections {
		sum += s.Tokens
	}
	if sum+len(req.Sections)-1 != req.Metadata.Tokens.System {
		t.Fatalf("sections %d + separators != system %d", sum, req.Metadata.Tokens.System)
	}
	// Counting the whole prompt at once differs from the sum of its parts by
	// at most one token per section and block boundary.
	bpe, _ := NewCache().Encoding(req.Metadata.Encoding)
	whole := bpe.Count(req.System)
	if d := whole - req.Metadata.Tokens.System; d > 25 || d < -25 {
		t.Fatalf("whole-prompt count %d vs summed %d", whole, req.Metadata.Tokens.System)
	}
	t.Logf("system prompt: %d tokens summed per block/section, %d counted whole", req.Metadata.Tokens.System, whole)
}

// BenchmarkBuild measures a warm build for an agent with 20 blocks and 500
// messages against concatenating the same pre-rendered strings.
//
//	Build:    the whole Build, store reads included (warm Cache)
//	Assemble: Build without the store reads (what the builder itself costs)
//	Concat:   strings.Builder over the rendered blocks and message contents
func BenchmarkBuild(b *testing.B) {
	st := benchStore(b)
	defer st.Close()
	ctx := context.Background()
	bl := benchBuilder(st, NewCache())
	req, err := bl.Build(ctx) // warm the cache
	if err != nil {
		b.Fatal(err)
	}
	if len(req.Messages) != 501 || len(req.Metadata.BlocksIncluded) != 20 {
		b.Fatalf("%d messages, %d blocks", len(req.Messages), len(req.Metadata.BlocksIncluded))
	}
	f, err := bl.fetch(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// The baseline: the same pre-rendered pieces, concatenated.
	var pieces []string
	pieces = append(pieces, "You are a careful project assistant.")
	for _, m := range f.own {
		pieces = append(pieces, RenderBlock(m, RenderOptions{IncludeDescriptions: true}))
	}
	pieces = append(pieces, toolrules.Render(bl.rules))
	for _, m := range f.msgs {
		pieces = append(pieces, m.Content)
	}
	concat := func() string {
		n := 0
		for _, p := range pieces {
			n += len(p) + 2
		}
		var sb strings.Builder
		sb.Grow(n)
		for _, p := range pieces {
			sb.WriteString(p)
			sb.WriteString("\n\n")
		}
		return sb.String()
	}
	// Time the baseline here (testing.Benchmark cannot run inside a
	// benchmark) so each sub-benchmark can report its ratio to it.
	var sink string
	n, start := 0, time.Now()
	for time.Since(start) < 300*time.Millisecond {
		sink = concat()
		n++
	}
	baseNs := float64(time.Since(start).Nanoseconds()) / float64(n)
	_ = sink

	b.Run("Build", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bl.Build(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x-concat")
	})
	b.Run("Assemble", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := bl.assemble(ctx, f); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x-concat")
	})
	b.Run("Concat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = concat()
		}
	})
}

// writeEscapedReference is writeEscaped as first written (strings.IndexAny
// per step): the fast scan must write exactly the same bytes.
func writeEscapedReference(b *strings.Builder, s string) {
	for {
		i := strings.IndexAny(s, "<&\x00")
		if i < 0 {
			b.WriteString(s)
			return
		}
		b.WriteString(s[:i])
		switch {
		case s[i] == 0:
			b.WriteString("\uFFFD")
		case s[i] == '<' && tagAt(s, i):
			b.WriteString("&lt;")
		case s[i] == '&' && escapeAt(s, i):
			b.WriteString("&amp;")
		default:
			b.WriteByte(s[i])
		}
		s = s[i+1:]
	}
}

func FuzzWriteEscapedMatchesReference(f *testing.F) {
	for _, s := range []string{"", "plain", "<block:x>", "</BLOCK:x>&lt;block:y>", "a&amp;amp;lt;memory b", "\x00<\x00&<&", "&&<<</block:", "é<😀&lt;file_context"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got, want strings.Builder
		writeEscaped(&got, s)
		writeEscapedReference(&want, s)
		if got.String() != want.String() {
			t.Fatalf("writeEscaped(%q) = %q, reference %q", s, got.String(), want.String())
		}
	})
}

// TestDefinitionMemoComparesEveryField: sameRule and sameTool must look at
// every field, or a changed rule or tool would be served from the memo.
func TestDefinitionMemoComparesEveryField(t *testing.T) {
	if n := reflect.TypeOf(toolrules.Rule{}).NumField(); n != 5 {
		t.Fatalf("toolrules.Rule has %d fields: update sameRule and this test", n)
	}
	if n := reflect.TypeOf(Tool{}).NumField(); n != 3 {
		t.Fatalf("Tool has %d fields: update sameTool and this test", n)
	}
	c := NewCache()
	rules := []toolrules.Rule{toolrules.ExitLoop("a"), toolrules.RequiresPrior("b", "x")}
	first := c.rulesText(rules)
	rules[1].Tools[0] = "y" // the caller's slice changes in place
	if got := c.rulesText(rules); got == first || got != EscapeTags(toolrules.Render(rules)) {
		t.Fatalf("rules changed in place, memo served %q", got)
	}
	tools := []Tool{{Name: "t", Parameters: []byte(`{"type": "object"}`)}}
	out, _, err := c.toolJSON(tools)
	if err != nil {
		t.Fatal(err)
	}
	tools[0].Parameters[2] = 'T' // in place: still valid JSON, another schema
	out2, _, err := c.toolJSON(tools)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0].Parameters) == string(out2[0].Parameters) {
		t.Fatalf("parameters changed in place, memo served %s", out2[0].Parameters)
	}
}
