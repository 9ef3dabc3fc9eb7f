package search

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/engram-go/engram/internal/analyzer"
)

// DefaultOfflineDimensions is the offline embedder's size when NewOffline
// is given 0.
const DefaultOfflineDimensions = 384

// OfflineEmbedder is a deterministic, dependency-free embedder for tests,
// examples and air-gapped use. It hashes features of the text into a fixed
// number of dimensions (the "hashing trick") and L2-normalises the result:
//
//   - words (unicode61 tokens, lower-cased, English stopwords dropped unless
//     nothing else is left), Porter-stemmed, weight 1;
//   - adjacent stemmed word pairs, weight 0.5;
//   - character trigrams of each word with boundary marks ("^wo", "wor",
//     "ord", "rd$"), weight 0.3 — so inflections and typos still overlap.
//
// Repeated features count sub-linearly (square root of the count). Each
// feature's FNV-1a hash picks the dimension and its sign. The arithmetic is
// IEEE-exact (sums in a fixed order, square roots only), so a text embeds to
// the same bits on every run and platform. Texts sharing words get close
// vectors; it knows nothing of synonyms. An empty text embeds to the first
// unit vector.
type OfflineEmbedder struct {
	dims int
}

// NewOffline returns an offline embedder of dims dimensions (0 or less:
// DefaultOfflineDimensions).
func NewOffline(dims int) *OfflineEmbedder {
	if dims <= 0 {
		dims = DefaultOfflineDimensions
	}
	return &OfflineEmbedder{dims: dims}
}

// Dimensions returns the vector size.
func (e *OfflineEmbedder) Dimensions() int { return e.dims }

// Name returns "offline-hash-v1/<dims>".
func (e *OfflineEmbedder) Name() string { return fmt.Sprintf("offline-hash-v1/%d", e.dims) }

// FusionWeight is 0: feature hashing carries the same words FTS matches,
// so Auto searches FTS only with this embedder (on Cranfield any weight
// above 0.02 made hybrid worse than FTS alone: 0.509 at 1, 0.547 at 0.05,
// FTS 0.550). Vector and Hybrid modes still use its vectors.
func (e *OfflineEmbedder) FusionWeight() float64 { return 0 }

// Embed embeds each text; it fails only when ctx is done.
func (e *OfflineEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("search: offline embedder: %w", err)
			}
		}
		out[i] = e.Vector(t)
	}
	return out, nil
}

const (
	offlineWordWeight    = 1.0
	offlinePairWeight    = 0.5
	offlineTrigramWeight = 0.3
)

// Vector embeds one text.
func (e *OfflineEmbedder) Vector(text string) []float32 {
	var all, words []string
	analyzer.Tokens(text, func(tok string) bool {
		all = append(all, tok)
		if !IsStopword(tok) {
			words = append(words, tok)
		}
		return true
	})
	if len(words) == 0 {
		words = all
	}
	// Count features in first-seen order so the sums below run in a fixed
	// order (map order would change float rounding between runs).
	type feature struct {
		key    string
		weight float64
		count  float64
	}
	var feats []feature
	index := map[string]int{}
	add := func(key string, weight float64) {
		if i, ok := index[key]; ok {
			feats[i].count++
			return
		}
		index[key] = len(feats)
		feats = append(feats, feature{key: key, weight: weight, count: 1})
	}
	prev := ""
	for _, w := range words {
		stem := analyzer.PorterStem(w)
		add("w\x00"+stem, offlineWordWeight)
		if prev != "" {
			add("p\x00"+prev+"\x00"+stem, offlinePairWeight)
		}
		prev = stem
		r := []rune("^" + w + "$")
		for i := 0; i+3 <= len(r); i++ {
			add("t\x00"+string(r[i:i+3]), offlineTrigramWeight)
		}
	}
	acc := make([]float64, e.dims)
	for _, f := range feats {
		h := fnv.New64a()
		h.Write([]byte(f.key))
		sum := h.Sum64()
		v := f.weight * math.Sqrt(f.count)
		if sum>>63 == 1 {
			v = -v
		}
		acc[(sum&(1<<63-1))%uint64(e.dims)] += v
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	out := make([]float32, e.dims)
	if norm == 0 {
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range acc {
		out[i] = float32(x / norm)
	}
	return out
}
