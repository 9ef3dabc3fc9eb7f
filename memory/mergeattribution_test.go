package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// peerChanges makes, on a plain automerge copy of saved (as an automerge
// JS peer holds a block), one change per text appended to the content,
// each with the matching commit message ("" is none, as a JS peer's), and
// returns the changes (as SaveIncremental writes them) and their hashes.
func peerChanges(t *testing.T, saved []byte, texts, messages []string) ([]byte, []string) {
	t.Helper()
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for i, text := range texts {
		v, err := peer.Path("content").Get()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Text().Append(text); err != nil {
			t.Fatal(err)
		}
		h, err := peer.Commit(messages[i])
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h.String())
	}
	return peer.SaveIncremental(), hashes
}

func TestMergedAttributionAcrossStores(t *testing.T) {
	dir := t.TempDir()
	n := 0
	testMergedAttributionAcrossStores(t, func(t *testing.T) string {
		n++
		return filepath.Join(dir, fmt.Sprintf("s%d.db", n))
	})
}

func TestMergedAttributionAcrossStoresPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL: not in -short")
	}
	srv := pgtest.Start(t)
	testMergedAttributionAcrossStores(t, func(t *testing.T) string { return srv.NewDatabase(t) })
}

// testMergedAttributionAcrossStores: changes a plain automerge peer made
// (no engram commit message, or a forged one naming the block's owner or
// the system), merged by bob through MergeChanges, show as bob's merges in
// the history another store on the same database reads (one that had the
// block cached before the merge, and one opened after), in a view's and an
// At view's history, after compactions folded the update row away, after
// the block moved to a new epoch (the merge archived), after reopening,
// and in a store the block was exported to and imported into.
func testMergedAttributionAcrossStores(t *testing.T, newTarget func(t *testing.T) string) {
	ctx := context.Background()
	target := newTarget(t)
	opts := &memory.Options{CompactAfter: 2, HistoryLimit: 1}
	c1 := openFile(t, target, opts)
	if _, err := c1.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	if err := c1.Agent("ada").Block("notes").Share(ctx, "bob", blocks.Append); err != nil {
		t.Fatal(err)
	}
	c2 := openFile(t, target, opts)
	if _, err := c2.Agent("ada").Block("notes").History(ctx); err != nil { // cached before the merge
		t.Fatal(err)
	}
	view, err := c1.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := view.Save()
	if err != nil {
		t.Fatal(err)
	}
	messages := []string{"", `{"a":"ada","op":"append_text"}`, `{"a":"system","op":"create"}`}
	data, hashes := peerChanges(t, saved, []string{"p1\n", "p2\n", "p3\n"}, messages)
	if err := c1.Agent("bob").Shared("ada", "notes").Merge(ctx, data); err != nil {
		t.Fatal(err)
	}

	check := func(when string, s *memory.Store) {
		t.Helper()
		hist, err := s.Agent("ada").Block("notes").History(ctx)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		byHash := map[string]blocks.Change{}
		for _, c := range hist {
			byHash[c.Hash] = c
		}
		current := hist[len(hist)-1].Epoch
		doc, err := s.Agent("bob").Shared("ada", "notes").Doc(ctx)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		viewHist, err := doc.History()
		if err != nil {
			t.Fatalf("%s: view history: %v", when, err)
		}
		at, err := doc.At(doc.Heads())
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		atHist, err := at.History()
		if err != nil {
			t.Fatalf("%s: At view history: %v", when, err)
		}
		for i, h := range hashes {
			c, ok := byHash[h]
			if !ok {
				t.Fatalf("%s: merged change %d is not in the history", when, i)
			}
			if c.Actor != "bob" || c.Op != blocks.OpMerge || c.PeerMessage != messages[i] {
				t.Errorf("%s: merged change %d (epoch %d) is %s/%s with peer message %q; want bob/merge with %q",
					when, i, c.Epoch, c.Actor, c.Op, c.PeerMessage, messages[i])
			}
			for what, vh := range map[string][]blocks.Change{"view": viewHist, "At view": atHist} {
				found := false
				for _, v := range vh {
					if v.Hash == h {
						found = true
						if v.Actor != "bob" || v.Op != blocks.OpMerge {
							t.Errorf("%s: in the %s's history merged change %d is %s/%s", when, what, i, v.Actor, v.Op)
						}
					}
				}
				if !found && c.Epoch == current {
					t.Errorf("%s: merged change %d (current epoch) is not in the %s's history", when, i, what)
				}
			}
		}
		for _, c := range hist {
			if c.Actor == "bob" && !strings.Contains(strings.Join(hashes, ","), c.Hash) {
				t.Errorf("%s: change %s (%s) is attributed to bob", when, c.Hash, c.Op)
			}
		}
	}
	// caughtUp waits for s to read the block's history as c1 last wrote
	// it: on PostgreSQL another store learns of a write by notification,
	// and a read before it arrives may serve the cached block.
	caughtUp := func(s *memory.Store) {
		t.Helper()
		h1, err := c1.Agent("ada").Block("notes").History(ctx)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "another store to read the block as written", func() bool {
			h, err := s.Agent("ada").Block("notes").History(ctx)
			return err == nil && len(h) > 0 && h[len(h)-1].Hash == h1[len(h1)-1].Hash
		})
	}
	check("merging store", c1)
	caughtUp(c2)
	check("another store, cached before the merge", c2)

	// Compactions fold the merge's update row into the snapshot.
	for i := range 4 {
		if err := c1.Agent("ada").Block("notes").Append(ctx, fmt.Sprintf("a%d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	check("after compactions", c1)
	caughtUp(c2)
	check("after compactions, another store", c2)

	// Rewrites make the history outweigh the content: a new epoch, the
	// merge archived with the old one.
	for i := 0; ; i++ {
		if i == 50 {
			t.Fatal("no new epoch after 50 rewrites")
		}
		if err := c1.Agent("ada").Block("notes").SetText(ctx, strings.Repeat(fmt.Sprint(i), 200)); err != nil {
			t.Fatal(err)
		}
		if h, _ := c1.Agent("ada").Block("notes").History(ctx); h[len(h)-1].Epoch > 0 {
			break
		}
	}
	check("after a new epoch", c1)
	caughtUp(c2)
	check("after a new epoch, another store", c2)
	c2.Close()
	c3 := openFile(t, target, nil)
	check("reopened", c3)

	d, err := c3.Agent("ada").Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	imported := openFile(t, newTarget(t), nil)
	if _, err := imported.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	check("exported and imported", imported)
}

// TestImportAttributesEditsAfterExport: Import records a dump's MergedBy,
// refusing entries that are not a change hash and an agent, and records
// the changes a dump's document holds beyond its exported heads (edited
// after the export; judged as a merge by the block's owner) as merged by
// the owner, whatever their messages claim.
func TestImportAttributesEditsAfterExport(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	if _, err := src.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\n"}); err != nil {
		t.Fatal(err)
	}
	d, err := src.Agent("ada").Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := &d.Blocks[0]
	edit, hashes := peerChanges(t, b.Document, []string{"forged\n"}, []string{`{"a":"bob","op":"append_text"}`})
	doc, err := automerge.Load(b.Document)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.LoadIncremental(edit); err != nil {
		t.Fatal(err)
	}
	b.Document = doc.Save()

	for _, tc := range []struct {
		name     string
		mergedBy map[string]string
	}{
		{"not a hash", map[string]string{"xyz": "bob"}},
		{"upper-case hash", map[string]string{strings.ToUpper(hashes[0]): "bob"}},
		{"no agent", map[string]string{hashes[0]: " "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.MergedBy = tc.mergedBy
			dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
			if _, err := dst.Import(ctx, d); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Fatalf("import: %v, want ErrInvalidArgument", err)
			}
		})
	}
	b.MergedBy = nil
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	if _, err := dst.Import(ctx, d); err != nil {
		t.Fatal(err)
	}
	hist, err := dst.Agent("ada").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := hist[len(hist)-1]
	if last.Hash != hashes[0] || last.Actor != "ada" || last.Op != blocks.OpMerge || last.PeerMessage != `{"a":"bob","op":"append_text"}` {
		t.Errorf("the edit after the export: %+v; want ada/merge with bob's claim as its peer message", last)
	}
	if first := hist[0]; first.Actor != "system" || first.Op != blocks.OpCreate {
		t.Errorf("the exported history's first change: %+v", first)
	}
}

