package memory_test

import (
	"context"
	"errors"
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
}

func (b *countingBackend) Prepare(ctx context.Context, queries ...string) error {
	b.calls.Add(1)
	if b.fail.Load() {
		return errors.New("prepare refused by the test")
	}
	return b.Backend.Prepare(ctx, queries...)
}

// TestWriteStatementsParsedAtFirstWrite: a store parses its write
// statements before its first write, not as it opens (a process that
// only reads never pays for them), once; a parse that fails leaves the
// write to run unparsed statements and the next write to try again.
func TestWriteStatementsParsedAtFirstWrite(t *testing.T) {
	ctx := context.Background()
	sb, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "engram.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	be := &countingBackend{Backend: sb}
	st, err := memory.New(ctx, be, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Agent("ada").Blocks(ctx); err != nil {
		t.Fatal(err)
	}
	if n := be.calls.Load(); n != 0 {
		t.Fatalf("open and a read parsed write statements %d times, want none", n)
	}
	be.fail.Store(true)
	if _, err := st.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes"}); err != nil {
		t.Fatalf("a write whose statements failed to parse: %v", err)
	}
	if n := be.calls.Load(); n != 1 {
		t.Fatalf("the first write parsed %d times, want 1", n)
	}
	be.fail.Store(false)
	for i := range 3 {
		if err := st.Agent("ada").Block("notes").Append(ctx, "line\n"); err != nil {
			t.Fatal(err)
		}
		if n := be.calls.Load(); n != 2 {
			t.Fatalf("after %d writes past the failed parse: %d parses, want 2 (the failure tried again once, then kept)", i+1, n)
		}
	}
	text, err := st.Agent("ada").Block("notes").Render(ctx)
	if err != nil || text != "line\nline\nline\n" {
		t.Fatalf("block text %q, %v", text, err)
	}
}
