package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// BenchmarkDataVersion: what a warm read pays to learn nothing changed.
func BenchmarkDataVersion(b *testing.B) {
	ctx := context.Background()
	be, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "v.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for b.Loop() {
		if _, _, err := be.DataVersion(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
