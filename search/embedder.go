package search

import (
	"context"
	"strings"

	"github.com/engram-go/engram/internal/vecmath"
)

// Embedder turns texts into vectors. Implementations must return exactly
// one vector of Dimensions() float32s per input text, in input order, and
// must be safe for concurrent use.
//
// Name identifies the vector space: two embedders with the same Name and
// Dimensions must produce comparable vectors. The store records it and
// refuses to mix vectors of different embedders (ErrEmbedderMismatch).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
	Name() string
}

// FusionWeighter is an Embedder that says how far Auto mode should trust
// its vectors: the weight of the vector list in reciprocal-rank fusion (0:
// Auto searches FTS only; 1: vectors count as much as BM25). Embedders that
// do not implement it get DefaultFusionWeight. An explicit
// Options.VectorWeight overrides it.
type FusionWeighter interface {
	FusionWeight() float64
}

// MaxDimensions is the largest vector size an Embedder may produce: the search engine refuses a larger one (sqlite-vec's
// limit).
const MaxDimensions = 8192

// DefaultFusionWeight is Auto's vector weight for an embedder that does not
// say (FusionWeighter). Measured on Cranfield with the shipped 512-dim
// sentence embeddings, nDCG@10: FTS 0.550; hybrid at vector weight 1 (plain
// RRF) 0.448, 0.2: 0.539, 0.1: 0.546, 0.05: 0.554, 0.02: 0.551. 0.05 is the
// largest weight tried that is not worse than FTS: the vectors break
// near-ties in BM25's order and add recall, without overruling it.
const DefaultFusionWeight = 0.05

// Normalize scales v to unit length in place and returns it. A zero vector
// is returned unchanged.
func Normalize(v []float32) []float32 { return vecmath.Normalize(v) }

// CosineDistance is 1 - cos(a, b), the distance sqlite-vec's
// vec_distance_cosine reports. It returns NaN for vectors of different length or
// zero norm.
func CosineDistance(a, b []float32) float64 { return vecmath.CosineDistance(a, b) }

// BlockText is the text embedded for a block: its label, description and
// rendered content, non-empty parts joined by newlines. The store embeds blocks (and
// re-embeds them) with it.
func BlockText(label, description, rendered string) string {
	var parts []string
	for _, s := range []string{label, description, rendered} {
		if strings.TrimSpace(s) != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}
