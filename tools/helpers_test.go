package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/tools"
)

// epoch is the fixed clock of the test stores.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func fixedNow() time.Time { return epoch }

// openStore opens an in-memory store with a fixed clock.
func openStore(t testing.TB, opts *memory.Options) *memory.Store {
	t.Helper()
	if opts == nil {
		opts = &memory.Options{}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	st, err := memory.Open(context.Background(), ":memory:", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func mustCreate(t testing.TB, st *memory.Store, agent string, spec memory.BlockSpec) {
	t.Helper()
	if _, err := st.Agent(agent).CreateBlock(context.Background(), spec); err != nil {
		t.Fatalf("create %s/%s: %v", agent, spec.Label, err)
	}
}

// fixture builds alice's and bob's blocks:
//
//	alice: notes, dup, ro (ReadOnly), small (limit 20), profile (map),
//	       todo (list, max 2), full (list, max 1, full), events (log),
//	       sections (composite),
//	       appendonly (Append), approval (Human)
//	bob:   secret (not shared), shared_rw (ReadWrite to alice),
//	       shared_human (Human to alice), shared_ro (ReadOnly to alice)
func fixture(t testing.TB, st *memory.Store) {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "notes", Type: blocks.Core, Value: "first line\nsecond line"})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "dup", Value: "cat and cat"})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "ro", Permission: blocks.ReadOnly, Value: "fixed"})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "small", CharLimit: 20, Value: "0123456789"})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "profile", Value: map[string]any{"name": "Alice", "age": 30},
		Schema: schema.Map{Fields: []schema.FieldDef{
			{Name: "name", Type: schema.FieldString, Required: true},
			{Name: "age", Type: schema.FieldInteger},
			{Name: "status", Type: schema.FieldString, ReadOnly: true},
			{Name: "tags", Type: schema.FieldList},
		}}})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "todo", Schema: schema.List{MaxItems: 2}, Value: []any{"buy milk"}})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "full", Schema: schema.List{MaxItems: 1}, Value: []any{"only"}})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "events", Type: blocks.Log,
		Schema: schema.Log{Entry: []schema.FieldDef{{Name: "level", Type: schema.FieldString}}}})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "sections", Value: map[string]any{"summary": "So far so good.", "facts": []any{"sky is blue"}, "locked": "do not touch"},
		Schema: schema.Composite{Sections: []schema.Section{
			{Name: "summary", Schema: schema.Text{}},
			{Name: "facts", Schema: schema.List{}},
			{Name: "locked", ReadOnly: true, Schema: schema.Text{}},
		}}})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "appendonly", Permission: blocks.Append, Value: "log:"})
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "approval", Permission: blocks.Human, Value: "needs a human"})

	mustCreate(t, st, "bob", memory.BlockSpec{Label: "secret", Value: "bob's secret"})
	mustCreate(t, st, "bob", memory.BlockSpec{Label: "shared_rw", Value: "team notes"})
	mustCreate(t, st, "bob", memory.BlockSpec{Label: "shared_human", Value: "policy: be kind"})
	mustCreate(t, st, "bob", memory.BlockSpec{Label: "shared_ro", Value: "read me"})
	for label, p := range map[string]blocks.Permission{"shared_rw": blocks.ReadWrite, "shared_human": blocks.Human, "shared_ro": blocks.ReadOnly} {
		if err := st.Agent("bob").Block(label).Share(ctx, "alice", p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Agent("bob").Archival().Insert(ctx, memory.ArchivalEntry{Content: "bob likes penguins", Tags: []string{"animals"}}); err != nil {
		t.Fatal(err)
	}
}

// snapshot is everything a tool call could change: each block's heads and
// rendering, archival entries, messages and proposals of alice and bob.
func snapshot(t testing.TB, st *memory.Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, agent := range []string{"alice", "bob"} {
		metas, err := st.Agent(agent).Blocks(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			doc, err := st.Agent(agent).Block(m.Label).Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "block %s/%s %v\n%s\n", agent, m.Label, doc.Heads(), doc.Render())
		}
		arch, err := st.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range arch {
			fmt.Fprintf(&b, "archival %s %d %q %v\n", agent, e.ID, e.Content, e.Tags)
		}
		msgs, err := st.Agent(agent).Messages().List(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "messages %s %d\n", agent, len(msgs))
		props, err := st.Agent(agent).Proposals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range props {
			fmt.Fprintf(&b, "proposal %d %s/%s %s %s\n", p.ID, p.Owner, p.Label, p.Edit.Op, p.Status)
		}
	}
	return b.String()
}

func render(t testing.TB, st *memory.Store, agent, owner, label string) string {
	t.Helper()
	doc, err := st.Agent(agent).Shared(owner, label).Doc(context.Background())
	if err != nil {
		t.Fatalf("get %s/%s for %s: %v", owner, label, agent, err)
	}
	return doc.Render()
}

func newToolset(t testing.TB, st *memory.Store, agent string, opts *tools.Options) *tools.Toolset {
	t.Helper()
	if opts == nil {
		opts = &tools.Options{}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	ts, err := tools.New(st.Agent(agent), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// call runs a tool and fails the test on a Go error.
func call(t testing.TB, ts *tools.Toolset, name, args string) tools.Result {
	t.Helper()
	res, err := ts.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): Go error %v (result %+v)", name, args, err, res)
	}
	if res.IsError != strings.HasPrefix(res.Content, "Error: ") {
		t.Fatalf("%s(%s): IsError %v but content %q", name, args, res.IsError, res.Content)
	}
	return res
}

func listSchema() schema.Schema { return schema.List{} }
