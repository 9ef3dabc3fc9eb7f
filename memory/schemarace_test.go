package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// Another store's write that lands between UpdateBlockSchema's content
// check and its UPDATE must not leave the block with content its new
// schema refuses, nor the stored rendering behind the document. Before,
// the UPDATE was unconditional: the schema (max_items 2) was stored over
// three items, and Import refused the store's own Export.
func TestUpdateBlockSchemaMeetsAnotherStoresWrite(t *testing.T) {
	runUpdateBlockSchemaMeetsAnotherStoresWrite(t, filepath.Join(t.TempDir(), "m.db"))
}

func TestUpdateBlockSchemaMeetsAnotherStoresWritePostgres(t *testing.T) {
	runUpdateBlockSchemaMeetsAnotherStoresWrite(t, pgtest.Start(t).NewDatabase(t))
}

func runUpdateBlockSchemaMeetsAnotherStoresWrite(t *testing.T, path string) {
	ctx := context.Background()
	var armed atomic.Bool
	var b *memory.Store
	var bErr error
	now := func() time.Time {
		if armed.CompareAndSwap(true, false) {
			bErr = b.Agent("ada").Block("l").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: int64(3)})
		}
		return time.Now()
	}
	a := openFile(t, path, &memory.Options{Now: now})
	b = openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "l", Schema: schema.List{Item: schema.FieldInteger}, Permission: blocks.Admin,
		Value: []any{int64(1), int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Agent("ada").Block("l").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	err := a.Agent("ada").Block("l").SetSchema(ctx, schema.List{Item: schema.FieldInteger, MaxItems: 2})
	t.Logf("schema change: %v; other store's push: %v", err, bErr)
	if !errors.Is(err, schema.ErrInvalid) {
		t.Errorf("schema change over content it breaks: %v, want ErrInvalid", err)
	}
	if armed.Load() {
		t.Fatal("the other store's write did not run")
	}
	c := openFile(t, path, nil)
	d, gerr := c.Agent("ada").Block("l").Doc(ctx)
	if gerr != nil {
		t.Fatalf("reopen: %v", gerr)
	}
	if r, err := c.Agent("ada").Block("l").Render(ctx); err != nil || r != d.Render() {
		t.Fatalf("stored rendering %q (%v), document renders %q", r, err, d.Render())
	}
	v, _ := d.Value()
	if err := blocks.CheckValue(d.Schema(), v); err != nil {
		t.Fatalf("the block holds %v, which its schema %v refuses: %v (schema change err %v, push err %v)", v, d.Schema(), err, err, bErr)
	}
	dump, err := c.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil).Import(ctx, dump); err != nil {
		t.Fatalf("import of the export: %v", err)
	}
}

// Another store's cached block follows a schema change: its view shows the
// new schema, and its next write is judged under it.
func TestSchemaChangeReachesAnotherStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	a, b := openFile(t, path, nil), openFile(t, path, nil)
	if _, err := a.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "l", Schema: schema.List{Item: schema.FieldInteger}, Permission: blocks.Admin,
		Value: []any{int64(1), int64(2)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Agent("ada").Block("l").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("ada").Block("l").SetSchema(ctx, schema.List{Item: schema.FieldInteger, MaxItems: 2}); err != nil {
		t.Fatal(err)
	}
	// A stale write first (applied ahead on the cached document, under the
	// old schema), then the view.
	if err := b.Agent("ada").Block("l").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: int64(3)}); err == nil {
		t.Fatal("a stale write put a third item past max_items 2")
	}
	d, err := b.Agent("ada").Block("l").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := d.Schema().(schema.List); !ok || l.MaxItems != 2 {
		t.Fatalf("the other store sees schema %v", d.Schema())
	}
	if err := b.Agent("ada").Block("l").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: int64(3)}); err == nil {
		t.Fatal("a third item came in past max_items 2")
	}
}
