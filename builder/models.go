package builder

import "strings"

// knownModels are the context windows of current model families, by name
// prefix (the longest matching prefix wins, as in
// ContextConfig.ModelOverrides), from the providers' model pages. Only
// MaxTokens is set: the memory budget and the reply's reserve keep their
// configured defaults.
var knownModels = map[string]int{
	// OpenAI.
	"gpt-3.5-turbo": 16_385,
	"gpt-4":         8_192,
	"gpt-4-32k":     32_768,
	"gpt-4-turbo":   128_000,
	// GPT-4 Turbo's dated previews, not gpt-4's 8k.
	"gpt-4-1106":   128_000,
	"gpt-4-0125":   128_000,
	"gpt-4-vision": 128_000,
	"gpt-4o":       128_000,
	"chatgpt-4o":   128_000,
	"gpt-4.1":      1_047_576,
	"gpt-4.5":      128_000,
	"gpt-5":        400_000,
	"gpt-oss":      131_072,
	"o1":           200_000,
	"o1-mini":      128_000,
	"o1-preview":   128_000,
	"o3":           200_000,
	"o3-mini":      200_000,
	"o4-mini":      200_000,
	// Anthropic: every Claude 3 and 4 model.
	"claude": 200_000,
	// Google.
	"gemini":         1_048_576,
	"gemini-1.5-pro": 2_097_152,
	"gemini-1.0":     32_760,
	"gemini-pro":     32_760,
	"gemma":          8_192,
	"gemma-3":        131_072,
}

// KnownModelLimits are the context windows (MaxTokens) of current model
// families by name prefix: gpt-3.5 to gpt-5 and gpt-oss, the o-series,
// Claude 3 and 4, Gemini 1.0 to 2.5, Gemma 2 and 3. Use them as
// ContextConfig.ModelOverrides (a name no prefix matches gets
// DefaultLimits).
//
// A window smaller than four default reply reserves (gpt-4's 8k,
// gpt-3.5's 16k) also gets a reply reserve and a memory budget of a
// quarter of the window each, so the defaults sized for 128k windows do
// not leave it almost no input; larger windows inherit both from
// DefaultLimits.
func KnownModelLimits() map[string]ModelContextLimits {
	out := make(map[string]ModelContextLimits, len(knownModels))
	for k, n := range knownModels {
		out[k] = WindowLimits(n)
	}
	return out
}

// WindowLimits are the limits KnownModelLimits gives a model whose
// context window is n tokens: MaxTokens n, and for a window smaller than
// four default reply reserves, a reserve and memory budget of a quarter of
// it each. Use it for a window you know and engram does not (a local
// model, `engram context --max-tokens`).
func WindowLimits(n int) ModelContextLimits {
	l := ModelContextLimits{MaxTokens: n}
	if n > 0 && n < 4*DefaultReservedResponseTokens {
		// At least 1: a zero field would inherit the defaults, far
		// larger than a window of under four tokens.
		q := max(n/4, 1)
		l.ReservedResponseTokens = q
		l.MemoryTokens = min(DefaultMemoryTokens, q)
	}
	return l
}

// ModelKnowledge says what engram knows of a model name: whether
// KnownModelLimits has its context window, and whether its token counts
// are its own tokenizer's (OpenAI's BPEs) or an estimate: Anthropic and
// Google publish no offline tokenizer for Claude and Gemini, so their
// counts are cl100k_base's, which runs somewhat low for them.
type ModelKnowledge struct {
	KnownLimits bool
	ExactTokens bool
}

// KnowModel reports what engram knows of model (see ModelKnowledge).
func KnowModel(model string) ModelKnowledge {
	n := normalizeModel(model)
	var k ModelKnowledge
	for p := range knownModels {
		if strings.HasPrefix(n, p) {
			k.KnownLimits = true
			break
		}
	}
	info := ModelInfoFor(model)
	k.ExactTokens = info.Provider == "openai"
	return k
}
