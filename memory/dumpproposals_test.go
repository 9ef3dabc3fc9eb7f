package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// TestImportRefusesBrokenProposals: a dump edited by hand whose proposal
// has a status no decision knows, args that are not an Edit, an op its
// args contradict or no proposer used to be imported, after which the
// proposal could never be decided and ListProposals failed for every
// proposal of the owner. Import refuses such a dump and writes nothing.
func TestImportRefusesBrokenProposals(t *testing.T) {
	ctx := context.Background()
	src := openFile(t, filepath.Join(t.TempDir(), "src.db"), nil)
	if _, err := src.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Value: "I am ada", Permission: blocks.Partner}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Agent("ada").Block("persona").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "new"}, ""); err != nil {
		t.Fatal(err)
	}
	good, err := src.Export(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(good.Proposals) != 1 {
		t.Fatalf("dump has %d proposals, want 1", len(good.Proposals))
	}
	tests := []struct {
		name string
		edit func(p *memory.DumpProposal)
	}{
		{"unknown status", func(p *memory.DumpProposal) { p.Status = "weird" }},
		{"args not an edit", func(p *memory.DumpProposal) { p.Args = json.RawMessage(`{"op":"set_text","text":5}`) }},
		{"args not JSON", func(p *memory.DumpProposal) { p.Args = json.RawMessage(`nope`) }},
		{"op contradicts args", func(p *memory.DumpProposal) { p.Op = "delete" }},
		{"unknown op", func(p *memory.DumpProposal) {
			p.Op = "explode"
			p.Args = json.RawMessage(`{"op":"explode"}`)
		}},
		{"no proposer", func(p *memory.DumpProposal) { p.Proposer = " " }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := *good
			d.Proposals = []memory.DumpProposal{good.Proposals[0]}
			tt.edit(&d.Proposals[0])
			dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
			if _, err := dst.Import(ctx, &d); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Fatalf("Import = %v, want ErrInvalidArgument", err)
			}
			if ps, err := dst.Agent("ada").Proposals(ctx); err == nil && len(ps) != 0 {
				t.Fatalf("after a refused import: %d proposals", len(ps))
			}
		})
	}
	t.Run("the unedited dump", func(t *testing.T) {
		dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
		if _, err := dst.Import(ctx, good); err != nil {
			t.Fatal(err)
		}
		ps, err := dst.Agent("ada").Proposals(ctx)
		if err != nil || len(ps) != 1 || ps[0].Edit.Text != "new" {
			t.Fatalf("ListProposals = %+v, %v", ps, err)
		}
	})
}

// A dump's messages and archival entries were inserted unchecked: a
// message role no provider takes ("wizard" went out as the role of an
// OpenAI request), or rows of agent "".
// Import checks them as AppendMessage and InsertArchival do.
func TestImportRefusesBrokenRows(t *testing.T) {
	ctx := context.Background()
	good := memory.Message{ID: 1, Agent: "ada", Role: memory.RoleUser, Content: "hi", BatchID: "b1", Seq: 1}
	for _, tc := range []struct {
		name string
		d    memory.Dump
	}{
		{"unknown role", memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{func() memory.Message {
			m := good
			m.Role = "wizard"
			return m
		}()}}},
		{"message of no agent", memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{func() memory.Message {
			m := good
			m.Agent = ""
			return m
		}()}}},
		{"archival of no agent", memory.Dump{Version: memory.DumpVersion, Archival: []memory.ArchivalEntry{{ID: 1, Content: "x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
			if _, err := dst.Import(ctx, &tc.d); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Fatalf("Import = %v, want ErrInvalidArgument", err)
			}
		})
	}
	dst := openFile(t, filepath.Join(t.TempDir(), "dst.db"), nil)
	if _, err := dst.Import(ctx, &memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{good}}); err != nil {
		t.Fatal(err)
	}
}
