package memory_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// A reconfigure that meets another store's write while its own block has
// write-back edits pending retries without losing either: after Flush the
// block holds both appends, its stored rendering matches, and it is pinned.
func TestReconfigureRetryKeepsPendingWriteBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	var armed atomic.Bool
	var b *memory.Cache
	var bErr error
	now := func() time.Time {
		if armed.CompareAndSwap(true, false) {
			bErr = b.Agent("ada").Block("t").Append(ctx, " +b")
		}
		return time.Now()
	}
	a := openFile(t, path, &memory.Options{Now: now, WriteBack: true})
	b = openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "t", Value: "hello", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("ada").Block("t").Persist(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("ada").Block("t").Append(ctx, " +a"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err := a.Agent("ada").Block("t").SetPinned(ctx, true)
	t.Logf("pin: %v, b: %v, armed %v", err, bErr, armed.Load())
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c := openFile(t, path, nil)
	d, err := c.Agent("ada").Block("t").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.Agent("ada").Block("t").Render(ctx)
	t.Logf("doc %q rendered %q pinned %v", d.Render(), r, d.Info().Pinned)
	if !strings.Contains(d.Render(), "+a") || !strings.Contains(d.Render(), "+b") || r != d.Render() {
		t.Fatalf("lost: doc %q rendered %q", d.Render(), r)
	}
}
