package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// Issue 29 item 2: a write-back store's acknowledged appends survive another
// store's rebase made while they were unflushed, whoever wrote in between.
func TestWriteBackEditsSurviveAnotherStoresRebase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	a, err := memory.Open(ctx, path, &memory.Options{WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	b := openFile(t, path, nil)
	if _, err := b.CreateBlock(ctx, "a", memory.BlockSpec{Label: "notes"}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		s    *memory.Cache
		text string
	}{{a, "a0\n"}, {b, "b1\n"}, {a, "a2\n"}} {
		if err := step.s.AppendToBlock(ctx, "a", "notes", step.text); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Rebase(ctx, "a", "notes"); err != nil {
		t.Fatal(err)
	}
	const want = "a0\nb1\na2\n"
	d, err := a.GetBlock(ctx, "a", "notes")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Render(); got != want {
		t.Errorf("after the rebase the write-back store reads %q, want %q", got, want)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	cold := openFile(t, path, nil)
	if d, err = cold.GetBlock(ctx, "a", "notes"); err != nil {
		t.Fatal(err)
	}
	if got := d.Render(); got != want {
		t.Fatalf("reopened, the block reads %q, want %q", got, want)
	}
}
