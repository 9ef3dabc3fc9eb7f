package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// agentStore opens a throw-away store with a fixed clock, so two stores
// given the same calls hold the same ids and times, and seeds it: ada owns
// notes (Text), todo (Core) and partner (Partner: writes become
// proposals); bob owns a block shared with ada at each of Append,
// ReadOnly and ReadWrite, and a private one; ada has archival entries, a
// batch of messages and a summary.
func agentStore(t *testing.T) *memory.Store { return agentStoreWith(t, nil) }

// agentStoreWith is agentStore with an embedder (nil: none).
func agentStoreWith(t *testing.T, emb search.Embedder) *memory.Store {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// A file (a copy of the migrated template), not ":memory:", which
	// would migrate from nothing for every case.
	c, err := memory.Open(ctx, fresh(filepath.Join(t.TempDir(), "agents.db")), &memory.Options{Now: func() time.Time { return at }, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []struct {
		owner string
		spec  memory.BlockSpec
	}{
		{"ada", memory.BlockSpec{Label: "notes", Value: "hello world"}},
		{"ada", memory.BlockSpec{Label: "todo", Type: blocks.Core, Value: "buy milk"}},
		{"ada", memory.BlockSpec{Label: "partner", Permission: blocks.Partner, Value: "agreed plan"}},
		{"bob", memory.BlockSpec{Label: "log", Value: "bob's log"}},
		{"bob", memory.BlockSpec{Label: "facts", Value: "bob's facts"}},
		{"bob", memory.BlockSpec{Label: "draft", Value: "bob's draft"}},
		{"bob", memory.BlockSpec{Label: "secret", Value: "bob's zanzibar secret"}},
	} {
		_, err := c.CreateBlock(ctx, s.owner, s.spec)
		must(err)
	}
	must(c.ShareBlock(ctx, "bob", "log", "ada", blocks.Append))
	must(c.ShareBlock(ctx, "bob", "facts", "ada", blocks.ReadOnly))
	must(c.ShareBlock(ctx, "bob", "draft", "ada", blocks.ReadWrite))
	_, err = c.InsertArchival(ctx, "ada", memory.ArchivalEntry{Content: "The dog is called Biscuit.", Tags: []string{"pets"}})
	must(err)
	_, err = c.InsertArchival(ctx, "ada", memory.ArchivalEntry{Content: "Night shifts on Fridays.", Tags: []string{"work"}})
	must(err)
	_, err = c.AppendMessages(ctx, "ada", []memory.Message{
		{Role: memory.RoleUser, Content: "where is the dog?", BatchID: "b1"},
		{Role: memory.RoleAssistant, Content: "in the garden", BatchID: "b1"},
	})
	must(err)
	_, err = c.SaveSummary(ctx, "ada", memory.Summary{FirstMessageID: 1, LastMessageID: 2, Content: "asked about the dog"})
	must(err)
	return c
}

// Each handle method reaches the result the positional method reaches:
// the same call made on two identically seeded stores, one through each
// API, returns the same value (or error) and leaves the same state.
func TestAgentHandleMatchesPositional(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every handle method against its positional call, one goroutine")
	ctx := context.Background()
	render := func(d *blocks.Document, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return []any{d.Render(), d.Permission(), d.Accessor()}, nil
	}
	ops := func(h []blocks.Change, err error) (any, error) {
		var out []string
		for _, c := range h {
			out = append(out, fmt.Sprintf("%s %s %d", c.Actor, c.Op, c.Epoch))
		}
		return out, err
	}
	// state is what every case compares after its call, besides the result.
	state := func(c *memory.Store) any {
		var out []any
		for _, agent := range []string{"ada", "bob"} {
			own, err := c.ListBlocks(ctx, agent)
			shared, err2 := c.ListSharedBlocks(ctx, agent)
			props, err3 := c.ListProposals(ctx, agent, "")
			arch, err4 := c.ListArchival(ctx, agent, &memory.ArchivalQuery{IncludeSuperseded: true})
			msgs, err5 := c.Messages(ctx, agent, nil)
			batches, err6 := c.Batches(ctx, agent)
			sum, err7 := c.LatestSummary(ctx, agent)
			out = append(out, own, shared, props, arch, msgs, batches, sum, errors.Join(err, err2, err3, err4, err5, err6), err7 != nil)
		}
		return out
	}
	ok := func(err error) (any, error) { return nil, err }
	edit := memory.Edit{Op: blocks.OpAppendText, Text: " and more"}
	peerChange := func(d *blocks.Document, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		peer, err := d.Fork()
		if err != nil {
			t.Fatal(err)
		}
		if err := peer.SetText("merged text", blocks.System); err != nil {
			t.Fatal(err)
		}
		data, err := peer.Save()
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	type call struct {
		name string
		pos  func(c *memory.Store) (any, error)
		hdl  func(a *memory.Agent) (any, error)
	}
	for _, tc := range []call{
		{"CreateBlock",
			func(c *memory.Store) (any, error) {
				return render(c.CreateBlock(ctx, "ada", memory.BlockSpec{Label: "new", Value: "fresh"}))
			},
			func(a *memory.Agent) (any, error) {
				b, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "new", Value: "fresh"})
				if err != nil {
					return nil, err
				}
				return render(b.Doc(ctx))
			}},
		{"CreateBlock exists",
			func(c *memory.Store) (any, error) {
				return render(c.CreateBlock(ctx, "ada", memory.BlockSpec{Label: "notes"}))
			},
			func(a *memory.Agent) (any, error) {
				b, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "notes"})
				return b, err
			}},
		{"GetBlock", func(c *memory.Store) (any, error) { return render(c.GetBlock(ctx, "ada", "notes")) },
			func(a *memory.Agent) (any, error) { return render(a.Block("notes").Doc(ctx)) }},
		{"GetBlock missing", func(c *memory.Store) (any, error) { return render(c.GetBlock(ctx, "ada", "nope")) },
			func(a *memory.Agent) (any, error) { return render(a.Block("nope").Doc(ctx)) }},
		{"GetSharedBlock", func(c *memory.Store) (any, error) { return render(c.GetSharedBlock(ctx, "ada", "bob", "log")) },
			func(a *memory.Agent) (any, error) { return render(a.Shared("bob", "log").Doc(ctx)) }},
		{"GetSharedBlock own", func(c *memory.Store) (any, error) { return render(c.GetSharedBlock(ctx, "ada", "ada", "notes")) },
			func(a *memory.Agent) (any, error) { return render(a.Shared("ada", "notes").Doc(ctx)) }},
		{"ListBlocks", func(c *memory.Store) (any, error) { return c.ListBlocks(ctx, "ada") },
			func(a *memory.Agent) (any, error) { return a.Blocks(ctx) }},
		{"ListBlocksByType", func(c *memory.Store) (any, error) { return c.ListBlocksByType(ctx, "ada", blocks.Core) },
			func(a *memory.Agent) (any, error) { return a.BlocksOfType(ctx, blocks.Core) }},
		{"ListBlocksByType bad", func(c *memory.Store) (any, error) { return c.ListBlocksByType(ctx, "ada", "nope") },
			func(a *memory.Agent) (any, error) { return a.BlocksOfType(ctx, "nope") }},
		{"ListSharedBlocks", func(c *memory.Store) (any, error) { return c.ListSharedBlocks(ctx, "ada") },
			func(a *memory.Agent) (any, error) { return a.SharedBlocks(ctx) }},
		{"BlocksStamp", func(c *memory.Store) (any, error) { return c.BlocksStamp(ctx, "ada") },
			func(a *memory.Agent) (any, error) { return a.BlocksStamp(ctx) }},
		{"RenderedContent", func(c *memory.Store) (any, error) { return c.RenderedContent(ctx, "ada", "notes") },
			func(a *memory.Agent) (any, error) { return a.Block("notes").Render(ctx) }},
		{"RenderedContent shared", func(c *memory.Store) (any, error) {
			d, err := c.GetSharedBlock(ctx, "ada", "bob", "facts")
			if err != nil {
				return nil, err
			}
			return d.Render(), nil
		}, func(a *memory.Agent) (any, error) { return a.Shared("bob", "facts").Render(ctx) }},
		{"UpdateBlockText", func(c *memory.Store) (any, error) { return ok(c.UpdateBlockText(ctx, "ada", "notes", "new text")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").SetText(ctx, "new text")) }},
		{"AppendToBlock", func(c *memory.Store) (any, error) { return ok(c.AppendToBlock(ctx, "ada", "notes", "!")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Append(ctx, "!")) }},
		{"ReplaceInBlock", func(c *memory.Store) (any, error) { return c.ReplaceInBlock(ctx, "ada", "notes", "world", "there") },
			func(a *memory.Agent) (any, error) { return a.Block("notes").Replace(ctx, "world", "there") }},
		{"ReplaceInBlock no match", func(c *memory.Store) (any, error) { return c.ReplaceInBlock(ctx, "ada", "notes", "absent", "x") },
			func(a *memory.Agent) (any, error) { return a.Block("notes").Replace(ctx, "absent", "x") }},
		{"ApplyEdit own", func(c *memory.Store) (any, error) { return ok(c.ApplyEdit(ctx, "ada", "", "notes", edit)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Apply(ctx, edit)) }},
		{"ApplyEdit shared append", func(c *memory.Store) (any, error) { return ok(c.ApplyEdit(ctx, "ada", "bob", "log", edit)) },
			func(a *memory.Agent) (any, error) { return ok(a.Shared("bob", "log").Append(ctx, " and more")) }},
		{"ApplyEdit shared read-only", func(c *memory.Store) (any, error) { return ok(c.ApplyEdit(ctx, "ada", "bob", "facts", edit)) },
			func(a *memory.Agent) (any, error) { return ok(a.Shared("bob", "facts").Apply(ctx, edit)) }},
		{"ApplyEdit partner keeps a proposal", func(c *memory.Store) (any, error) { return ok(c.ApplyEdit(ctx, "ada", "", "partner", edit)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("partner").Apply(ctx, edit)) }},
		{"MergeChanges", func(c *memory.Store) (any, error) {
			return ok(c.MergeChanges(ctx, "ada", "bob", "draft", peerChange(c.GetSharedBlock(ctx, "ada", "bob", "draft"))))
		}, func(a *memory.Agent) (any, error) {
			b := a.Shared("bob", "draft")
			return ok(b.Merge(ctx, peerChange(b.Doc(ctx))))
		}},
		{"BlockHistory", func(c *memory.Store) (any, error) { return ops(c.BlockHistory(ctx, "ada", "", "notes")) },
			func(a *memory.Agent) (any, error) { return ops(a.Block("notes").History(ctx)) }},
		{"BlockAt", func(c *memory.Store) (any, error) {
			h, err := c.BlockHistory(ctx, "ada", "bob", "log")
			if err != nil {
				return nil, err
			}
			return render(c.BlockAt(ctx, "ada", "bob", "log", []string{h[0].Hash}))
		}, func(a *memory.Agent) (any, error) {
			b := a.Shared("bob", "log")
			h, err := b.History(ctx)
			if err != nil {
				return nil, err
			}
			return render(b.At(ctx, []string{h[0].Hash}))
		}},
		{"ProposeEdit", func(c *memory.Store) (any, error) { return c.ProposeEdit(ctx, "ada", "bob", "draft", edit, "why not") },
			func(a *memory.Agent) (any, error) { return a.Shared("bob", "draft").Propose(ctx, edit, "why not") }},
		{"ProposeEdit read-only", func(c *memory.Store) (any, error) { return c.ProposeEdit(ctx, "ada", "bob", "facts", edit, "") },
			func(a *memory.Agent) (any, error) { return a.Shared("bob", "facts").Propose(ctx, edit, "") }},
		{"ListProposals", func(c *memory.Store) (any, error) {
			if _, err := c.ProposeEdit(ctx, "ada", "", "partner", edit, "r"); err != nil {
				return nil, err
			}
			return c.ListProposals(ctx, "ada", "partner")
		}, func(a *memory.Agent) (any, error) {
			if _, err := a.Block("partner").Propose(ctx, edit, "r"); err != nil {
				return nil, err
			}
			return a.Block("partner").Proposals(ctx)
		}},
		{"ListProposals all", func(c *memory.Store) (any, error) {
			if _, err := c.ProposeEdit(ctx, "ada", "", "partner", edit, "r"); err != nil {
				return nil, err
			}
			return c.ListProposals(ctx, "ada", "")
		}, func(a *memory.Agent) (any, error) {
			if _, err := a.Block("partner").Propose(ctx, edit, "r"); err != nil {
				return nil, err
			}
			return a.Proposals(ctx)
		}},
		{"ApproveProposal", func(c *memory.Store) (any, error) {
			p, err := c.ProposeEdit(ctx, "ada", "", "partner", edit, "r")
			if err != nil {
				return nil, err
			}
			return ok(c.ApproveProposal(ctx, p.ID, "ada"))
		}, func(a *memory.Agent) (any, error) {
			p, err := a.Block("partner").Propose(ctx, edit, "r")
			if err != nil {
				return nil, err
			}
			return ok(a.ApproveProposal(ctx, p.ID))
		}},
		{"RejectProposal", func(c *memory.Store) (any, error) {
			p, err := c.ProposeEdit(ctx, "ada", "", "partner", edit, "r")
			if err != nil {
				return nil, err
			}
			return ok(c.RejectProposal(ctx, p.ID, "ada", "no"))
		}, func(a *memory.Agent) (any, error) {
			p, err := a.Block("partner").Propose(ctx, edit, "r")
			if err != nil {
				return nil, err
			}
			return ok(a.RejectProposal(ctx, p.ID, "no"))
		}},
		{"ShareBlock", func(c *memory.Store) (any, error) { return ok(c.ShareBlock(ctx, "ada", "notes", "bob", blocks.Append)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Share(ctx, "bob", blocks.Append)) }},
		{"ShareBlock with self", func(c *memory.Store) (any, error) { return ok(c.ShareBlock(ctx, "ada", "notes", "ada", blocks.Append)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Share(ctx, "ada", blocks.Append)) }},
		{"UnshareBlock", func(c *memory.Store) (any, error) {
			if err := c.ShareBlock(ctx, "ada", "notes", "bob", blocks.Append); err != nil {
				return nil, err
			}
			return ok(c.UnshareBlock(ctx, "ada", "notes", "bob"))
		}, func(a *memory.Agent) (any, error) {
			if err := a.Block("notes").Share(ctx, "bob", blocks.Append); err != nil {
				return nil, err
			}
			return ok(a.Block("notes").Unshare(ctx, "bob"))
		}},
		{"UnshareBlock not shared", func(c *memory.Store) (any, error) { return ok(c.UnshareBlock(ctx, "ada", "notes", "bob")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Unshare(ctx, "bob")) }},
		{"DeleteBlock", func(c *memory.Store) (any, error) { return ok(c.DeleteBlock(ctx, "ada", "todo")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("todo").Delete(ctx)) }},
		{"SetBlockPinned", func(c *memory.Store) (any, error) { return ok(c.SetBlockPinned(ctx, "ada", "notes", true)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").SetPinned(ctx, true)) }},
		{"SetBlockType", func(c *memory.Store) (any, error) { return ok(c.SetBlockType(ctx, "ada", "notes", blocks.Core)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").SetType(ctx, blocks.Core)) }},
		{"UpdateBlockSchema", func(c *memory.Store) (any, error) {
			return ok(c.UpdateBlockSchema(ctx, "ada", "notes", schema.Text{Viewport: &schema.Viewport{Start: 1, Lines: 5}}))
		}, func(a *memory.Agent) (any, error) {
			return ok(a.Block("notes").SetSchema(ctx, schema.Text{Viewport: &schema.Viewport{Start: 1, Lines: 5}}))
		}},
		{"SetBlockPermission", func(c *memory.Store) (any, error) { return ok(c.SetBlockPermission(ctx, "ada", "notes", blocks.Admin)) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").SetPermission(ctx, blocks.Admin)) }},
		{"PersistBlock", func(c *memory.Store) (any, error) { return ok(c.PersistBlock(ctx, "ada", "notes")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Persist(ctx)) }},
		{"Compact", func(c *memory.Store) (any, error) { return ok(c.Compact(ctx, "ada", "notes")) },
			func(a *memory.Agent) (any, error) { return ok(a.Block("notes").Compact(ctx)) }},
		{"Rebase", func(c *memory.Store) (any, error) {
			if err := c.Rebase(ctx, "ada", "notes"); err != nil {
				return nil, err
			}
			return ops(c.BlockHistory(ctx, "ada", "", "notes"))
		}, func(a *memory.Agent) (any, error) {
			if err := a.Block("notes").Rebase(ctx); err != nil {
				return nil, err
			}
			return ops(a.Block("notes").History(ctx))
		}},
		{"InsertArchival", func(c *memory.Store) (any, error) {
			return c.InsertArchival(ctx, "ada", memory.ArchivalEntry{Content: "Tea, no sugar.", Tags: []string{"food"}})
		}, func(a *memory.Agent) (any, error) {
			return a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "Tea, no sugar.", Tags: []string{"food"}})
		}},
		{"InsertArchivalBatch", func(c *memory.Store) (any, error) {
			return c.InsertArchivalBatch(ctx, "ada", []memory.ArchivalEntry{{Content: "one"}, {Content: "two"}}, nil)
		}, func(a *memory.Agent) (any, error) {
			return a.Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "one"}, {Content: "two"}}, nil)
		}},
		{"GetArchival", func(c *memory.Store) (any, error) { return c.GetArchival(ctx, "ada", 1) },
			func(a *memory.Agent) (any, error) { return a.Archival().Get(ctx, 1) }},
		{"GetArchival missing", func(c *memory.Store) (any, error) { return c.GetArchival(ctx, "ada", 99) },
			func(a *memory.Agent) (any, error) { return a.Archival().Get(ctx, 99) }},
		{"ListArchival", func(c *memory.Store) (any, error) {
			return c.ListArchival(ctx, "ada", &memory.ArchivalQuery{Tags: []string{"work"}})
		}, func(a *memory.Agent) (any, error) {
			return a.Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"work"}})
		}},
		{"SupersedeArchival", func(c *memory.Store) (any, error) {
			return c.SupersedeArchival(ctx, "ada", 1, memory.ArchivalEntry{Content: "The dog is called Rex."})
		}, func(a *memory.Agent) (any, error) {
			return a.Archival().Supersede(ctx, 1, memory.ArchivalEntry{Content: "The dog is called Rex."})
		}},
		{"DeleteArchival", func(c *memory.Store) (any, error) { return ok(c.DeleteArchival(ctx, "ada", 2)) },
			func(a *memory.Agent) (any, error) { return ok(a.Archival().Delete(ctx, 2)) }},
		{"SearchArchival", func(c *memory.Store) (any, error) {
			return c.SearchArchival(ctx, "ada", "dog", search.NewOptions().Mode(search.FTS))
		}, func(a *memory.Agent) (any, error) {
			return a.Archival().Search(ctx, "dog", search.NewOptions().Mode(search.FTS))
		}},
		{"Search", func(c *memory.Store) (any, error) {
			return c.Search(ctx, "ada", "bob's", search.NewOptions().Mode(search.FTS))
		},
			func(a *memory.Agent) (any, error) {
				return a.Search(ctx, "bob's", search.NewOptions().Mode(search.FTS))
			}},
		{"AppendMessage", func(c *memory.Store) (any, error) {
			return c.AppendMessage(ctx, "ada", memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b2"})
		}, func(a *memory.Agent) (any, error) {
			return a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b2"})
		}},
		{"AppendMessages", func(c *memory.Store) (any, error) {
			return c.AppendMessages(ctx, "ada", []memory.Message{{Role: memory.RoleUser, Content: "a"}, {Role: memory.RoleTool, Content: "b"}})
		}, func(a *memory.Agent) (any, error) {
			return a.Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: "a"}, {Role: memory.RoleTool, Content: "b"}})
		}},
		{"Messages", func(c *memory.Store) (any, error) {
			return c.Messages(ctx, "ada", &memory.MessageQuery{Limit: 1, Newest: true})
		},
			func(a *memory.Agent) (any, error) {
				return a.Messages().List(ctx, &memory.MessageQuery{Limit: 1, Newest: true})
			}},
		{"CompleteBatch", func(c *memory.Store) (any, error) { return ok(c.CompleteBatch(ctx, "ada", "b1")) },
			func(a *memory.Agent) (any, error) { return ok(a.Messages().CompleteBatch(ctx, "b1")) }},
		{"Batches", func(c *memory.Store) (any, error) { return c.Batches(ctx, "ada") },
			func(a *memory.Agent) (any, error) { return a.Messages().Batches(ctx) }},
		{"SaveSummary", func(c *memory.Store) (any, error) {
			return c.SaveSummary(ctx, "ada", memory.Summary{FirstMessageID: 1, LastMessageID: 2, PreviousID: 1, Content: "dog: garden"})
		}, func(a *memory.Agent) (any, error) {
			return a.Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: 1, LastMessageID: 2, PreviousID: 1, Content: "dog: garden"})
		}},
		{"LatestSummary", func(c *memory.Store) (any, error) { return c.LatestSummary(ctx, "ada") },
			func(a *memory.Agent) (any, error) { return a.Messages().LatestSummary(ctx) }},
		{"Export", func(c *memory.Store) (any, error) {
			d, err := c.ExportAgent(ctx, "ada")
			if err != nil {
				return nil, err
			}
			return []any{len(d.Blocks), d.Shares, d.Archival, d.Messages, d.Batches, d.Summaries}, nil
		}, func(a *memory.Agent) (any, error) {
			d, err := a.Export(ctx)
			if err != nil {
				return nil, err
			}
			return []any{len(d.Blocks), d.Shares, d.Archival, d.Messages, d.Batches, d.Summaries}, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc, hc := agentStore(t), agentStore(t)
			want, wantErr := tc.pos(pc)
			got, gotErr := tc.hdl(hc.Agent("ada"))
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("handle error %v, positional error %v", gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("handle returned %#v\npositional returned %#v", got, want)
			}
			if gs, ws := state(hc), state(pc); !reflect.DeepEqual(gs, ws) {
				t.Errorf("state after handle call:\n%v\nafter positional call:\n%v", gs, ws)
			}
		})
	}
}

