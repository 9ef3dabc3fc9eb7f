package vecmath

import "golang.org/x/sys/cpu"

// useAVX2: the scan's inner products run in dotAVX2 (AVX2 with FMA, 32
// floats per loop), several times faster than the portable loop
// (docs/performance.md): the in-process KNN is a
// scan of every vector in the agent's partition, so this is most of a
// vector search's time.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 is the inner product of a and b[:len(a)] (dot_amd64.s).
//
//go:noescape
func dotAVX2(a, b []float32) float32

// Dot is the inner product of a and b (len(b) ≥ len(a)).
func Dot(a, b []float32) float32 {
	if useAVX2 {
		b = b[:len(a)]
		return dotAVX2(a, b)
	}
	return dotGeneric(a, b)
}
