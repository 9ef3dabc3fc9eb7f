package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Type: blocks.Core}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("notes").Append(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("notes").Append(ctx, " world"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r, err := c2.Agent("a").Block("notes").Render(ctx)
	if err != nil || r != "hello world" {
		t.Fatalf("rendered %q %v", r, err)
	}
	d, err := c2.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Text(); got != "hello world" {
		t.Fatalf("doc %q", got)
	}
	res, err := c2.Agent("a").Search(ctx, "world", nil)
	if err != nil || len(res) != 1 {
		t.Fatalf("search %v %v", res, err)
	}
}