// blockCalls is every method of a block handle, each with arguments that
// would succeed on a block the agent may fully use.
func blockCalls(b *memory.Block) []struct {
	name string
	call func(ctx context.Context) error
} {
	type c = struct {
		name string
		call func(ctx context.Context) error
	}
	edit := memory.Edit{Op: blocks.OpAppendText, Text: " x"}
	return []c{
		{"Doc", func(ctx context.Context) error { _, err := b.Doc(ctx); return err }},
		{"Render", func(ctx context.Context) error { _, err := b.Render(ctx); return err }},
		{"Apply", func(ctx context.Context) error { return b.Apply(ctx, edit) }},
		{"SetText", func(ctx context.Context) error { return b.SetText(ctx, "replaced") }},
		{"Append", func(ctx context.Context) error { return b.Append(ctx, " more") }},
		{"Replace", func(ctx context.Context) error { _, err := b.Replace(ctx, "e", "E"); return err }},
		{"Merge", func(ctx context.Context) error { return b.Merge(ctx, nil) }},
		{"History", func(ctx context.Context) error { _, err := b.History(ctx); return err }},
		{"At", func(ctx context.Context) error { _, err := b.At(ctx, nil); return err }},
		{"Propose", func(ctx context.Context) error { _, err := b.Propose(ctx, edit, "r"); return err }},
		{"Proposals", func(ctx context.Context) error { _, err := b.Proposals(ctx); return err }},
		{"Share", func(ctx context.Context) error { return b.Share(ctx, "carol", blocks.ReadOnly) }},
		{"Unshare", func(ctx context.Context) error { return b.Unshare(ctx, "carol") }},
		{"SetPinned", func(ctx context.Context) error { return b.SetPinned(ctx, true) }},
		{"SetType", func(ctx context.Context) error { return b.SetType(ctx, blocks.Core) }},
		{"SetSchema", func(ctx context.Context) error {
			return b.SetSchema(ctx, schema.Text{Viewport: &schema.Viewport{Start: 1, Lines: 9}})
		}},
		{"SetPermission", func(ctx context.Context) error { return b.SetPermission(ctx, blocks.Admin) }},
		{"Persist", func(ctx context.Context) error { return b.Persist(ctx) }},
		{"Compact", func(ctx context.Context) error { return b.Compact(ctx) }},
		{"Rebase", func(ctx context.Context) error { return b.Rebase(ctx) }},
		{"Delete", func(ctx context.Context) error { return b.Delete(ctx) }},
	}
}

