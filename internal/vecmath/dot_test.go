package vecmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotMatchesGeneric holds the vector-instruction inner product to the
// portable one: every length from 0 to 130 (each loop's edges), the
// embedders' usual sizes, and slices that start off any alignment.
func TestDotMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	lengths := []int{384, 512, 768, 1024, 1536, 3072}
	for n := range 131 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for off := range 3 {
			buf := make([]float32, 2*(n+off)+1)
			for i := range buf {
				buf[i] = float32(r.NormFloat64())
			}
			a, b := buf[off:off+n], buf[n+off+1:n+off+1+n]
			got, want := Dot(a, b), dotGeneric(a, b)
			var scale float64
			for i := range a {
				scale += math.Abs(float64(a[i]) * float64(b[i]))
			}
			if math.Abs(float64(got-want)) > 1e-5*max(scale, 1) {
				t.Fatalf("n=%d off=%d: dot %v, generic %v", n, off, got, want)
			}
		}
	}
	if useAVX2 {
		t.Log("Dot runs on AVX2+FMA")
	}
}

func BenchmarkDot(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, y := make([]float32, 512), make([]float32, 512)
	for i := range x {
		x[i], y[i] = r.Float32(), r.Float32()
	}
	b.Run("Dot", func(b *testing.B) {
		var s float32
		for b.Loop() {
			s += Dot(x, y)
		}
		_ = s
	})
	b.Run("generic", func(b *testing.B) {
		var s float32
		for b.Loop() {
			s += dotGeneric(x, y)
		}
		_ = s
	})
}
