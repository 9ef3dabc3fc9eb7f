package builder_test

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/builder"
)

func TestEncodingForModel(t *testing.T) {
	tests := map[string]string{
		"gpt-4o":            builder.EncodingO200k,
		"gpt-4o-mini":       builder.EncodingO200k,
		"openai/gpt-4.1":    builder.EncodingO200k,
		"gpt-5-nano":        builder.EncodingO200k,
		"o1":                builder.EncodingO200k,
		"o3-mini":           builder.EncodingO200k,
		"chatgpt-4o-latest": builder.EncodingO200k,
		"gpt-4":             builder.EncodingCl100k,
		"gpt-4-turbo":       builder.EncodingCl100k,
		"gpt-3.5-turbo":     builder.EncodingCl100k,
		"claude-3-opus":     builder.EncodingCl100k,
		"":                  builder.EncodingCl100k,
		"ollama":            builder.EncodingCl100k,
	}
	for model, want := range tests {
		if got := builder.EncodingForModel(model); got != want {
			t.Errorf("%q: %s, want %s", model, got, want)
		}
	}
}

func TestBPECounts(t *testing.T) {
	c := builder.NewCache()
	cl, err := c.Encoding(builder.EncodingCl100k)
	if err != nil {
		t.Fatal(err)
	}
	o2, err := c.Encoding(builder.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	// "hello world" and "tiktoken is great!" are tiktoken's documented
	// examples; the last line guards against regressions.
	tests := []struct {
		text   string
		cl, o2 int
	}{
		{"", 0, 0},
		{"hello world", 2, 2},
		{"tiktoken is great!", 6, 6},
		{"The quick brown fox jumps over the lazy dog, again and again and again.", 16, 16},
	}
	for _, tc := range tests {
		for i := 0; i < 2; i++ { // second round: from the cache
			if got := cl.Count(tc.text); got != tc.cl {
				t.Errorf("cl100k %q: %d, want %d", tc.text, got, tc.cl)
			}
			if got := o2.Count(tc.text); got != tc.o2 {
				t.Errorf("o200k %q: %d, want %d", tc.text, got, tc.o2)
			}
		}
	}
	if c.CachedCounts() != 6 { // three non-empty texts, two encodings
		t.Fatalf("cached %d", c.CachedCounts())
	}
	c.Reset()
	if c.CachedCounts() != 0 {
		t.Fatal("reset kept counts")
	}
	if _, err := c.Encoding("p50k"); err == nil {
		t.Fatal("unknown encoding accepted")
	}
	if got := (builder.CharCounter{}).Count("abcdefghi"); got != 3 {
		t.Fatalf("chars/4 %d", got)
	}
}

func TestConcurrentCounting(t *testing.T) {
	c := builder.NewCache()
	text := strings.Repeat("Concurrent counting must be safe. ", 20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			enc := builder.EncodingCl100k
			if i%2 == 1 {
				enc = builder.EncodingO200k
			}
			tc, err := c.Encoding(enc)
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 20 {
				if tc.Count(text+string(rune('a'+j))) < 100 {
					t.Error("short count")
				}
			}
		}()
	}
	wg.Wait()
}

// TestCharsPerTokenError measures how far chars/4 is from real BPE counts
// (the numbers quoted in the README).
func TestCharsPerTokenError(t *testing.T) {
	raw, err := os.ReadFile("testdata/english.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	paras := strings.Split(strings.TrimSpace(text), "\n\n")
	c := builder.NewCache()
	for _, enc := range []string{builder.EncodingCl100k, builder.EncodingO200k} {
		bpe, _ := c.Encoding(enc)
		est := builder.CharCounter{}.Count(text)
		real := bpe.Count(text)
		whole := 100 * float64(est-real) / float64(real)
		var worst, sumAbs float64
		for _, p := range paras {
			e, r := builder.CharCounter{}.Count(p), bpe.Count(p)
			d := 100 * float64(e-r) / float64(r)
			sumAbs += math.Abs(d)
			worst = max(worst, math.Abs(d))
		}
		t.Logf("%s: %d chars, BPE %d tokens, chars/4 %d tokens: %+.1f%% on the whole text; per paragraph mean |error| %.1f%%, worst %.1f%% (%d paragraphs)",
			enc, len([]rune(text)), real, est, whole, sumAbs/float64(len(paras)), worst, len(paras))
		// chars/4 over-counts English prose (about 5 characters per
		// token): a conservative estimate, but not a close one.
		if whole <= 0 || whole > 40 {
			t.Errorf("chars/4 is %+.1f%% off on English text", whole)
		}
	}
}

// TestTextHashIsFNV: TextHash keys persisted token counts, so it must stay
// FNV-1a 64 over the bytes and then the little-endian length.
func TestTextHashIsFNV(t *testing.T) {
	for _, s := range []string{"", "a", "hello, world", strings.Repeat("日本 kettle ", 1000)} {
		h := fnv.New64a()
		h.Write([]byte(s))
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		if got := builder.TextHash(s); got != h.Sum64() {
			t.Fatalf("TextHash(%.20q) = %x, want %x", s, got, h.Sum64())
		}
	}
}