// agentCalls is every method of an agent handle and its archival and
// message sub-handles.
func agentCalls(a *memory.Agent) []struct {
	name string
	call func(ctx context.Context) error
} {
	type c = struct {
		name string
		call func(ctx context.Context) error
	}
	return []c{
		{"CreateBlock", func(ctx context.Context) error {
			_, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "created"})
			return err
		}},
		{"Blocks", func(ctx context.Context) error { _, err := a.Blocks(ctx); return err }},
		{"BlocksOfType", func(ctx context.Context) error { _, err := a.BlocksOfType(ctx, blocks.Core); return err }},
		{"SharedBlocks", func(ctx context.Context) error { _, err := a.SharedBlocks(ctx); return err }},
		{"BlocksStamp", func(ctx context.Context) error { _, err := a.BlocksStamp(ctx); return err }},
		{"Search", func(ctx context.Context) error { _, err := a.Search(ctx, "dog", nil); return err }},
		{"Proposals", func(ctx context.Context) error { _, err := a.Proposals(ctx); return err }},
		{"ApproveProposal", func(ctx context.Context) error { return a.ApproveProposal(ctx, 1) }},
		{"RejectProposal", func(ctx context.Context) error { return a.RejectProposal(ctx, 1, "no") }},
		{"Export", func(ctx context.Context) error { _, err := a.Export(ctx); return err }},
		{"Archival.Insert", func(ctx context.Context) error {
			_, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "c"})
			return err
		}},
		{"Archival.InsertBatch", func(ctx context.Context) error {
			_, err := a.Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "c"}}, nil)
			return err
		}},
		{"Archival.Get", func(ctx context.Context) error { _, err := a.Archival().Get(ctx, 1); return err }},
		{"Archival.List", func(ctx context.Context) error { _, err := a.Archival().List(ctx, nil); return err }},
		{"Archival.Supersede", func(ctx context.Context) error {
			_, err := a.Archival().Supersede(ctx, 1, memory.ArchivalEntry{Content: "c2"})
			return err
		}},
		{"Archival.Delete", func(ctx context.Context) error { return a.Archival().Delete(ctx, 2) }},
		{"Archival.Search", func(ctx context.Context) error { _, err := a.Archival().Search(ctx, "dog", nil); return err }},
		{"Messages.Append", func(ctx context.Context) error {
			_, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "m"})
			return err
		}},
		{"Messages.AppendMany", func(ctx context.Context) error {
			_, err := a.Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: "m"}})
			return err
		}},
		{"Messages.List", func(ctx context.Context) error { _, err := a.Messages().List(ctx, nil); return err }},
		{"Messages.CompleteBatch", func(ctx context.Context) error { return a.Messages().CompleteBatch(ctx, "b1") }},
		{"Messages.Batches", func(ctx context.Context) error { _, err := a.Messages().Batches(ctx); return err }},
		{"Messages.SaveSummary", func(ctx context.Context) error {
			_, err := a.Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: 1, LastMessageID: 1, Content: "s"})
			return err
		}},
		{"Messages.LatestSummary", func(ctx context.Context) error { _, err := a.Messages().LatestSummary(ctx); return err }},
	}
}

