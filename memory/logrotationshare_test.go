package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// A full Log block with Retention and a read-only entry field rotates on
// an append by its owner and by a sharee, at Append and at ReadWrite: the
// rotation is the store's doing, not the appender's.
func TestLogRotationBySharee(t *testing.T) {
	ctx := context.Background()
	for _, perm := range []blocks.Permission{blocks.Append, blocks.ReadWrite} {
		t.Run(perm.String(), func(t *testing.T) {
			c := openFile(t, filepath.Join(t.TempDir(), "m.db"), nil)
			if _, err := c.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, CharLimit: 120, Permission: perm,
				Schema: schema.Log{Retention: 3, Entry: []schema.FieldDef{{Name: "level", Type: schema.FieldString, Default: "info", ReadOnly: true}}}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Agent("bob").Block("events").Share(ctx, "ada", perm); err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				who, owner := "ada", "bob"
				if i%2 == 0 {
					who, owner = "bob", "bob"
				}
				if err := c.Agent(who).Shared(owner, "events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry %02d with words", i)}); err != nil {
					t.Fatalf("append %d by %s: %v", i, who, err)
				}
			}
			r, err := c.Agent("bob").Block("events").Render(ctx)
			t.Logf("%q %v", r, err)
			d, _ := c.Agent("bob").Block("events").Doc(ctx)
			v, _ := d.Value()
			if err := blocks.CheckValue(d.Schema(), v); err != nil {
				t.Fatal(err)
			}
		})
	}
}
