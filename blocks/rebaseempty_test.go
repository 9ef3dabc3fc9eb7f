package blocks_test

import (
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// A Rebase with no change between StartRebase and Finish adds no
// catch-up change, whatever empty or nil containers the value holds.
func TestRebaseOfEmptyContainers(t *testing.T) {
	mapSchema := schema.Map{Fields: []schema.FieldDef{{Name: "l", Type: schema.FieldList}, {Name: "o", Type: schema.FieldObject}, {Name: "n", Type: schema.FieldCounter}}}
	cases := map[string]struct {
		s  schema.Schema
		do func(t *testing.T, d *blocks.Document)
	}{
		"empty list field": {mapSchema, func(t *testing.T, d *blocks.Document) {
			must(t, d.SetField("l", []any{}, blocks.Agent))
		}},
		"nil list field": {mapSchema, func(t *testing.T, d *blocks.Document) {
			must(t, d.SetField("l", []string(nil), blocks.Agent))
		}},
		"object with empty members": {mapSchema, func(t *testing.T, d *blocks.Document) {
			must(t, d.SetField("o", map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any(nil), "d": nil}, blocks.Agent))
		}},
		"list emptied": {schema.List{}, func(t *testing.T, d *blocks.Document) {
			must(t, d.PushItem("x", blocks.Agent))
			must(t, d.DeleteItem(0, blocks.Agent))
		}},
		"list item object": {schema.List{}, func(t *testing.T, d *blocks.Document) {
			_ = d.PushItem(map[string]any{"a": []any{}}, blocks.Agent)
		}},
		"log trimmed to nothing": {schema.Log{}, func(t *testing.T, d *blocks.Document) {
			must(t, d.AppendLogEntry(map[string]any{"message": "m"}, blocks.Agent))
			_, err := d.TrimLog(0, blocks.Agent)
			must(t, err)
		}},
		"empty log": {schema.Log{}, func(t *testing.T, d *blocks.Document) {}},
		"counter": {mapSchema, func(t *testing.T, d *blocks.Document) {
			must(t, d.IncrementCounter("n", 0, blocks.Agent))
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d := newDoc(t, c.s, blocks.Admin)
			c.do(t, d)
			nd, err := d.Rebased()
			if err != nil {
				t.Fatalf("Rebased: %v", err)
			}
			h, err := nd.History()
			must(t, err)
			if len(h) != 1 {
				t.Fatalf("fresh document has %d changes, want 1", len(h))
			}
			if nd.Render() != d.Render() {
				t.Fatalf("render differs")
			}
		})
	}
}