// Isolation holds through the handle: a block that was not shared with
// the agent is ErrNotFound for every method, read, write or owner-only,
// whether reached as a share or (for a label the agent does not use) as
// its own; and no search mode finds it.
func TestAgentHandleIsolation(t *testing.T) {
	ctx := context.Background()
	c := agentStoreWith(t, search.NewOffline(16))
	ada := c.Agent("ada")
	for _, h := range []struct {
		name string
		b    *memory.Block
	}{
		{"Shared(bob, secret)", ada.Shared("bob", "secret")},
		{"Block(secret)", ada.Block("secret")},
		{"Shared(bob, missing)", ada.Shared("bob", "missing")},
		{"Shared(carol, log)", ada.Shared("carol", "log")},
	} {
		for _, tc := range blockCalls(h.b) {
			t.Run(h.name+"/"+tc.name, func(t *testing.T) {
				if err := tc.call(ctx); !errors.Is(err, memory.ErrNotFound) {
					t.Fatalf("got %v, want ErrNotFound", err)
				}
			})
		}
	}
	if got := text(t, c, "bob", "secret"); got != "bob's zanzibar secret" {
		t.Fatalf("bob's secret block changed: %q", got)
	}
	for _, mode := range []search.Mode{search.FTS, search.Vector, search.Hybrid} {
		res, err := ada.Search(ctx, "zanzibar", search.NewOptions().Mode(mode))
		if err != nil {
			t.Fatalf("search mode %v: %v", mode, err)
		}
		for _, r := range res {
			if strings.Contains(r.Content, "zanzibar") {
				t.Fatalf("search mode %v found bob's secret: %+v", mode, r)
			}
		}
	}
	// Once shared, the same handle reaches it.
	if err := c.Agent("bob").Block("secret").Share(ctx, "ada", blocks.ReadOnly); err != nil {
		t.Fatal(err)
	}
	if got, err := ada.Shared("bob", "secret").Render(ctx); err != nil || got != "bob's zanzibar secret" {
		t.Fatalf("after sharing: %q, %v", got, err)
	}
}

