package blocks

import (
	"errors"
	"maps"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/schema"
)

// TestFailedEditLeavesNoOperations: an edit whose CRDT operations fail
// half-way leaves none of them in the document — not in its value, and
// not carried into the history by the next edit's commit.
func TestFailedEditLeavesNoOperations(t *testing.T) {
	sch := schema.Map{Fields: []schema.FieldDef{
		{Name: "status", Type: schema.FieldString},
		{Name: "n", Type: schema.FieldInteger},
	}}
	info := Info{Label: "state", Type: Working, Schema: sch, Permission: ReadWrite, Owner: "agent-1"}
	// "early" fails before any operation: the edit before it must stay.
	for _, failAt := range []string{"apply", "panic", "early"} {
		t.Run(failAt, func(t *testing.T) {
			d, err := New(info, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.SetField("status", "ok", Agent); err != nil {
				t.Fatal(err)
			}
			boom := errors.New("boom")
			err = d.mutate(Agent, request{op: OpSetField, field: "status"}, func(_ schema.Schema, cur any) (any, func(*automerge.Map) error, error) {
				next := maps.Clone(cur.(map[string]any))
				next["status"] = "half"
				return next, func(node *automerge.Map) error {
					if failAt == "early" {
						return boom
					}
					fields, err := getMap(node, keyFields)
					if err != nil {
						return err
					}
					if err := fields.Set("status", "half"); err != nil {
						return err
					}
					if failAt == "panic" {
						panic("automerge-go panicked")
					}
					return boom
				}, nil
			})
			if err == nil {
				t.Fatal("the failing edit succeeded")
			}
			if failAt != "panic" && !errors.Is(err, boom) {
				t.Fatalf("error %v does not wrap the apply's", err)
			}
			if err := d.SetField("n", int64(2), Agent); err != nil {
				t.Fatal(err)
			}
			check := func(what string, d *Document) {
				t.Helper()
				v, err := d.Value()
				if err != nil {
					t.Fatal(err)
				}
				m := v.(map[string]any)
				if m["status"] != "ok" || m["n"] != int64(2) {
					t.Fatalf("%s: value %v, want status ok and n 2", what, m)
				}
			}
			check("the document", d)
			saved, err := d.Save()
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := Load(info, saved, nil)
			if err != nil {
				t.Fatal(err)
			}
			check("the document saved and loaded", loaded)
			// Nor does any change hold the half edit.
			am, err := automerge.Load(saved)
			if err != nil {
				t.Fatal(err)
			}
			chs, err := am.Changes()
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chs {
				if ch.Message() == "" {
					t.Fatalf("a change without a commit message (an automatic commit of pending operations): %v", ch.Hash())
				}
			}
		})
	}
}
