package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// peerEditChanges returns the changes a peer that loaded doc makes by edit,
// as change chunks (what a sync message carries), or as the peer's whole
// saved document when whole is set.
func peerEditChanges(t *testing.T, doc *blocks.Document, whole bool, edit func(root *automerge.Map) error) []byte {
	t.Helper()
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	heads := peer.Heads()
	if err := edit(peer.RootMap()); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Commit(""); err != nil {
		t.Fatal(err)
	}
	if whole {
		return peer.Save()
	}
	chs, err := peer.Changes(heads...)
	if err != nil {
		t.Fatal(err)
	}
	return automerge.SaveChanges(chs)
}

// A merge that asks far more of a block than its character limit allows
// (a change inserting hundreds of thousands of characters, items or keys
// into a block of 5,000) is refused from the size of the changes before
// automerge applies them: in milliseconds, wrapping blocks.ErrLimit, the
// block unchanged. What fits the limit still merges, and so does a whole
// saved document that brings the block's own history with it.
func TestMergeRefusedBeforeApplyingWhenTooCostly(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
	text, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "text", Value: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "list", Schema: schema.List{Item: schema.FieldString}})
	if err != nil {
		t.Fatal(err)
	}
	fields, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "map", Schema: schema.Map{Fields: []schema.FieldDef{{Name: "a", Type: schema.FieldString}}}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300_000
	for _, tc := range []struct {
		name  string
		label string
		doc   *blocks.Document
		whole bool
		edit  func(r *automerge.Map) error
	}{
		{"300,000 characters", "text", text, false, func(r *automerge.Map) error {
			return subText(r, "content").Append(strings.Repeat("x", n))
		}},
		{"300,000 characters in a whole document", "text", text, true, func(r *automerge.Map) error {
			return subText(r, "content").Append(strings.Repeat("x", n))
		}},
		{"100,000 list items", "list", list, false, func(r *automerge.Map) error {
			l := subList(r, "items")
			for i := range n / 30 {
				if err := l.Append("a", "b", "c", "d", "e", "f", "g", "h", "i", fmt.Sprint(i)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"100,000 map keys", "map", fields, false, func(r *automerge.Map) error {
			for i := range n / 3 {
				if err := r.Set(fmt.Sprintf("k%d", i), int64(i)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"a scalar string of 4 MB", "map", fields, false, func(r *automerge.Map) error {
			return sub(r, "fields").Set("a", strings.Repeat("y", 4<<20))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := peerEditChanges(t, tc.doc, tc.whole, tc.edit)
			before := tc.doc.Render()
			start := time.Now()
			err := c.Agent("ada").Shared("ada", tc.label).Merge(ctx, data)
			took := time.Since(start)
			if !errors.Is(err, blocks.ErrLimit) || !strings.Contains(err.Error(), "nothing was applied") {
				t.Fatalf("merge: err = %v, want ErrLimit before applying", err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("refusing %d bytes of changes took %v", len(data), took)
			}
			if got := tc.doc.Render(); got != before {
				t.Errorf("refused merge changed the block: %q", got)
			}
		})
	}
	t.Run("a full rewrite fits", func(t *testing.T) {
		full := strings.Repeat("z", blocks.DefaultCharLimit)
		data := peerEditChanges(t, text, false, func(r *automerge.Map) error {
			tx := subText(r, "content")
			return tx.Splice(0, tx.Len(), full)
		})
		if err := c.Agent("ada").Shared("ada", "text").Merge(ctx, data); err != nil {
			t.Fatal(err)
		}
		data = peerEditChanges(t, text, true, func(r *automerge.Map) error {
			tx := subText(r, "content")
			return tx.Splice(0, tx.Len(), strings.Repeat("w", blocks.DefaultCharLimit))
		})
		if err := c.Agent("ada").Shared("ada", "text").Merge(ctx, data); err != nil {
			t.Fatalf("whole document: %v", err)
		}
	})
	t.Run("nesting as deep as the budget allows", func(t *testing.T) {
		depth := int(blocks.MergeLimits(blocks.DefaultCharLimit).Ops) - 10
		data := peerEditChanges(t, fields, false, func(r *automerge.Map) error {
			m := r
			for range depth {
				if err := m.Set("n", automerge.NewMap()); err != nil {
					return err
				}
				v, err := m.Get("n")
				if err != nil {
					return err
				}
				m = v.Map()
			}
			return nil
		})
		start := time.Now()
		err := c.Agent("ada").Shared("ada", "map").Merge(ctx, data)
		if err == nil {
			t.Fatal("a root key the schema does not lay out was merged")
		}
		t.Logf("%d nested maps refused in %v: %v", depth, time.Since(start), err)
	})
}

// Many small changes in one merge (1,000 one-character appends, each
// building on the last, as a peer that commits per keystroke sends them)
// cost what their operations cost: a fraction of a second, not seconds and
// gigabytes.
func TestMergeOfManySmallChangesIsCheap(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
	doc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "text", Value: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := doc.Save()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := automerge.Load(saved)
	if err != nil {
		t.Fatal(err)
	}
	heads := peer.Heads()
	content := subText(peer.RootMap(), "content")
	for range 1000 {
		if err := content.Append("x"); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Commit(""); err != nil {
			t.Fatal(err)
		}
	}
	chs, err := peer.Changes(heads...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.Agent("ada").Shared("ada", "text").Merge(ctx, automerge.SaveChanges(chs)); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("merging 1,000 one-character changes took %v", took)
	}
	if got := doc.Render(); got != "hello"+strings.Repeat("x", 1000) {
		t.Errorf("merged %q", got)
	}
}

// selfCost is the CPU time and peak resident set of this process.
func selfCost(t *testing.T) (time.Duration, int64) {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss << 10
}

// A merge of n small changes read together (a peer's offline edits, each
// committed on its own; or a whole saved document, whose every change,
// the block's whole history included, is applied again) passes them all
// to automerge-go's Doc.Apply, which copies for each change the whole
// result it was read with: memory grows with n³ though the changes measure
// far under the block's limits. The same edits through the Go API cost
// kilobytes.
func TestMergeChangesOfManySmallChangesCost(t *testing.T) {
	const n = 500
	ctx := context.Background()
	for _, whole := range []bool{false, true} {
		name := "change chunks"
		if whole {
			name = "saved document"
		}
		t.Run(name, func(t *testing.T) {
			c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
			doc, err := c.CreateBlock(ctx, "ada", memory.BlockSpec{Label: "notes", Value: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			saved, err := doc.Save()
			if err != nil {
				t.Fatal(err)
			}
			peer, err := automerge.Load(saved)
			if err != nil {
				t.Fatal(err)
			}
			heads := peer.Heads()
			text := peer.Path("content").Text()
			for range n {
				if err := text.Append("x"); err != nil {
					t.Fatal(err)
				}
				if _, err := peer.Commit(""); err != nil {
					t.Fatal(err)
				}
			}
			data := peer.Save()
			if !whole {
				chs, err := peer.Changes(heads...)
				if err != nil {
					t.Fatal(err)
				}
				data = automerge.SaveChanges(chs)
			}
			cpu0, hwm0 := selfCost(t)
			err = c.MergeChanges(ctx, "ada", "", "notes", data)
			cpu1, hwm1 := selfCost(t)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.GetBlock(ctx, "ada", "notes")
			if err != nil {
				t.Fatal(err)
			}
			if s, _ := got.Text(); s != "hello"+strings.Repeat("x", n) {
				t.Fatalf("merged text %q", s)
			}
			t.Logf("%d bytes, %d changes of one character: %v CPU, peak RSS +%d MiB", len(data), n, cpu1-cpu0, (hwm1-hwm0)>>20)
			if cpu1-cpu0 > 2*time.Second || hwm1-hwm0 > 256<<20 {
				t.Errorf("merging %d one-character changes (%d bytes) cost %v of CPU and %d MiB of peak RSS (at most 2 s, 256 MiB)", n, len(data), cpu1-cpu0, (hwm1-hwm0)>>20)
			}
		})
	}
}
