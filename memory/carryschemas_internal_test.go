package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// s2 (write-back) checks item b, unflushed; s1 rebases the block and then
// deletes b (acknowledged, write-through). When s2 flushes, its check is
// carried to the new epoch: b stays deleted in every store (made through
// the archive, as "replace b by b✓" on the epoch's first state, the check
// brought b back).
func TestSwitchCarriedCheckKeepsDelete(t *testing.T) {
	for _, mode := range []string{"archive", "no-archive (by value)"} {
		t.Run(mode, func(t *testing.T) { carriedCheck(t, mode == "archive") })
	}
}

func carriedCheck(t *testing.T, archive bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	s1, err := Open(ctx, path, &Options{HistoryLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(ctx, path, &Options{HistoryLimit: -1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a1, a2 := s1.Agent("ann"), s2.Agent("ann")
	if _, err := a1.CreateBlock(ctx, BlockSpec{Label: "todo", Schema: schema.List{Checkbox: true}, Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "c"} {
		if err := a1.Block("todo").Apply(ctx, Edit{Op: blocks.OpPushItem, Value: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a2.Block("todo").Render(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a2.Block("todo").Apply(ctx, Edit{Op: blocks.OpCheckItem, Index: 1, Value: true}); err != nil {
		t.Fatal(err)
	}
	if err := a1.Block("todo").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a1.Block("todo").Apply(ctx, Edit{Op: blocks.OpDeleteItem, Index: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a1.Block("todo").Compact(ctx); err != nil { // the delete is in the new epoch's snapshot
		t.Fatal(err)
	}
	if !archive {
		if _, err := s1.rdb.Exec(`DELETE FROM block_archive`); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	for name, s := range map[string]*Store{"s1": s1, "s2": s2, "s3": s3} {
		doc, err := s.Agent("ann").Block("todo").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		its, err := doc.Items()
		if err != nil {
			t.Fatal(err)
		}
		var vals []any
		for _, it := range its {
			vals = append(vals, it.Value)
		}
		if len(its) != 2 {
			t.Errorf("%s: items %v; s1's acknowledged delete of b was undone by s2's carried check", name, vals)
		}
	}
}

// A Map block's list field: s2 (write-back) appends "ours", unflushed;
// s1 rebases, appends "theirs" (acknowledged) and compacts. After s2's
// flush every store must hold both items.
func TestSwitchCarriedListFieldAppend(t *testing.T) {
	for _, mode := range []string{"archive", "no-archive (by value)"} {
		t.Run(mode, func(t *testing.T) { carriedListAppend(t, mode == "archive") })
	}
}

func carriedListAppend(t *testing.T, archive bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s1, err := Open(ctx, path, &Options{HistoryLimit: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(ctx, path, &Options{HistoryLimit: -1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	a1, a2 := s1.Agent("ann"), s2.Agent("ann")
	sc := schema.Map{Fields: []schema.FieldDef{{Name: "l", Type: schema.FieldList}}}
	if _, err := a1.CreateBlock(ctx, BlockSpec{Label: "m", Schema: sc, Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	app := func(b *Block, v string) {
		t.Helper()
		if err := b.Apply(ctx, Edit{Op: blocks.OpAppendToListField, Field: "l", Value: v}); err != nil {
			t.Fatal(err)
		}
	}
	app(a1.Block("m"), "first")
	if _, err := a2.Block("m").Render(ctx); err != nil {
		t.Fatal(err)
	}
	app(a2.Block("m"), "ours")
	if err := a1.Block("m").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	app(a1.Block("m"), "theirs")
	if err := a1.Block("m").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if !archive {
		if _, err := s1.rdb.Exec(`DELETE FROM block_archive`); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	doc, err := a1.Block("m").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := doc.Field("l")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(v)
	if !strings.Contains(got, "theirs") || !strings.Contains(got, "ours") {
		t.Errorf("l = %s after s2's flush, want first, theirs (s1's acknowledged append) and ours", got)
	}
}
