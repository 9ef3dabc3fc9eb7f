package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

func TestExportImportLossless(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	if _, err := src.CreateBlock(ctx, "a", memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "v1"}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{" v2", " v3", " v4"} {
		if err := src.AppendToBlock(ctx, "a", "notes", s); err != nil {
			t.Fatal(err)
		}
		if i < 2 { // two archived epochs: their history travels too
			if err := src.Rebase(ctx, "a", "notes"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := src.CreateBlock(ctx, "a", memory.BlockSpec{Label: "todo", Schema: schema.List{Checkbox: true}, Value: []any{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	if err := src.ShareBlock(ctx, "a", "notes", "b", blocks.Append); err != nil {
		t.Fatal(err)
	}
	e1, _ := src.InsertArchival(ctx, "a", memory.ArchivalEntry{Content: "old fact", Tags: []string{"t"}})
	if _, err := src.SupersedeArchival(ctx, "a", e1.ID, memory.ArchivalEntry{Content: "new fact"}); err != nil {
		t.Fatal(err)
	}
	m1, _ := src.AppendMessage(ctx, "a", memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b1"})
	src.CompleteBatch(ctx, "a", "b1")
	if _, err := src.SaveSummary(ctx, "a", memory.Summary{FirstMessageID: m1.ID, LastMessageID: m1.ID, Content: "greeting"}); err != nil {
		t.Fatal(err)
	}
	d, err := src.Export(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back memory.Dump
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	rep, err := dst.Import(ctx, &back)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Blocks != 2 || rep.Shares != 1 || rep.Archival != 2 || rep.Messages != 1 || rep.Summaries != 1 {
		t.Fatalf("report = %+v", rep)
	}
	h1, _ := src.BlockHistory(ctx, "a", "", "notes")
	h2, _ := dst.BlockHistory(ctx, "a", "", "notes")
	if len(h1) != len(h2) || h1[0].Hash != h2[0].Hash || h1[len(h1)-1].Hash != h2[len(h2)-1].Hash || h2[len(h2)-1].Epoch != 2 {
		t.Fatalf("CRDT history not preserved: %d vs %d changes", len(h1), len(h2))
	}
	if at, err := dst.BlockAt(ctx, "a", "", "notes", []string{h2[2].Hash}); err != nil || at.Render() != "v1 v2" {
		t.Fatalf("as of an imported archived change: %v %v", at, err)
	}
	if r, _ := dst.RenderedContent(ctx, "a", "todo"); r != "[ ] x\n[ ] y" {
		t.Fatalf("todo = %q", r)
	}
	if err := dst.ApplyEdit(ctx, "b", "a", "notes", memory.Edit{Op: blocks.OpAppendText, Text: " +b"}); err != nil {
		t.Fatalf("share not imported: %v", err)
	}
	cur, _ := dst.ListArchival(ctx, "a", nil)
	if len(cur) != 1 || cur[0].Content != "new fact" {
		t.Fatalf("supersession not preserved: %+v", cur)
	}
	s, err := dst.LatestSummary(ctx, "a")
	msgs, _ := dst.Messages(ctx, "a", nil)
	if err != nil || s.FirstMessageID != msgs[0].ID {
		t.Fatalf("summary links: %+v %v", s, err)
	}
	// Importing again collides and changes nothing.
	if _, err := dst.Import(ctx, &back); !errors.Is(err, memory.ErrExists) {
		t.Fatalf("second import: %v", err)
	}
	if n, _ := dst.ListArchival(ctx, "a", &memory.ArchivalQuery{IncludeSuperseded: true}); len(n) != 2 {
		t.Fatalf("failed import left %d archival entries", len(n))
	}
}
