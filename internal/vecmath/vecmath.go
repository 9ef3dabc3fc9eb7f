// Package vecmath is the vector arithmetic package search and its engine
// share: the float32 BLOB encoding the vector tables store, the checks an
// embedding must pass, cosine distance, normalisation, and the inner
// product of the in-process KNN scan (AVX2 with FMA on amd64).
package vecmath

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Blob encodes v as sqlite-vec's float32 BLOB (little-endian).
func Blob(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// FromBlob decodes a float32 BLOB.
func FromBlob(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("search: vector blob of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	Decode(v, b)
	return v, nil
}

// Decode fills dst with the little-endian float32s of b (4·len(dst)
// bytes).
func Decode(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

// Check validates one vector: the right length, finite values, and
// not all zeros (cosine distance to a zero vector is undefined and
// sqlite-vec returns NULL for it).
func Check(v []float32, dims int) error {
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

// dotGeneric is the inner product, unrolled by four (Dot uses it where
// there is no vector instruction set for it).
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
