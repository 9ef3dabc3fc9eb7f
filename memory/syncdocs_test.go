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

// Document ids (engram serve's /sync) on both engines: random, stable
// across calls and stores on one database, the same for every reader of a
// block, new after a rebase, and unavailable alike for a missing id, an
// earlier epoch's id, a deleted block's id and a block the agent may not
// read.
func TestDocumentIDs(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			target := filepath.Join(t.TempDir(), "docs.db")
			if engine == "postgres" {
				target = pgtest.Start(t).NewDatabase(t)
			}
			open := func() *memory.Store {
				c, err := memory.Open(ctx, fresh(target), nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			a, b := open(), open()
			for _, label := range []string{"notes", "private", "gone"} {
				if _, err := a.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: label, Value: label + "\n", Permission: blocks.Admin}); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Agent("alice").Block("notes").Share(ctx, "bob", blocks.ReadOnly); err != nil {
				t.Fatal(err)
			}
			id, err := a.Agent("alice").Block("notes").DocumentID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if id == (memory.DocumentID{}) {
				t.Fatal("zero document id")
			}
			for _, tc := range []struct {
				name         string
				c            *memory.Store
				agent, owner string
			}{{"again", a, "alice", "alice"}, {"other store", b, "alice", "alice"}, {"reader", b, "bob", "alice"}} {
				got, err := tc.c.Agent(tc.agent).Shared(tc.owner, "notes").DocumentID(ctx)
				if err != nil || got != id {
					t.Errorf("%s: %x, %v; want %x", tc.name, got, err, id)
				}
				if blk, err := tc.c.Agent(tc.agent).DocumentBlock(ctx, id); err != nil || blk.Owner() != "alice" || blk.Label() != "notes" {
					t.Errorf("%s: DocumentBlock = %v %v", tc.name, blk, err)
				}
			}
			if _, err := b.Agent("bob").Shared("alice", "private").DocumentID(ctx); err == nil {
				t.Error("bob got the id of a block not shared with him")
			}
			private, err := a.Agent("alice").Block("private").DocumentID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if private == id {
				t.Fatal("two blocks share a document id")
			}
			gone, err := a.Agent("alice").Block("gone").DocumentID(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Agent("alice").Block("gone").Delete(ctx); err != nil {
				t.Fatal(err)
			}
			old := id
			if err := a.Agent("alice").Block("notes").Rebase(ctx); err != nil {
				t.Fatal(err)
			}
			id2, err := b.Agent("alice").Block("notes").DocumentID(ctx)
			if err != nil || id2 == old {
				t.Fatalf("after a rebase: %x, %v (was %x)", id2, err, old)
			}
			for _, tc := range []struct {
				name  string
				agent string
				id    memory.DocumentID
			}{
				{"missing", "alice", memory.DocumentID{1, 2, 3}},
				{"earlier epoch", "alice", old},
				{"deleted block", "alice", gone},
				{"not shared", "bob", private},
			} {
				_, err := b.Agent(tc.agent).DocumentBlock(ctx, tc.id)
				if !errors.Is(err, memory.ErrNotFound) {
					t.Errorf("%s: %v, want ErrNotFound", tc.name, err)
				}
			}
		})
	}
}
