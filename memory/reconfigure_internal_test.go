package memory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// TestReconfigureRightAfterAWrite: a reconfiguration that takes the block
// the moment a write released it, before that write returned to the
// document (whose views still read the state before the edit), checks the
// content and stores the rendering of the block with the edit, in
// write-through and write-back mode. Write-back persists the edit first,
// as the store's own persist does when it gets the block first: the
// reconfiguration's persist then has nothing left to write that would
// store the rendering again.
func TestReconfigureRightAfterAWrite(t *testing.T) {
	const agent, label = "ada", "l"
	pin := func(ctx context.Context, s *Store) error { return s.setBlockPinned(ctx, agent, label, true) }
	maxItems3 := func(ctx context.Context, s *Store) error {
		return s.updateBlockSchema(ctx, agent, label, schema.List{Item: schema.FieldInteger, MaxItems: 3})
	}
	for _, tc := range []struct {
		name      string
		writeBack bool
		edit      Edit
		during    func(ctx context.Context, s *Store) error
		refused   bool // the reconfiguration does not fit the content with the edit
	}{
		{"write-through: pin after a delete", false, Edit{Op: blocks.OpDeleteItem, Index: 0}, pin, false},
		{"write-through: pin after a push", false, Edit{Op: blocks.OpPushItem, Value: int64(4)}, pin, false},
		{"write-through: max 3 items after a push", false, Edit{Op: blocks.OpPushItem, Value: int64(4)}, maxItems3, true},
		{"write-back: pin after a delete", true, Edit{Op: blocks.OpDeleteItem, Index: 0}, pin, false},
		{"write-back: pin after a push", true, Edit{Op: blocks.OpPushItem, Value: int64(4)}, pin, false},
		{"write-back: max 3 items after a push", true, Edit{Op: blocks.OpPushItem, Value: int64(4)}, maxItems3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			a, err := Open(ctx, path, &Options{WriteBack: tc.writeBack})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if _, err := a.createBlock(ctx, agent, BlockSpec{Label: label, Schema: schema.List{Item: schema.FieldInteger},
				Permission: blocks.Admin, Value: []any{int64(1), int64(2), int64(3)}}); err != nil {
				t.Fatal(err)
			}
			if err := a.persistBlock(ctx, agent, label); err != nil {
				t.Fatal(err)
			}
			var during error
			a.afterWrite = func() {
				a.afterWrite = nil
				if tc.writeBack {
					if err := a.persistBlock(ctx, agent, label); err != nil {
						t.Errorf("persist: %v", err)
					}
				}
				during = tc.during(ctx, a)
			}
			if err := a.applyEdit(ctx, agent, "", label, tc.edit); err != nil {
				t.Fatal(err)
			}
			if a.afterWrite != nil {
				t.Fatal("the edit did not run through entry.Write: the case tested nothing")
			}
			if (during != nil) != tc.refused {
				t.Errorf("reconfiguration: %v, want refused %v", during, tc.refused)
			}
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			c, err := Open(ctx, path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			d, err := c.getBlock(ctx, agent, label)
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.renderedContent(ctx, agent, label)
			if err != nil {
				t.Fatal(err)
			}
			if r != d.Render() {
				t.Errorf("stored rendering %q, document %q", r, d.Render())
			}
			v, err := d.Value()
			if err == nil {
				err = blocks.CheckValue(d.Schema(), v)
			}
			if err != nil {
				t.Errorf("content %v under the stored schema: %v", v, err)
			}
		})
	}
}
