package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/groupcommit/committest"
	"github.com/engram-go/engram/memory/sqlite"
)

// TestGroupCommit: concurrent writes share transactions, each failing,
// panicking or cancelled one alone (see committest.Run).
func TestGroupCommit(t *testing.T) {
	b, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "g.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	committest.Run(t, b)
}