// A shared block's handle honours the share's permission, and the owner's
// operations are refused to a sharee without touching the block.
func TestAgentHandleSharePermission(t *testing.T) {
	ctx := context.Background()
	c := agentStore(t)
	ada := c.Agent("ada")
	for _, tc := range []struct {
		label, op string
		call      func(b *memory.Block) error
		want      error // nil: allowed
		text      string
	}{
		{"log", "Append", func(b *memory.Block) error { return b.Append(ctx, " +ada") }, nil, "bob's log +ada"},
		{"log", "SetText", func(b *memory.Block) error { return b.SetText(ctx, "gone") }, blocks.ErrPermission, "bob's log"},
		{"log", "Replace", func(b *memory.Block) error { _, err := b.Replace(ctx, "log", "x"); return err }, blocks.ErrPermission, "bob's log"},
		// Merging needs Append (what comes in is judged as an append; see
		// TestMergeAttacksByAnAppendAgent): nothing merged changes nothing.
		{"log", "Merge", func(b *memory.Block) error { return b.Merge(ctx, nil) }, nil, "bob's log"},
		{"facts", "Merge", func(b *memory.Block) error { return b.Merge(ctx, nil) }, blocks.ErrPermission, "bob's facts"},
		{"facts", "Append", func(b *memory.Block) error { return b.Append(ctx, " +ada") }, blocks.ErrPermission, "bob's facts"},
		{"facts", "SetText", func(b *memory.Block) error { return b.SetText(ctx, "gone") }, blocks.ErrPermission, "bob's facts"},
		{"facts", "Propose", func(b *memory.Block) error {
			_, err := b.Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "x"}, "")
			return err
		}, blocks.ErrPermission, "bob's facts"},
		{"draft", "SetText", func(b *memory.Block) error { return b.SetText(ctx, "ada's draft") }, nil, "ada's draft"},
		{"draft", "Replace", func(b *memory.Block) error { _, err := b.Replace(ctx, "bob's", "our"); return err }, nil, "our draft"},
		{"draft", "Persist", func(b *memory.Block) error { return b.Persist(ctx) }, nil, "bob's draft"},
		{"draft", "Delete", func(b *memory.Block) error { return b.Delete(ctx) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "Share", func(b *memory.Block) error { return b.Share(ctx, "carol", blocks.Admin) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "Unshare", func(b *memory.Block) error { return b.Unshare(ctx, "ada") }, blocks.ErrPermission, "bob's draft"},
		{"draft", "SetPinned", func(b *memory.Block) error { return b.SetPinned(ctx, true) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "SetType", func(b *memory.Block) error { return b.SetType(ctx, blocks.Core) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "SetSchema", func(b *memory.Block) error { return b.SetSchema(ctx, schema.Text{}) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "SetPermission", func(b *memory.Block) error { return b.SetPermission(ctx, blocks.Admin) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "Compact", func(b *memory.Block) error { return b.Compact(ctx) }, blocks.ErrPermission, "bob's draft"},
		{"draft", "Rebase", func(b *memory.Block) error { return b.Rebase(ctx) }, blocks.ErrPermission, "bob's draft"},
	} {
		t.Run(tc.label+"/"+tc.op, func(t *testing.T) {
			c := agentStore(t)
			err := tc.call(c.Agent("ada").Shared("bob", tc.label))
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err != nil && !strings.Contains(err.Error(), `"ada"`) {
				t.Errorf("error does not name the acting agent: %v", err)
			}
			if got := text(t, c, "bob", tc.label); got != tc.text {
				t.Fatalf("block now %q, want %q", got, tc.text)
			}
			shared, err := c.ListSharedBlocks(ctx, "ada")
			if err != nil || len(shared) != 3 {
				t.Fatalf("ada's shares now %d (%v), want 3", len(shared), err)
			}
		})
	}
	// A sharee's Proposals are its own proposals only.
	if _, err := c.ProposeEdit(ctx, "bob", "", "draft", memory.Edit{Op: blocks.OpSetText, Text: "bob's idea"}, "mine"); err != nil {
		t.Fatal(err)
	}
	if _, err := ada.Shared("bob", "draft").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "ada's idea"}, "hers"); err != nil {
		t.Fatal(err)
	}
	ps, err := ada.Shared("bob", "draft").Proposals(ctx)
	if err != nil || len(ps) != 1 || ps[0].Proposer != "ada" {
		t.Fatalf("ada's proposals on bob's draft: %+v, %v", ps, err)
	}
	all, err := c.Agent("bob").Block("draft").Proposals(ctx)
	if err != nil || len(all) != 2 {
		t.Fatalf("bob's proposals on his draft: %+v, %v", all, err)
	}
}

// An empty agent id, owner or label is a clear error wrapping
// ErrInvalidArgument on every method, never "own block" or "every
// agent" — and nothing is changed.
func TestAgentHandleEmptyIDs(t *testing.T) {
	ctx := context.Background()
	c := agentStore(t)
	check := func(t *testing.T, err error, mention string) {
		t.Helper()
		if !errors.Is(err, memory.ErrInvalidArgument) {
			t.Fatalf("got %v, want ErrInvalidArgument", err)
		}
		if !strings.Contains(err.Error(), mention) {
			t.Fatalf("error %q does not say %q", err, mention)
		}
	}
	for _, id := range []string{"", "  "} {
		a := c.Agent(id)
		for _, tc := range agentCalls(a) {
			t.Run(fmt.Sprintf("agent %q/%s", id, tc.name), func(t *testing.T) { check(t, tc.call(ctx), "empty agent id") })
		}
		for _, tc := range blockCalls(a.Shared("ada", "notes")) {
			t.Run(fmt.Sprintf("agent %q/Shared.%s", id, tc.name), func(t *testing.T) { check(t, tc.call(ctx), "empty acting agent id") })
		}
	}
	ada := c.Agent("ada")
	for _, tc := range blockCalls(ada.Shared("", "notes")) {
		t.Run("empty owner/"+tc.name, func(t *testing.T) { check(t, tc.call(ctx), `agent "ada"`) })
	}
	for _, tc := range blockCalls(ada.Block("")) {
		t.Run("empty label/"+tc.name, func(t *testing.T) { check(t, tc.call(ctx), `agent "ada"`) })
	}
	if got := text(t, c, "ada", "notes"); got != "hello world" {
		t.Fatalf("ada's notes changed: %q", got)
	}
	if bs, err := c.ListBlocks(ctx, "ada"); err != nil || len(bs) != 3 {
		t.Fatalf("ada's blocks: %d, %v", len(bs), err)
	}
}

// A cancelled context is honoured by every method: it returns the
// context's error and changes nothing.
func TestAgentHandleCancelledContext(t *testing.T) {
	c := agentStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := c.Agent("ada")
	for _, tc := range agentCalls(a) {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
		})
	}
	for _, b := range []*memory.Block{a.Block("notes"), a.Shared("bob", "draft")} {
		for _, tc := range blockCalls(b) {
			t.Run(b.Owner()+"/"+tc.name, func(t *testing.T) {
				if err := tc.call(ctx); !errors.Is(err, context.Canceled) {
					t.Fatalf("got %v, want context.Canceled", err)
				}
			})
		}
	}
	if got := text(t, c, "ada", "notes"); got != "hello world" {
		t.Fatalf("ada's notes changed: %q", got)
	}
	if bs, err := c.ListBlocks(context.Background(), "ada"); err != nil || len(bs) != 3 {
		t.Fatalf("ada's blocks: %d, %v", len(bs), err)
	}
}

// The accessors say what the handle was made for.
func TestAgentHandleAccessors(t *testing.T) {
	c := agentStore(t)
	a := c.Agent("ada")
	b := a.Shared("bob", "log")
	if a.ID() != "ada" || b.Owner() != "bob" || b.Label() != "log" || b.Accessor() != "ada" {
		t.Fatalf("ID %q, Owner %q, Label %q, Accessor %q", a.ID(), b.Owner(), b.Label(), b.Accessor())
	}
	if own := a.Block("notes"); own.Owner() != "ada" || own.Accessor() != "ada" {
		t.Fatalf("own block: Owner %q, Accessor %q", own.Owner(), own.Accessor())
	}
}

// createBlockDoc creates a block through a's handle and returns its live
// view, for tests that go on to edit the document directly.
func createBlockDoc(ctx context.Context, a *memory.Agent, spec memory.BlockSpec) (*blocks.Document, error) {
	b, err := a.CreateBlock(ctx, spec)
	if err != nil {
		return nil, err
	}
	return b.Doc(ctx)
}
