package sqlite_test

import (
	"testing"

	"github.com/engram-go/engram/internal/groupcommit/committest"
)

// TestGroupCommit: concurrent writes share transactions, each failing,
// panicking or cancelled one alone (see committest.Run).
func TestGroupCommit(t *testing.T) {
	committest.Run(t, openBackend(t))
}
