package search

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// Embedder turns texts into vectors. Implementations must return exactly
// one vector of Dimensions() float32s per input text, in input order, and
// must be safe for concurrent use.
//
// Name identifies the vector space: two embedders with the same Name and
// Dimensions must produce comparable vectors. The Index records it and
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

// DefaultFusionWeight is Auto's vector weight for an embedder that does not
// say (FusionWeighter). Measured on Cranfield with the shipped 512-dim
// sentence embeddings, nDCG@10: FTS 0.550; hybrid at vector weight 1 (plain
// RRF) 0.448, 0.2: 0.539, 0.1: 0.546, 0.05: 0.554, 0.02: 0.551. 0.05 is the
// largest weight tried that is not worse than FTS: the vectors break
// near-ties in BM25's order and add recall, without overruling it.
const DefaultFusionWeight = 0.05

// fusionWeight is Auto's vector weight for emb.
func fusionWeight(emb Embedder) float64 {
	if fw, ok := emb.(FusionWeighter); ok {
		if w := fw.FusionWeight(); w >= 0 && !math.IsInf(w, 0) && !math.IsNaN(w) {
			return w
		}
	}
	return DefaultFusionWeight
}

// vectorBlob encodes v as sqlite-vec's float32 BLOB (little-endian).
func vectorBlob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// blobVector decodes a float32 BLOB.
func blobVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("search: vector blob of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	decodeVector(v, b)
	return v, nil
}

// decodeVector fills dst with the little-endian float32s of b (4·len(dst)
// bytes).
func decodeVector(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// checkVector validates one vector: the right length, finite values, and
// not all zeros (cosine distance to a zero vector is undefined and
// sqlite-vec returns NULL for it).
func checkVector(v []float32, dims int) error {
	if len(v) != dims {
		return fmt.Errorf("has %d dimensions, want %d", len(v), dims)
	}
	nonzero := false
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("component %d is %v", i, f)
		}
		if f != 0 {
			nonzero = true
		}
	}
	if !nonzero {
		return fmt.Errorf("is all zeros")
	}
	return nil
}

// Normalize scales v to unit length in place and returns it. A zero vector
// is returned unchanged.
func Normalize(v []float32) []float32 {
	var sum float64
	for _, f := range v {
		sum += float64(f) * float64(f)
	}
	if sum == 0 {
		return v
	}
	inv := 1 / math.Sqrt(sum)
	for i, f := range v {
		v[i] = float32(float64(f) * inv)
	}
	return v
}

// CosineDistance is 1 - cos(a, b), the distance sqlite-vec's
// vec_distance_cosine reports. It returns NaN for vectors of different length or
// zero norm.
func CosineDistance(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	return 1 - dot/math.Sqrt(na*nb)
}
