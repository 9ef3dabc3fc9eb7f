package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// A block created at the default permission (ReadWrite) cannot be
// deleted or reconfigured by its owner agent; the system can, through
// Admin, and granting Admin there hands those rights to the agent.
func TestAdminActsAsSystemOnBlocks(t *testing.T) {
	testAdminActsAsSystemOnBlocks(t, filepath.Join(t.TempDir(), "adminblocks.db"))
}

func TestAdminActsAsSystemOnBlocksPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("PostgreSQL: not in -short")
	}
	testAdminActsAsSystemOnBlocks(t, pgtest.Start(t).NewDatabase(t))
}

func testAdminActsAsSystemOnBlocks(t *testing.T, target string) {
	ctx := context.Background()
	c := openFile(t, target, nil)
	ada := c.Agent("ada")
	for _, label := range []string{"notes", "plan"} {
		if _, err := ada.CreateBlock(ctx, memory.BlockSpec{Label: label}); err != nil {
			t.Fatal(err)
		}
		if err := ada.Block(label).Append(ctx, "kept\n"); err != nil {
			t.Fatal(err)
		}
	}
	if err := ada.Block("notes").Delete(ctx); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("owner at ReadWrite deletes: %v, want ErrPermission", err)
	}
	if err := ada.Block("notes").SetPermission(ctx, blocks.Admin); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("owner at ReadWrite raises itself: %v, want ErrPermission", err)
	}

	adm := c.Admin()
	for _, tc := range []struct {
		name         string
		owner, label string
		perm         blocks.Permission
		want         error
	}{
		{"unknown block", "ada", "nothing", blocks.Admin, memory.ErrNotFound},
		{"unknown owner", "nobody", "notes", blocks.Admin, memory.ErrNotFound},
		{"empty owner", " ", "notes", blocks.Admin, memory.ErrInvalidArgument},
		{"empty label", "ada", "", blocks.Admin, memory.ErrInvalidArgument},
		{"invalid permission", "ada", "notes", blocks.Permission(99), memory.ErrInvalidArgument},
	} {
		if err := adm.SetBlockPermission(ctx, tc.owner, tc.label, tc.perm); !errors.Is(err, tc.want) {
			t.Errorf("SetBlockPermission %s: %v, want %v", tc.name, err, tc.want)
		}
		if tc.perm.Valid() {
			if err := adm.DeleteBlock(ctx, tc.owner, tc.label); !errors.Is(err, tc.want) {
				t.Errorf("DeleteBlock %s: %v, want %v", tc.name, err, tc.want)
			}
		}
	}

	// Granted Admin by the system, the owner may reconfigure and delete.
	if err := adm.SetBlockPermission(ctx, "ada", "plan", blocks.Admin); err != nil {
		t.Fatal(err)
	}
	if err := ada.Block("plan").SetType(ctx, blocks.Working); err != nil {
		t.Fatalf("owner at Admin changes the type: %v", err)
	}
	if err := ada.Block("plan").Delete(ctx); err != nil {
		t.Fatalf("owner at Admin deletes: %v", err)
	}

	// The system deletes a ReadWrite block outright.
	if err := adm.DeleteBlock(ctx, "ada", "notes"); err != nil {
		t.Fatal(err)
	}
	if _, err := ada.Block("notes").Render(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("deleted block read: %v, want ErrNotFound", err)
	}
	if err := adm.DeleteBlock(ctx, "ada", "notes"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
	metas, err := ada.Blocks(ctx)
	if err != nil || len(metas) != 0 {
		t.Errorf("blocks left: %v, %v", metas, err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := adm.DeleteBlock(cancelled, "ada", "plan"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
