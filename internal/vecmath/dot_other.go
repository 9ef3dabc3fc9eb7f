//go:build !amd64

package vecmath

// Dot is the inner product of a and b (len(b) ≥ len(a)).
func Dot(a, b []float32) float32 { return dotGeneric(a, b) }
