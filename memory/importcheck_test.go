package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// A dump whose block documents were
// edited outside engram gets the checks MergeChanges gives merged changes;
// a refused import adds nothing.
func TestImportJudgesOutsideEdits(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	for _, kind := range []string{"map", "list", "log", "text", "comp"} {
		spec := memory.BlockSpec{Label: kind, Schema: mergeCheckSchemas[kind]}
		switch kind {
		case "text":
			spec.Value = "hello"
		case "comp":
			spec.Value = map[string]any{"facts": "the sky is blue", "scratch": ""}
		}
		if _, err := src.Agent("ada").CreateBlock(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	// A change merged from a peer earlier travels in the dump: not the
	// import's to refuse.
	doc, err := src.Agent("ada").Block("text").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("text").Merge(ctx, peerEdit(t, doc, func(r *automerge.Map) error { return subText(r, "content").Append(" from js") })); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("text").Append(ctx, " and more"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		block string
		edit  func(root *automerge.Map) error
		want  error
	}{
		{"untouched", "", nil, nil},
		{"string into integer field", "map", func(r *automerge.Map) error { return sub(r, "fields").Set("n", "seven") }, schema.ErrInvalid},
		{"2.5 into integer field", "map", func(r *automerge.Map) error { return sub(r, "fields").Set("n", 2.5) }, schema.ErrInvalid},
		{"read-only field overwritten", "map", func(r *automerge.Map) error { return sub(r, "fields").Set("owner", "mallory") }, blocks.ErrPermission},
		{"string item in a list of integers", "list", func(r *automerge.Map) error {
			return subList(r, "items").Append(map[string]any{"value": "x", "checked": false})
		}, schema.ErrInvalid},
		{"unknown root key on a map", "map", func(r *automerge.Map) error { return r.Set("extra", "x") }, schema.ErrInvalid},
		{"unknown root key on a list", "list", func(r *automerge.Map) error { return r.Set("extra", int64(1)) }, schema.ErrInvalid},
		{"unknown root key on a log", "log", func(r *automerge.Map) error { return r.Set("extra", true) }, schema.ErrInvalid},
		{"read-only section rewritten", "comp", func(r *automerge.Map) error {
			return subText(sub(r, "sections", "facts"), "content").Append(" and green")
		}, blocks.ErrPermission},
		{"valid outside append", "text", func(r *automerge.Map) error { return subText(r, "content").Append("!") }, nil},
		{"valid outside integer", "map", func(r *automerge.Map) error { return sub(r, "fields").Set("n", int64(3)) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := src.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				for i, b := range d.Blocks {
					if b.Label != tc.block {
						continue
					}
					am, err := automerge.Load(b.Document)
					if err != nil {
						t.Fatal(err)
					}
					if err := tc.edit(am.RootMap()); err != nil {
						t.Fatal(err)
					}
					if _, err := am.Commit("edited in the dump"); err != nil {
						t.Fatal(err)
					}
					d.Blocks[i].Document = am.Save()
				}
			}
			dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
			_, err = dst.Import(ctx, d)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("import refused: %v", err)
				}
				for _, b := range d.Blocks {
					got, err := dst.Agent("ada").Block(b.Label).Doc(ctx)
					if err != nil {
						t.Fatal(err)
					}
					v, _ := got.Value()
					if err := schemaValid(got.Schema(), v); err != nil {
						t.Fatalf("imported block %q is invalid: %v", b.Label, err)
					}
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("import: err = %v, want %v", err, tc.want)
			}
			if metas, _ := dst.Agent("ada").Blocks(ctx); len(metas) != 0 {
				t.Fatalf("refused import added %d blocks", len(metas))
			}
		})
	}
}
