//go:build !amd64

package search

// dot is the inner product of a and b (len(b) ≥ len(a)).
func dot(a, b []float32) float32 { return dotGeneric(a, b) }
