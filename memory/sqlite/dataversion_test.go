package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// openBackend opens a backend on a new file in tb's temporary directory,
// closed when tb ends.
func openBackend(tb testing.TB) *sqlite.Backend {
	tb.Helper()
	b, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "engram.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

// BenchmarkDataVersion: what a warm read pays to learn nothing changed.
func BenchmarkDataVersion(b *testing.B) {
	ctx := context.Background()
	be := openBackend(b)
	for b.Loop() {
		if _, _, err := be.DataVersion(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
