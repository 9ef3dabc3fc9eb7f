package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestBlocksStampSeesOtherCaches: a change made through another Cache on the
// same file (another process) changes the stamp read here, including for
// blocks shared with the agent, and both Caches read the same stamp.
func TestBlocksStampSeesOtherCaches(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	open := func() *memory.Cache {
		c, err := memory.Open(ctx, path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	here, there := open(), open()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := here.CreateBlock(ctx, "a", memory.BlockSpec{Label: "notes", Value: "one", Permission: blocks.Admin})
	must(err)
	_, err = here.CreateBlock(ctx, "b", memory.BlockSpec{Label: "board", Value: "start", Permission: blocks.Admin})
	must(err)
	stamp := func(c *memory.Cache) memory.BlocksStamp {
		t.Helper()
		s, err := c.BlocksStamp(ctx, "a")
		must(err)
		return s
	}
	cur := stamp(here)
	steps := []struct {
		what string
		f    func() error
	}{
		{"append", func() error { return there.AppendToBlock(ctx, "a", "notes", " two") }},
		{"pin", func() error { return there.SetBlockPinned(ctx, "a", "notes", true) }},
		{"share", func() error { return there.ShareBlock(ctx, "b", "board", "a", blocks.Append) }},
		{"owner edits the shared block", func() error { return there.AppendToBlock(ctx, "b", "board", " more") }},
		{"re-share", func() error { return there.ShareBlock(ctx, "b", "board", "a", blocks.ReadWrite) }},
		{"unshare", func() error { return there.UnshareBlock(ctx, "b", "board", "a") }},
		{"create", func() error {
			_, err := there.CreateBlock(ctx, "a", memory.BlockSpec{Label: "tmp", Permission: blocks.Admin})
			return err
		}},
		{"delete", func() error { return there.DeleteBlock(ctx, "a", "tmp") }},
	}
	for _, st := range steps {
		must(st.f())
		next := stamp(here)
		if next == cur {
			t.Fatalf("%s through another Cache: stamp unchanged", st.what)
		}
		if other := stamp(there); other != next {
			t.Fatalf("%s: the two Caches disagree: %+v vs %+v", st.what, next, other)
		}
		cur = next
	}
}
