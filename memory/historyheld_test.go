package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// TestHeldDocumentHistory: a document the store handed out reads its
// history as it reads its value, from memory: neither the store's close
// nor a view's ended context makes History fail (who merged which change
// is known to the document, not looked up on every call).
func TestHeldDocumentHistory(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "h.db")), nil)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "notes", Value: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("ada").Block("notes").Append(ctx, " y"); err != nil {
		t.Fatal(err)
	}
	want, err := doc.History()
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if h, err := doc.WithContext(ended).History(); err != nil || len(h) != len(want) {
		t.Errorf("a view whose context ended: History = %d changes, %v; want %d", len(h), err, len(want))
	}
	c.Close()
	if h, err := doc.History(); err != nil || len(h) != len(want) {
		t.Errorf("after the store closed: History = %d changes, %v; want %d (Value still reads)", len(h), err, len(want))
	}
}
