package eval

import (
	"testing"

	"github.com/engram-go/engram/search"
)

// The copy of search.MaxDimensions this package keeps (it cannot import
// search) stays equal to it.
func TestMaxDimensionsIsSearchs(t *testing.T) {
	if maxDimensions != search.MaxDimensions {
		t.Fatalf("maxDimensions %d, search.MaxDimensions %d", maxDimensions, search.MaxDimensions)
	}
}
