package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
)

// countingBackend is a SQLite backend whose Prepare is counted and can
// be made to fail.
type countingBackend struct {
	*sqlite.Backend
	calls atomic.Int64
	fail  atomic.Bool
	// cancel, when set, is called by Prepare, which then answers its
	// context's error (a write whose context ended while it waited).
	cancel func()
}

func (b *countingBackend) Prepare(ctx context.Context, queries ...string) error {
	b.calls.Add(1)
	if b.cancel != nil {
		b.cancel()
		return ctx.Err()
	}
	if b.fail.Load() {
		return errors.New("prepare refused by the test")
	}
	return b.Backend.Prepare(ctx, queries...)
}

// TestWriteStatementsParsedAtFirstWrite: a store parses its write
// statements before its first write, not as it opens (a process that
// only reads never pays for them), once. A parse whose context ended is
// tried again by the next write; one that failed otherwise is not tried
// again for a while, and the writes meanwhile run their statements
// unparsed.
func TestWriteStatementsParsedAtFirstWrite(t *testing.T) {
	ctx := context.Background()
	open := func() (*countingBackend, *memory.Store) {
		sb, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "engram.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		be := &countingBackend{Backend: sb}
		st, err := memory.New(ctx, be, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return be, st
	}
	calls := func(be *countingBackend, want int64, step string) {
		t.Helper()
		if n := be.calls.Load(); n != want {
			t.Fatalf("%s: %d parses, want %d", step, n, want)
		}
	}

	be, st := open()
	if _, err := st.Agent("ada").Blocks(ctx); err != nil {
		t.Fatal(err)
	}
	calls(be, 0, "open and a read")
	wctx, cancel := context.WithCancel(ctx)
	be.cancel = cancel
	if _, err := st.Agent("ada").CreateBlock(wctx, memory.BlockSpec{Label: "notes"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose context ended while its statements were parsed: %v, want context.Canceled", err)
	}
	calls(be, 1, "the first write")
	be.cancel = nil
	for i := range 3 {
		if i == 0 {
			if _, err := st.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes"}); err != nil {
				t.Fatal(err)
			}
		} else if err := st.Agent("ada").Block("notes").Append(ctx, "line\n"); err != nil {
			t.Fatal(err)
		}
		calls(be, 2, fmt.Sprintf("%d writes after one whose context ended", i+1))
	}

	be, st = open()
	be.fail.Store(true)
	if _, err := st.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes"}); err != nil {
		t.Fatalf("a write whose statements failed to parse: %v", err)
	}
	be.fail.Store(false)
	for range 3 {
		if err := st.Agent("ada").Block("notes").Append(ctx, "line\n"); err != nil {
			t.Fatal(err)
		}
	}
	calls(be, 1, "writes after a failed parse")
	text, err := st.Agent("ada").Block("notes").Render(ctx)
	if err != nil || text != "line\nline\nline\n" {
		t.Fatalf("block text %q, %v", text, err)
	}
}
