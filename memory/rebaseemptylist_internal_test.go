package memory

import (
	"context"
	"fmt"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// A List block whose last item is deleted holds a nil []Item as its
// cached value (deleteItem's append onto a nil slice); the Rebase's base
// is cloneValue's empty non-nil copy, so Finish sees a change where there
// is none, writes nothing and fails to commit ("Commit is empty"): an
// error is logged and the due epoch is not started.
func TestRebaseOfAnEmptiedList(t *testing.T) {
	ctx := context.Background()
	s, logs := openLoggingErrors(t)
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "todo", Type: blocks.Working, Permission: blocks.Admin,
		Schema: schema.List{}}); err != nil {
		t.Fatal(err)
	}
	b := s.Agent("ann").Block("todo")
	built := 0
	s.rebaseBuilt = func(*entry) { built++ }
	for round := range 30 {
		if err := b.Apply(ctx, Edit{Op: blocks.OpPushItem, Value: fmt.Sprintf("a fairly long item number %d to grow the history", round)}); err != nil {
			t.Fatal(err)
		}
		if err := b.Apply(ctx, Edit{Op: blocks.OpDeleteItem, Index: 0}); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var epoch int64
	if err := s.rdb.QueryRow(`SELECT epoch FROM blocks WHERE owner = 'ann' AND label = 'todo'`).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); l != "" || epoch == 0 {
		t.Fatalf("%d rebases built, epoch %d; logged:\n%.1500s", built, epoch, l)
	}
}
