package memory

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

// TestPanickedWriteIsNotKept: a write whose transaction panics (here its
// decide) is not committed, so nothing of its edit may stay in the cached
// document: views must not read it once the store lets go of the block,
// and the block's next write must not persist it as its own pending
// change.
func TestPanickedWriteIsNotKept(t *testing.T) {
	ctx := context.Background()
	s, path := openOneBlock(t)
	doc, err := s.GetBlock(ctx, "ann", "notes")
	if err != nil {
		t.Fatal(err)
	}
	s.testDecide = func(*sql.Tx) error { panic("boom") }
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Error("the write did not panic")
			}
		}()
		_ = s.Agent("ann").Block("notes").Append(ctx, "PANICKED\n")
	}()
	s.testDecide = nil
	if v, _ := doc.Value(); strings.Contains(v.(string), "PANICKED") {
		t.Errorf("after the panicked write a view reads %q: an edit that was never committed", v)
	}
	if err := s.Agent("ann").Block("notes").Append(ctx, "three\n"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	od, err := other.GetBlock(ctx, "ann", "notes")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := od.Value(); strings.Contains(v.(string), "PANICKED") {
		t.Errorf("another process reads %q: the next write persisted the panicked edit", v)
	}
}
