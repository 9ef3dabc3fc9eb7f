package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// UpdateBlockSchema keeps its promise that the current content must be
// valid under the new schema: a schema the content breaks (fewer
// max_items than the list holds, a string field made an integer while it
// holds "abc") is refused with schema.ErrInvalid and changes nothing.
// Before, the value only had to be readable, so the block kept a value its
// schema refuses, and Import refused the store's own Export of it.
func TestUpdateBlockSchemaChecksTheContent(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "l", Schema: schema.List{Item: schema.FieldInteger}, Permission: blocks.Admin,
		Value: []any{int64(1), int64(2), int64(3)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "m", Schema: schema.Map{Fields: []schema.FieldDef{{Name: "x", Type: schema.FieldString}}},
		Permission: blocks.Admin, Value: map[string]any{"x": "abc"}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		label string
		s     schema.Schema
	}{
		{"l", schema.List{Item: schema.FieldInteger, MaxItems: 2}},
		{"l", schema.List{Item: schema.FieldBoolean}},
		{"m", schema.Map{Fields: []schema.FieldDef{{Name: "x", Type: schema.FieldInteger}}}},
	} {
		before, err := c.Agent("ada").Block(tc.label).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		was := before.Schema()
		if err := c.Agent("ada").Block(tc.label).SetSchema(ctx, tc.s); !errors.Is(err, schema.ErrInvalid) {
			t.Fatalf("UpdateBlockSchema(%q, %v) the content breaks: err = %v, want ErrInvalid", tc.label, tc.s, err)
		}
		metas, err := c.Agent("ada").Blocks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			if m.Label == tc.label {
				if got, _ := schema.Marshal(m.Schema); string(got) != string(mustMarshal(t, was)) {
					t.Fatalf("refused schema change stored: %s", got)
				}
			}
		}
	}
	// A schema the content fits is taken.
	if err := c.Agent("ada").Block("l").SetSchema(ctx, schema.List{Item: schema.FieldInteger, MaxItems: 3}); err != nil {
		t.Fatal(err)
	}
	d, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil).Import(ctx, d); err != nil {
		t.Fatalf("import of the export: %v", err)
	}
}

func mustMarshal(t *testing.T, s schema.Schema) []byte {
	t.Helper()
	b, err := schema.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
