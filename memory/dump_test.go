package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

func TestExportImportLossless(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	if _, err := src.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "v1",
		Description: "deploy notes", Pinned: true, Priority: 3, CharLimit: 5000, Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	for i, s := range []string{" v2", " v3", " v4"} {
		if err := src.Agent("a").Block("notes").Append(ctx, s); err != nil {
			t.Fatal(err)
		}
		if i < 2 { // two archived epochs: their history travels too
			if err := src.Agent("a").Block("notes").Rebase(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := src.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "todo", Schema: schema.List{Checkbox: true}, Value: []any{"x", "y"}}); err != nil {
		t.Fatal(err)
	}
	if err := src.Agent("a").Block("notes").Share(ctx, "b", blocks.Append); err != nil {
		t.Fatal(err)
	}
	// A second owner whose rows interleave with a's, and a deleted entry,
	// so the import's renumbering (ids in dump order, from 1) moves ids
	// and the links between rows must be remapped with them.
	gone, _ := src.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "deleted"})
	if err := src.Agent("a").Archival().Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Agent("b").Archival().Insert(ctx, memory.ArchivalEntry{Content: "b's fact"}); err != nil {
		t.Fatal(err)
	}
	e1, _ := src.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "old fact", Tags: []string{"t", "u"},
		Metadata: map[string]any{"source": "run 4", "n": 2.5}})

	if _, err := src.Agent("a").Archival().Supersede(ctx, e1.ID, memory.ArchivalEntry{Content: "new fact"}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Agent("b").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "b's hello", BatchID: "bb"}); err != nil {
		t.Fatal(err)
	}
	m1, _ := src.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b1"})
	if _, err := src.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: "b1",
		ToolCalls: []memory.ToolCall{{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"q":"x"}`)}}}); err != nil {
		t.Fatal(err)
	}
	m3, err := src.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleTool, Name: "search", ToolCallID: "c1", Content: "found", BatchID: "b1"})
	if err != nil {
		t.Fatal(err)
	}
	src.Agent("a").Messages().CompleteBatch(ctx, "b1")
	if _, err := src.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "open batch", BatchID: "b2"}); err != nil {
		t.Fatal(err)
	}
	s1, err := src.Agent("a").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: m1.ID, LastMessageID: m1.ID, Content: "greeting"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Agent("a").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: m1.ID, LastMessageID: m3.ID, PreviousID: s1.ID,
		Content: "greeting and a search", Model: "m-1"}); err != nil {
		t.Fatal(err)
	}
	d, err := src.Export(ctx)
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
	if rep.Blocks != 2 || rep.Shares != 1 || rep.Archival != 3 || rep.Messages != 5 || rep.Summaries != 2 {
		t.Fatalf("report = %+v", rep)
	}
	// The whole dump survives: exporting the imported store gives back
	// what was imported.
	again, err := dst.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameDump(t, renumbered(t, &back), renumbered(t, again))
	h1, _ := src.Agent("a").Block("notes").History(ctx)
	h2, _ := dst.Agent("a").Block("notes").History(ctx)
	if len(h1) != len(h2) || h1[0].Hash != h2[0].Hash || h1[len(h1)-1].Hash != h2[len(h2)-1].Hash || h2[len(h2)-1].Epoch != 2 {
		t.Fatalf("CRDT history not preserved: %d vs %d changes", len(h1), len(h2))
	}
	if at, err := dst.Agent("a").Block("notes").At(ctx, []string{h2[2].Hash}); err != nil || at.Render() != "v1 v2" {
		t.Fatalf("as of an imported archived change: %v %v", at, err)
	}
	if r, _ := dst.Agent("a").Block("todo").Render(ctx); r != "[ ] x\n[ ] y" {
		t.Fatalf("todo = %q", r)
	}
	if err := dst.Agent("b").Shared("a", "notes").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " +b"}); err != nil {
		t.Fatalf("share not imported: %v", err)
	}
	cur, _ := dst.Agent("a").Archival().List(ctx, nil)
	if len(cur) != 1 || cur[0].Content != "new fact" {
		t.Fatalf("supersession not preserved: %+v", cur)
	}
	s, err := dst.Agent("a").Messages().LatestSummary(ctx)
	msgs, _ := dst.Agent("a").Messages().List(ctx, nil)
	if err != nil || s.FirstMessageID != msgs[0].ID || s.LastMessageID != msgs[2].ID {
		t.Fatalf("summary links: %+v %v", s, err)
	}
	// Importing again collides and changes nothing.
	if _, err := dst.Import(ctx, &back); !errors.Is(err, memory.ErrExists) {
		t.Fatalf("second import: %v", err)
	}
	if n, _ := dst.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true}); len(n) != 2 {
		t.Fatalf("failed import left %d archival entries", len(n))
	}
}

// sameDump fails t with every difference between two dumps, compared as
// their JSON (what a dump is on disk), field by field.
func sameDump(t *testing.T, want, got *memory.Dump) {
	t.Helper()
	tree := func(d *memory.Dump) any {
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	var diffs []string
	var walk func(path string, w, g any)
	walk = func(path string, w, g any) {
		switch wv := w.(type) {
		case map[string]any:
			gv, ok := g.(map[string]any)
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s: %v, want %v", path, g, w))
				return
			}
			keys := map[string]bool{}
			for k := range wv {
				keys[k] = true
			}
			for k := range gv {
				keys[k] = true
			}
			for _, k := range slices.Sorted(maps.Keys(keys)) {
				walk(path+"."+k, wv[k], gv[k])
			}
		case []any:
			gv, ok := g.([]any)
			if !ok || len(gv) != len(wv) {
				diffs = append(diffs, fmt.Sprintf("%s: %d elements, want %d", path, len(gv), len(wv)))
				return
			}
			for i := range wv {
				walk(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i])
			}
		default:
			if !reflect.DeepEqual(w, g) {
				diffs = append(diffs, fmt.Sprintf("%s: %v, want %v", path, g, w))
			}
		}
	}
	walk("dump", tree(want), tree(got))
	for _, d := range diffs {
		t.Errorf("re-exported dump differs: %s", d)
	}
}

// renumbered is a copy of d with archival, message and summary ids
// replaced by their positions in the dump (1, 2, ...) and the links between
// rows (SupersededBy, a summary's message range and PreviousID) mapped the
// same way. Import renumbers these ids by design (ImportReport's doc), so
// only their order and what links to what are the content; a link to a
// row the dump lacks becomes -1, which shows as a difference.
func renumbered(t *testing.T, d *memory.Dump) *memory.Dump {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var c memory.Dump
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	positions := func(ids []int64) map[int64]int64 {
		m := map[int64]int64{}
		for i, id := range ids {
			m[id] = int64(i + 1)
		}
		return m
	}
	link := func(m map[int64]int64, id int64) int64 {
		if id == 0 {
			return 0
		}
		if p, ok := m[id]; ok {
			return p
		}
		return -1
	}
	var ids []int64
	for _, a := range c.Archival {
		ids = append(ids, a.ID)
	}
	arch := positions(ids)
	for i := range c.Archival {
		c.Archival[i].ID = arch[c.Archival[i].ID]
		c.Archival[i].SupersededBy = link(arch, c.Archival[i].SupersededBy)
	}
	ids = ids[:0]
	for _, m := range c.Messages {
		ids = append(ids, m.ID)
	}
	msgs := positions(ids)
	for i := range c.Messages {
		c.Messages[i].ID = msgs[c.Messages[i].ID]
	}
	ids = ids[:0]
	for _, s := range c.Summaries {
		ids = append(ids, s.ID)
	}
	sums := positions(ids)
	for i := range c.Summaries {
		s := &c.Summaries[i]
		s.ID = sums[s.ID]
		s.FirstMessageID, s.LastMessageID = link(msgs, s.FirstMessageID), link(msgs, s.LastMessageID)
		s.PreviousID = link(sums, s.PreviousID)
	}
	return &c
}
