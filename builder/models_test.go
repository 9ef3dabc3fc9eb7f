package builder_test

import (
	"testing"

	"github.com/engram-go/engram/builder"
)

// Current model families get their own context window
// (not the 128k default), and an unknown name is reported as unknown.
func TestKnownModelLimits(t *testing.T) {
	cfg := builder.DefaultConfig()
	cfg.ModelOverrides = builder.KnownModelLimits()
	for _, tc := range []struct {
		model      string
		max        int
		known      bool
		exactCount bool
	}{
		{"gpt-4o", 128_000, true, true},
		{"gpt-4o-mini", 128_000, true, true},
		{"gpt-4.1-mini", 1_047_576, true, true},
		{"gpt-5", 400_000, true, true},
		{"openai/gpt-5-mini", 400_000, true, true},
		{"gpt-4", 8_192, true, true},
		{"gpt-4-0613", 8_192, true, true},
		// GPT-4 Turbo's dated and preview names were taken as gpt-4's 8k
		// window: an input budget of 192 tokens for a 128k model.
		{"gpt-4-1106-preview", 128_000, true, true},
		{"gpt-4-0125-preview", 128_000, true, true},
		{"gpt-4-turbo-preview", 128_000, true, true},
		{"gpt-4-vision-preview", 128_000, true, true},
		{"gpt-4-1106-vision-preview", 128_000, true, true},
		{"o3", 200_000, true, true},
		{"o1-mini", 128_000, true, true},
		{"claude-sonnet-4-5", 200_000, true, false},
		{"claude-3-5-haiku-latest", 200_000, true, false},
		{"gemini-2.5-pro", 1_048_576, true, false},
		{"gemini-1.5-pro-002", 2_097_152, true, false},
		{"gemma-3-27b", 131_072, true, false},
		{"llama-3.3-70b", builder.DefaultMaxTokens, false, false},
	} {
		if got := cfg.LimitsFor(tc.model).MaxTokens; got != tc.max {
			t.Errorf("%s: MaxTokens %d, want %d", tc.model, got, tc.max)
		}
		k := builder.KnowModel(tc.model)
		if k.KnownLimits != tc.known || k.ExactTokens != tc.exactCount {
			t.Errorf("%s: KnowModel %+v, want known %v exact %v", tc.model, k, tc.known, tc.exactCount)
		}
	}
	// The memory budget and reply reserve stay the configured defaults.
	if l := cfg.LimitsFor("gemini-2.5-pro"); l.MemoryTokens != builder.DefaultMemoryTokens || l.ReservedResponseTokens != builder.DefaultReservedResponseTokens {
		t.Errorf("gemini-2.5-pro limits %+v", l)
	}
}

// A small window is not left almost no input by the reply reserve sized
// for 128k windows (gpt-4's 8,192 minus 8,000 left 192 tokens).
func TestKnownModelLimitsSmallWindows(t *testing.T) {
	cfg := builder.DefaultConfig()
	cfg.ModelOverrides = builder.KnownModelLimits()
	for _, tc := range []struct {
		model                   string
		input, memory, reserved int
	}{
		{"gpt-4", 6_144, 2_048, 2_048},
		{"gpt-3.5-turbo", 12_289, 4_096, 4_096},
		{"gpt-4o", 120_000, builder.DefaultMemoryTokens, builder.DefaultReservedResponseTokens},
	} {
		l := cfg.LimitsFor(tc.model)
		if got := l.InputBudget(); got != tc.input || l.MemoryTokens != tc.memory || l.ReservedResponseTokens != tc.reserved {
			t.Errorf("%s: input %d, memory %d, reserved %d; want %d, %d, %d",
				tc.model, got, l.MemoryTokens, l.ReservedResponseTokens, tc.input, tc.memory, tc.reserved)
		}
	}
}
