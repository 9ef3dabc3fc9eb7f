package builder

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/engram-go/engram/compress"
)

// ModelContextLimits are a model's token budgets. In
// ContextConfig.DefaultLimits a zero field means its documented default
// (DefaultLimits) and a negative one "no limit"; in a per-model override a
// zero field means "as in the default limits".
type ModelContextLimits struct {
	// MaxTokens is the model's whole context window.
	MaxTokens int `json:"max_tokens"`
	// MemoryTokens bounds the memory sections of the system prompt (Core and
	// Working blocks, attachments). Working blocks and non-essential
	// attachments beyond it are dropped, highest Priority number first;
	// Core blocks and essential attachments never are.
	MemoryTokens int `json:"memory_tokens"`
	// HistoryTokens bounds the message history (after compression).
	HistoryTokens int `json:"history_tokens"`
	// ReservedResponseTokens are kept free for the reply: the request's
	// input budget is MaxTokens - ReservedResponseTokens.
	ReservedResponseTokens int `json:"reserved_response_tokens"`
}

// merge fills o's zero fields from d.
func (o ModelContextLimits) merge(d ModelContextLimits) ModelContextLimits {
	if o.MaxTokens == 0 {
		o.MaxTokens = d.MaxTokens
	}
	if o.MemoryTokens == 0 {
		o.MemoryTokens = d.MemoryTokens
	}
	if o.HistoryTokens == 0 {
		o.HistoryTokens = d.HistoryTokens
	}
	if o.ReservedResponseTokens == 0 {
		o.ReservedResponseTokens = d.ReservedResponseTokens
	}
	return o
}

// InputBudget is MaxTokens - ReservedResponseTokens, or 0 (no limit) when
// MaxTokens is 0.
func (l ModelContextLimits) InputBudget() int {
	if l.MaxTokens <= 0 {
		return 0
	}
	return max(l.MaxTokens-l.ReservedResponseTokens, 1)
}

// ModelInfo describes the model a request is built for.
type ModelInfo struct {
	// Name is the model id ("gpt-4o", "gemini-2.0-flash", ...). It selects
	// the per-model limits and the tokenizer.
	Name string `json:"name"`
	// Provider is e.g. "openai", "anthropic", "google" (informational).
	Provider string `json:"provider,omitempty"`
	// Family is e.g. "gpt-4o", "claude", "gemini" (informational).
	Family string `json:"family,omitempty"`
	// NoSystemRole: the model takes no system message; the system prompt is
	// sent as the first user message.
	NoSystemRole bool `json:"no_system_role,omitempty"`
	// UserFirst (Gemini-style): the first non-system message must be a user
	// message and no message may be empty. A placeholder user message is
	// inserted when needed, consecutive plain user messages are merged and
	// empty messages are dropped.
	UserFirst bool `json:"user_first,omitempty"`
	// Encoding overrides the tokenizer: "cl100k_base", "o200k_base" or
	// "chars" (chars/4).
	Encoding string `json:"encoding,omitempty"`
}

// ModelInfoFor guesses a ModelInfo from a model name: Gemini models are
// UserFirst, Gemma models also have no system role, o1-mini / o1-preview
// take no system message.
func ModelInfoFor(name string) ModelInfo {
	n := normalizeModel(name)
	info := ModelInfo{Name: name}
	switch {
	case strings.HasPrefix(n, "gemini"):
		info.Provider, info.Family, info.UserFirst = "google", "gemini", true
	case strings.HasPrefix(n, "gemma"):
		info.Provider, info.Family, info.UserFirst, info.NoSystemRole = "google", "gemma", true, true
	case strings.HasPrefix(n, "claude"):
		info.Provider, info.Family = "anthropic", "claude"
	case strings.HasPrefix(n, "o1-mini"), strings.HasPrefix(n, "o1-preview"):
		info.Provider, info.Family, info.NoSystemRole = "openai", "o1", true
	case strings.HasPrefix(n, "gpt"), strings.HasPrefix(n, "chatgpt"):
		info.Provider, info.Family = "openai", "gpt"
	case isOSeries(n):
		info.Provider, info.Family = "openai", "o"
	}
	return info
}

// normalizeModel lower-cases a model name and strips a provider prefix
// ("openai/gpt-4o" → "gpt-4o").
func normalizeModel(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	return n
}

func isOSeries(n string) bool {
	return len(n) >= 2 && n[0] == 'o' && n[1] >= '1' && n[1] <= '9'
}

// ActivityRenderer renders the optional activity section of the system
// prompt (e.g. recent log entries). limit is ContextConfig.ActivityEntriesLimit.
// An empty result leaves the section out. a is the Builder's agent; a
// renderer that needs more of the store than Agent offers (an activity
// log) keeps its own reference to it rather than asserting for it.
type ActivityRenderer interface {
	RenderActivity(ctx context.Context, a Agent, limit int) (string, error)
}

// ActivityFunc adapts a function to ActivityRenderer.
type ActivityFunc func(ctx context.Context, a Agent, limit int) (string, error)

// RenderActivity calls f.
func (f ActivityFunc) RenderActivity(ctx context.Context, a Agent, limit int) (string, error) {
	return f(ctx, a, limit)
}

// Defaults of ContextConfig's zero fields.
const (
	DefaultMaxTokens              = 128_000
	DefaultMemoryTokens           = 16_000
	DefaultReservedResponseTokens = 8_000
	DefaultMaxMessagesCap         = 50 // the layered builder of the seeds uses 50
	DefaultActivityEntriesLimit   = 10
)

