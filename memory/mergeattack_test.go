package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// Changes an Append sharee crafts with the raw automerge API are refused
// when they do more than append: a log change that imitates a rotation
// (oldest entry dropped, one appended), an item inserted in the middle,
// items reordered, a text rewritten. A refused merge leaves the value,
// heads, history and search index as they were; an accepted one is found
// by search.
func TestMergeAttacksByAnAppendAgent(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
	logDoc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "log", Schema: schema.Log{Retention: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"e0", "e1"} {
		if err := logDoc.AppendLogEntry(map[string]any{"message": m}, blocks.System); err != nil {
			t.Fatal(err)
		}
	}
	listDoc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "list", Schema: schema.List{Item: schema.FieldInteger}, Value: []any{int64(1), int64(2)}})
	if err != nil {
		t.Fatal(err)
	}
	textDoc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "text", Value: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"log", "list", "text"} {
		if err := c.Agent("ada").Block(l).Share(ctx, "bob", blocks.Append); err != nil {
			t.Fatal(err)
		}
	}
	item := func(v int64) map[string]any { return map[string]any{"value": v, "checked": false} }
	for _, tc := range []struct {
		name, label string
		doc         *blocks.Document
		edit        func(r *automerge.Map) error
	}{
		{"rotation imitated", "log", logDoc, func(r *automerge.Map) error {
			l := subList(r, "entries")
			if err := l.Delete(0); err != nil {
				return err
			}
			return l.Append(map[string]any{"message": "e2", "timestamp": testNow})
		}},
		{"item inserted in the middle", "list", listDoc, func(r *automerge.Map) error { return subList(r, "items").Insert(1, item(9)) }},
		{"items reordered", "list", listDoc, func(r *automerge.Map) error {
			l := subList(r, "items")
			if err := l.Delete(0); err != nil {
				return err
			}
			return l.Append(item(1))
		}},
		{"text rewritten with a word search would find", "text", textDoc, func(r *automerge.Map) error {
			return subText(r, "content").Splice(0, 5, "zebra")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := tc.doc.Value()
			heads := tc.doc.Heads()
			hist, err := c.Agent("ada").Block(tc.label).History(ctx)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Agent("bob").Shared("ada", tc.label).Merge(ctx, peerEdit(t, tc.doc, tc.edit))
			if !errors.Is(err, blocks.ErrPermission) {
				t.Fatalf("merge: err = %v, want ErrPermission", err)
			}
			if v, _ := tc.doc.Value(); !reflect.DeepEqual(v, before) {
				t.Fatalf("refused merge changed the value: %v, was %v", v, before)
			}
			if !reflect.DeepEqual(tc.doc.Heads(), heads) {
				t.Fatal("refused merge moved the heads")
			}
			if h, _ := c.Agent("ada").Block(tc.label).History(ctx); len(h) != len(hist) {
				t.Fatalf("refused merge added history: %d changes, was %d", len(h), len(hist))
			}
		})
	}
	if res, err := c.Agent("ada").Search(ctx, "zebra", nil); err != nil || len(res) != 0 {
		t.Fatalf("a refused merge's text is searchable: %v %v", res, err)
	}
	if err := c.Agent("bob").Shared("ada", "text").Merge(ctx, peerEdit(t, textDoc, func(r *automerge.Map) error { return subText(r, "content").Append(" giraffe") })); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Agent("ada").Search(ctx, "giraffe", nil); err != nil || len(res) != 1 {
		t.Fatalf("an accepted merge is not searchable: %v %v", res, err)
	}
}
