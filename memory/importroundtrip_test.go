package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// A dump Export wrote imports, whatever the block's history holds: changes
// a sharee merged from an automerge peer (whose messages are not engram's)
// followed by edits the owner could not make — a read-only field the
// system set, a rewrite merged by a ReadWrite sharee into a block whose
// owner only holds Append. Only what was done to the document after the
// export is judged as an outside change; an edit made after the export is
// still refused.
func TestImportTakesWhatExportWrote(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	// A map block: a sharee merges, then the system sets the read-only field.
	doc, err := createBlockDoc(ctx, src.Agent("ada"), memory.BlockSpec{Label: "map", Schema: mergeCheckSchemas["map"]})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("map").Share(ctx, "bob", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("bob").Shared("ada", "map").Merge(ctx, peerEdit(t, doc, func(r *automerge.Map) error { return sub(r, "fields").Set("n", int64(3)) })); err != nil {
		t.Fatal(err)
	}
	if err := doc.SetField("owner", "grace", blocks.System); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("map").Persist(ctx); err != nil {
		t.Fatal(err)
	}
	// A text block whose owner holds Append: a ReadWrite sharee rewrites it.
	tdoc, err := createBlockDoc(ctx, src.Agent("ada"), memory.BlockSpec{Label: "text", Schema: mergeCheckSchemas["text"], Value: "hello", Permission: blocks.Append})
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("text").Share(ctx, "bob", blocks.ReadWrite); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("bob").Shared("ada", "text").Merge(ctx, peerEdit(t, tdoc, func(r *automerge.Map) error { return subText(r, "content").Splice(0, 1, "J") })); err != nil {
		t.Fatal(err)
	}

	d, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	if _, err := dst.Import(ctx, d); err != nil {
		t.Fatalf("a dump Export wrote was refused: %v", err)
	}
	got, err := dst.Agent("ada").Block("map").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Field("owner"); v != "grace" {
		t.Fatalf("imported owner = %v, want grace", v)
	}

	// Edited after the export (not pretending to be engram, or pretending):
	// still judged, and refused; so is an edit to a dump without heads (an
	// older one) that does not pretend.
	for _, tc := range []struct {
		msg      string
		dropHead bool
	}{{"edited in the dump", false}, {`{"a":"system","op":"set_field"}`, false}, {"edited in the dump", true}} {
		msg := tc.msg
		d, err := src.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range d.Blocks {
			if tc.dropHead {
				d.Blocks[i].Heads = nil
			}
			if b.Label != "map" {
				continue
			}
			am, err := automerge.Load(b.Document)
			if err != nil {
				t.Fatal(err)
			}
			if err := sub(am.RootMap(), "fields").Set("owner", "mallory"); err != nil {
				t.Fatal(err)
			}
			if _, err := am.Commit(msg); err != nil {
				t.Fatal(err)
			}
			d.Blocks[i].Document = am.Save()
		}
		dst := openFile(t, filepath.Join(t.TempDir(), "dst2.db"), nil)
		if _, err := dst.Import(ctx, d); err == nil {
			t.Fatalf("a read-only field set in the dump after the export (message %q, heads dropped %v) was imported", msg, tc.dropHead)
		}
	}
	// Heads the document lacks: the dump is damaged.
	d, err = src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d.Blocks[0].Heads = []string{strings.Repeat("ab", 32)}
	if _, err := openFile(t, filepath.Join(t.TempDir(), "dst3.db"), nil).Import(ctx, d); !errors.Is(err, blocks.ErrCorrupt) {
		t.Fatalf("import with heads the document lacks: err = %v, want ErrCorrupt", err)
	}
}

// An archived epoch is history: one changed after the export is refused;
// the untouched dump imports with its epochs.
func TestImportRefusesChangedArchivedEpoch(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	if _, err := src.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "map", Schema: mergeCheckSchemas["map"]}); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("ada").Block("map").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Blocks[0].Epochs) == 0 {
		t.Fatal("no archived epoch to test with")
	}
	if _, err := openFile(t, filepath.Join(t.TempDir(), "ok.db"), nil).Import(ctx, d); err != nil {
		t.Fatalf("untouched dump: %v", err)
	}
	am, err := automerge.Load(d.Blocks[0].Epochs[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := sub(am.RootMap(), "fields").Set("owner", "mallory"); err != nil {
		t.Fatal(err)
	}
	if _, err := am.Commit(`{"a":"system","op":"set_field"}`); err != nil {
		t.Fatal(err)
	}
	d.Blocks[0].Epochs[0] = am.Save()
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	if _, err := dst.Import(ctx, d); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("import of a changed archived epoch: err = %v, want ErrPermission", err)
	}
	if metas, _ := dst.Agent("ada").Blocks(ctx); len(metas) != 0 {
		t.Fatalf("refused import added %d blocks", len(metas))
	}
}