// ContextConfig configures builds. The zero value means the documented
// defaults, the same as DefaultConfig: 128k-token limits (16k for memory,
// 8k reserved for the reply), block descriptions shown, at most 50 history
// messages, Truncate compression, BPE token counts.
type ContextConfig struct {
	// DefaultLimits apply to every model without an override. Zero fields
	// mean the defaults (DefaultMaxTokens, DefaultMemoryTokens, no history
	// bound beyond the window, DefaultReservedResponseTokens); a negative
	// field means no limit.
	DefaultLimits ModelContextLimits
	// ModelOverrides are limits by model name: an exact match wins, else the
	// longest key that is a prefix of the name ("gpt-4o" covers
	// "gpt-4o-mini" unless that has its own entry). Zero fields inherit from
	// DefaultLimits. Names are compared lower-case without a provider prefix.
	ModelOverrides map[string]ModelContextLimits
	// OmitDescriptions leaves out each block's description, which is shown
	// above its content by default.
	OmitDescriptions bool
	// IncludeSchemas adds the JSON Schema of structured blocks (Map, List,
	// Log, Composite) above their content.
	IncludeSchemas bool
	// ShowCharUsage adds chars="used/limit" to each block tag.
	ShowCharUsage bool
	// ActivityRenderer renders the activity section; nil leaves it out.
	ActivityRenderer ActivityRenderer
	// ActivityEntriesLimit is passed to the ActivityRenderer (0 means
	// DefaultActivityEntriesLimit).
	ActivityEntriesLimit int
	// Compression fits the history into its budget; nil means
	// compress.Truncate{} (whole batches, token budget only).
	Compression compress.MessageCompressor
	// MaxMessagesCap is a hard cap on history messages (the summary message
	// included); 0 means DefaultMaxMessagesCap, negative means none. The
	// active batch is kept even beyond it.
	MaxMessagesCap int
	// PrefixCacheOrder orders the system prompt for provider prefix caching:
	// static sections (base instructions, tool rules) first, then memory
	// blocks, then per-request sections (attachments, activity).
	PrefixCacheOrder bool
	// Counter overrides token counting for every model; nil means BPE per
	// model (see EncodingForModel) through Cache.
	Counter TokenCounter
	// Clock gives the time the environment section shows; nil means
	// time.Now. Inject a fixed clock to keep prompts byte-stable in tests.
	Clock func() time.Time
	// Recall turns on recalled memories (nil: off).
	Recall *RecallOptions
	// Library turns on the context library (nil: off; this turn's
	// artifacts then always go in full). The store must implement
	// LibraryStore.
	Library *LibraryOptions
	// TruncationOrder is the order in which layers give way when the
	// request does not fit its input budget, first first: each layer gets
	// its own budget capped by what the layers after it in the order
	// leave. nil means DefaultTruncationOrder (history, recalled memories,
	// library, Working memory); a non-nil order must list each Layer once.
	TruncationOrder []Layer
	// TrimTextBlocks cuts a Text block that does not fit the memory budget
	// to its first lines that do, with a marker, instead of dropping it
	// whole.
	TrimTextBlocks bool
	// Logger receives a record for every drop, trim and compaction (nil:
	// no logging).
	Logger *slog.Logger
	// Cache holds tokenizers, token counts and the history already read.
	// Share one across builds to keep them warm; nil means a new one per
	// New call.
	Cache *Cache
	// TokenCounts, if set, persists token counts across processes (the
	// store: *memory.Store implements CountStore), so a cold start does
	// not tokenize every block again. Nil: counts live in this process's
	// Cache only, with the same results.
	TokenCounts CountStore
}

// DefaultConfig is the zero ContextConfig with its defaults written out
// (and a fresh Cache): change a field and pass it to New.
func DefaultConfig() ContextConfig {
	c := ContextConfig{}.withDefaults()
	c.Cache = NewCache()
	return c
}

// withDefaults fills zero fields with their defaults and turns "no limit"
// (negative) into the 0 the build works with.
func (c ContextConfig) withDefaults() ContextConfig {
	l := &c.DefaultLimits
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&l.MaxTokens, DefaultMaxTokens},
		{&l.MemoryTokens, DefaultMemoryTokens},
		{&l.ReservedResponseTokens, DefaultReservedResponseTokens},
		{&c.MaxMessagesCap, DefaultMaxMessagesCap},
		{&c.ActivityEntriesLimit, DefaultActivityEntriesLimit},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	for _, v := range []*int{&l.MaxTokens, &l.MemoryTokens, &l.HistoryTokens, &l.ReservedResponseTokens, &c.MaxMessagesCap} {
		if *v < 0 {
			*v = 0
		}
	}
	return c
}

// LimitsFor returns the limits for a model: the override with the exact
// name or the longest matching prefix, filled from DefaultLimits.
func (c ContextConfig) LimitsFor(model string) ModelContextLimits {
	n := normalizeModel(model)
	if len(c.ModelOverrides) == 0 || n == "" {
		return c.DefaultLimits
	}
	keys := make([]string, 0, len(c.ModelOverrides))
	for k := range c.ModelOverrides {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic among equal-length keys
	best, bestLen := "", -1
	for _, k := range keys {
		nk := normalizeModel(k)
		if nk == n {
			return c.ModelOverrides[k].merge(c.DefaultLimits)
		}
		if strings.HasPrefix(n, nk) && len(nk) > bestLen {
			best, bestLen = k, len(nk)
		}
	}
	if bestLen < 0 {
		return c.DefaultLimits
	}
	return c.ModelOverrides[best].merge(c.DefaultLimits)
}