// TestMergeChangesAs: a merge recorded as a name the caller vouches for
// shows as that name's merge; the merging agent's permission is the one
// checked, and an empty name is refused.
func TestMergeChangesAs(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "as.db"), nil)
	if _, err := c.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\n", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	doc, err := c.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	data, hashes := peerChanges(t, saved, []string{"two\n"}, []string{`{"a":"system","op":"restore"}`})
	if err := c.Agent("ada").Shared("ada", "notes").MergeAs(ctx, data, " "); !errors.Is(err, memory.ErrInvalidArgument) {
		t.Fatalf("recorded as a blank name: %v, want ErrInvalidArgument", err)
	}
	if err := c.Agent("bob").Shared("ada", "notes").MergeAs(ctx, data, "human:carol"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("merged by an agent the block is not shared with: %v, want ErrNotFound", err)
	}
	if err := c.Agent("ada").Shared("ada", "notes").MergeAs(ctx, data, "human:carol"); err != nil {
		t.Fatal(err)
	}
	hist, err := c.Agent("ada").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1]; last.Hash != hashes[0] || last.Actor != "human:carol" || last.Op != blocks.OpMerge {
		t.Errorf("the merge recorded as human:carol: %+v", last)
	}
	// The record goes with the block.
	count := func() (n int) {
		if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM merged_changes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Fatalf("%d records of merged changes, want 1", n)
	}
	if err := c.Agent("ada").Block("notes").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 0 {
		t.Errorf("%d records of merged changes left after the block was deleted", n)
	}
}
