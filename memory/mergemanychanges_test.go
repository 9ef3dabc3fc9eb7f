package memory_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/memory"
)

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
			doc, err := createBlockDoc(ctx, c.Agent("ada"), memory.BlockSpec{Label: "notes", Value: "hello"})
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
			err = c.Agent("ada").Block("notes").Merge(ctx, data)
			cpu1, hwm1 := selfCost(t)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Agent("ada").Block("notes").Doc(ctx)
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
