// Package storetest is a conformance suite for *memory.Store
// implementations: RunStoreTests checks the contract every consumer relies
// on — errors, permissions, sharing, isolation, archival, messages.
package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

// Opener returns a fresh, empty store for one test; the suite closes it.
// approver is the store's Approver (nil = deny Partner/Human writes).
type Opener func(t *testing.T, approver blocks.Approver) *memory.Store

// RunStoreTests runs the whole suite against stores made by open.
func RunStoreTests(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"BlockLifecycle", testBlockLifecycle},
		{"Errors", testErrors},
		{"TypedEdits", testTypedEdits},
		{"Permissions", testPermissions},
		{"Sharing", testSharing},
		{"Isolation", testIsolation},
		{"IsolationOwnerNames", testIsolationOwnerNames},
		{"IsolationSharedBlockMoves", testIsolationSharedBlockMoves},
		{"Proposals", testProposals},
		{"ProposalRights", testProposalRights},
		{"Archival", testArchival},
		{"ArchivalBatch", testArchivalBatch},
		{"EntryCaps", testEntryCaps},
		{"TokenCounts", testTokenCounts},
		{"ContextLibrary", testContextLibrary},
		{"Messages", testMessages},
		{"ImportTwice", testImportTwice},
		{"MessagesTogether", testMessagesTogether},
		{"Search", testSearch},
		{"MessagesInContext", testMessagesInContext},
		{"MessageSeqExtremes", testMessageSeqExtremes},
		{"Cancelled", testCancelled},
		{"ConcurrentAgents", testConcurrentAgents},
		{"BlocksStamp", testBlocksStamp},
		{"EditErrors", testEditErrors},
		{"MergedAttribution", testMergedAttribution},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func openStore(t *testing.T, open Opener, approver blocks.Approver) *memory.Store {
	t.Helper()
	s := open(t, approver)
	t.Cleanup(func() { s.Close() })
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantErr(t *testing.T, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

var ctx = context.Background()

func testBlockLifecycle(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Type: blocks.Core, Description: "who I am", Value: "I am Alice."})
	must(t, err)
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "scratch", Type: blocks.Working, Permission: blocks.Admin})
	must(t, err)
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "journal", Type: blocks.Log, Schema: schema.Log{}, Permission: blocks.Append})
	must(t, err)
	must(t, s.Agent("alice").Block("persona").Append(ctx, " I like tea."))
	ok, err := s.Agent("alice").Block("persona").Replace(ctx, "tea", "coffee")
	must(t, err)
	if !ok {
		t.Fatal("ReplaceInBlock did not find tea")
	}
	ok, err = s.Agent("alice").Block("persona").Replace(ctx, "absent", "x")
	if ok || !errors.Is(err, memory.ErrNoMatch) {
		t.Fatalf("ReplaceInBlock(absent) = %v, %v; want false, ErrNoMatch", ok, err)
	}
	r, err := s.Agent("alice").Block("persona").Render(ctx)
	must(t, err)
	if r != "I am Alice. I like coffee." {
		t.Fatalf("rendered = %q", r)
	}
	must(t, s.Agent("alice").Block("scratch").SetText(ctx, "draft"))
	doc, err := s.Agent("alice").Block("scratch").Doc(ctx)
	must(t, err)
	if got, _ := doc.Text(); got != "draft" {
		t.Fatalf("scratch = %q", got)
	}
	// A write through the view is persisted by the store.
	must(t, doc.AppendText(" v2", blocks.Agent))
	must(t, s.Agent("alice").Block("scratch").Persist(ctx))
	if r, _ := s.Agent("alice").Block("scratch").Render(ctx); r != "draft v2" {
		t.Fatalf("view write not persisted: %q", r)
	}
	must(t, s.Agent("alice").Block("journal").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: "woke up"}))

	list, err := s.Agent("alice").Blocks(ctx)
	must(t, err)
	var labels []string
	for _, m := range list {
		labels = append(labels, m.Label)
	}
	if got := strings.Join(labels, ","); got != "persona,scratch,journal" {
		t.Fatalf("ListBlocks order = %s (want type, then creation order)", got)
	}
	if list[0].Description != "who I am" || list[0].Rendered != "I am Alice. I like coffee." || list[0].Permission != blocks.ReadWrite {
		t.Fatalf("meta = %+v", list[0])
	}
	core, err := s.Agent("alice").BlocksOfType(ctx, blocks.Core)
	must(t, err)
	if len(core) != 1 || core[0].Label != "persona" {
		t.Fatalf("ListBlocksByType(core) = %+v", core)
	}
	must(t, s.Agent("alice").Block("scratch").SetPinned(ctx, true))
	must(t, s.Agent("alice").Block("scratch").SetType(ctx, blocks.Core))
	core, _ = s.Agent("alice").BlocksOfType(ctx, blocks.Core)
	if len(core) != 2 || !core[1].Pinned {
		t.Fatalf("after SetBlockType/Pinned: %+v", core)
	}
	h, err := s.Agent("alice").Block("persona").History(ctx)
	must(t, err)
	if len(h) < 3 || h[len(h)-1].Actor != "alice" {
		t.Fatalf("history = %+v", h)
	}
	must(t, s.Agent("alice").Block("scratch").Delete(ctx))
	_, err = s.Agent("alice").Block("scratch").Doc(ctx)
	wantErr(t, err, memory.ErrNotFound, "GetBlock after delete")
}

func testErrors(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "b"})
	must(t, err)
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "b"})
	wantErr(t, err, memory.ErrExists, "duplicate CreateBlock")
	_, err = s.Agent("alice").Block("nope").Doc(ctx)
	wantErr(t, err, memory.ErrNotFound, "unknown block")
	wantErr(t, s.Agent("alice").Block("nope").Append(ctx, "x"), memory.ErrNotFound, "append to unknown block")
	_, err = s.Agent("alice").Block("nope").Render(ctx)
	wantErr(t, err, memory.ErrNotFound, "render unknown block")
	_, err = s.Agent("").CreateBlock(ctx, memory.BlockSpec{Label: "b"})
	wantErr(t, err, memory.ErrInvalidArgument, "empty agent")
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{})
	wantErr(t, err, memory.ErrInvalidArgument, "empty label")
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "m", Schema: schema.Map{Fields: []schema.FieldDef{{Name: "n", Type: schema.FieldInteger}}},
		Value: map[string]any{"n": "many"}})

	wantErr(t, err, schema.ErrInvalid, "bad initial value")
	_, err = s.Agent("alice").Block("m").Doc(ctx)
	wantErr(t, err, memory.ErrNotFound, "block with a bad initial value must not exist")
	err = s.Agent("alice").Block("b").Append(ctx, strings.Repeat("x", 6000))
	wantErr(t, err, blocks.ErrLimit, "oversized content")
	if r, _ := s.Agent("alice").Block("b").Render(ctx); r != "" {
		t.Fatalf("refused write left %q", r)
	}
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "l", Schema: schema.List{}})
	must(t, err)
	wantErr(t, s.Agent("alice").Block("l").Append(ctx, "x"), blocks.ErrWrongSchema, "text op on a list")
	wantErr(t, s.Agent("alice").Block("l").Apply(ctx, memory.Edit{Op: "explode"}), memory.ErrInvalidArgument, "unknown op")
	wantErr(t, s.Agent("alice").Archival().Delete(ctx, 999), memory.ErrNotFound, "unknown archival")
	wantErr(t, s.Agent("alice").Messages().CompleteBatch(ctx, "nope"), memory.ErrNotFound, "unknown batch")
	_, err = s.Agent("alice").Messages().LatestSummary(ctx)
	wantErr(t, err, memory.ErrNotFound, "no summary")
	_, err = s.Agent("alice").Messages().Append(ctx, memory.Message{Role: "robot", BatchID: "b1"})
	wantErr(t, err, memory.ErrInvalidArgument, "bad role")
	_, err = s.Agent("alice").Messages().Append(ctx, memory.Message{Role: memory.RoleUser})
	wantErr(t, err, memory.ErrInvalidArgument, "no batch")
	_, err = s.Agent("alice").Archival().Insert(ctx, memory.ArchivalEntry{Content: "  "})
	wantErr(t, err, memory.ErrInvalidArgument, "empty archival")
}

func testTypedEdits(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "profile", Permission: blocks.Admin, Schema: schema.Map{Fields: []schema.FieldDef{
		{Name: "name", Type: schema.FieldString}, {Name: "visits", Type: schema.FieldCounter},
		{Name: "tags", Type: schema.FieldList}, {Name: "plan", Type: schema.FieldString, ReadOnly: true, Default: "free"},
	}}})

	must(t, err)
	must(t, s.Agent("a").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpSetField, Field: "name", Value: "Ada"}))
	must(t, s.Agent("a").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpIncrementCounter, Field: "visits", Delta: 2}))
	must(t, s.Agent("a").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpAppendToListField, Field: "tags", Value: "vip"}))
	wantErr(t, s.Agent("a").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpSetField, Field: "plan", Value: "pro"}), blocks.ErrPermission, "read-only field")
	wantErr(t, s.Agent("a").Block("profile").Apply(ctx, memory.Edit{Op: blocks.OpSetField, Field: "visits", Value: "x"}), schema.ErrInvalid, "wrong type")
	r, _ := s.Agent("a").Block("profile").Render(ctx)
	if r != "name: Ada\nvisits: 2\ntags: vip\nplan [read-only]: free" {
		t.Fatalf("rendered = %q", r)
	}
	_, err = s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "todo", Schema: schema.List{Checkbox: true, MaxItems: 2}})
	must(t, err)
	must(t, s.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: "one"}))
	must(t, s.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: "two"}))
	wantErr(t, s.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: "three"}), schema.ErrInvalid, "max items")
	must(t, s.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpCheckItem, Index: 1, Value: true}))
	if r, _ := s.Agent("a").Block("todo").Render(ctx); r != "[ ] one\n[x] two" {
		t.Fatalf("todo = %q", r)
	}
	// Schema evolution within a kind.
	must(t, s.Agent("a").Block("profile").SetSchema(ctx, schema.Map{Fields: []schema.FieldDef{
		{Name: "name", Type: schema.FieldString}, {Name: "visits", Type: schema.FieldCounter},
		{Name: "tags", Type: schema.FieldList}, {Name: "plan", Type: schema.FieldString, ReadOnly: true, Default: "free"},
		{Name: "notes", Type: schema.FieldText, Default: "none"},
	}}))
	if r, _ := s.Agent("a").Block("profile").Render(ctx); !strings.HasSuffix(r, "notes: none") {
		t.Fatalf("after schema update: %q", r)
	}
	wantErr(t, s.Agent("a").Block("profile").SetSchema(ctx, schema.Text{}), blocks.ErrWrongSchema, "schema kind change")
}

func testPermissions(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	for _, p := range []blocks.Permission{blocks.ReadOnly, blocks.Append, blocks.ReadWrite, blocks.Admin} {
		label := "b-" + p.String()
		_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label, Permission: p, Value: "base"})
		must(t, err)
		errAppend := s.Agent("a").Block(label).Append(ctx, "+")
		errSet := s.Agent("a").Block(label).SetText(ctx, "new")
		errType := s.Agent("a").Block(label).SetType(ctx, blocks.Core)
		check := func(name string, err error, allowed bool) {
			if allowed && err != nil {
				t.Fatalf("%s on %s: %v", name, p, err)
			}
			if !allowed && !errors.Is(err, blocks.ErrPermission) {
				t.Fatalf("%s on %s: err = %v, want ErrPermission", name, p, err)
			}
		}
		check("append", errAppend, p >= blocks.Append)
		check("set", errSet, p >= blocks.ReadWrite)
		check("reconfigure", errType, p == blocks.Admin)
	}
	// Delete needs Admin.
	wantErr(t, s.Agent("a").Block("b-ReadWrite").Delete(ctx), blocks.ErrPermission, "delete with ReadWrite")
	must(t, s.Agent("a").Block("b-Admin").Delete(ctx))
}

func testSharing(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("archive").CreateBlock(ctx, memory.BlockSpec{Label: "shared_notes", Value: "start"})
	must(t, err)
	must(t, s.Agent("archive").Block("shared_notes").Share(ctx, "entropy", blocks.Append))
	shared, err := s.Agent("entropy").SharedBlocks(ctx)
	must(t, err)
	if len(shared) != 1 || shared[0].SharedFrom != "archive" || shared[0].Permission != blocks.Append || shared[0].Rendered != "start" {
		t.Fatalf("ListSharedBlocks = %+v", shared)
	}
	must(t, s.Agent("entropy").Shared("archive", "shared_notes").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " +entropy"}))
	wantErr(t, s.Agent("entropy").Shared("archive", "shared_notes").Apply(ctx, memory.Edit{Op: blocks.OpSetText, Text: "mine"}),
		blocks.ErrPermission, "sharee beyond its shared permission")
	// Both edit one CRDT document.
	owner, err := s.Agent("archive").Block("shared_notes").Doc(ctx)
	must(t, err)
	sharee, err := s.Agent("entropy").Shared("archive", "shared_notes").Doc(ctx)
	must(t, err)
	if !owner.Same(sharee) {
		t.Fatal("owner and sharee views should share one document")
	}
	if got, _ := owner.Text(); got != "start +entropy" {
		t.Fatalf("owner sees %q", got)
	}
	h, err := s.Agent("archive").Block("shared_notes").History(ctx)
	must(t, err)
	if len(h) == 0 {
		t.Fatal("the shared block has no history")
	}
	if h[len(h)-1].Actor != "entropy" {
		t.Fatalf("sharee's change attributed to %q", h[len(h)-1].Actor)
	}
	// Re-sharing changes the permission; unsharing revokes.
	must(t, s.Agent("archive").Block("shared_notes").Share(ctx, "entropy", blocks.ReadWrite))
	must(t, s.Agent("entropy").Shared("archive", "shared_notes").Apply(ctx, memory.Edit{Op: blocks.OpSetText, Text: "rewritten"}))
	must(t, s.Agent("archive").Block("shared_notes").Unshare(ctx, "entropy"))
	_, err = s.Agent("entropy").Shared("archive", "shared_notes").Doc(ctx)
	wantErr(t, err, memory.ErrNotFound, "after unshare")
	wantErr(t, s.Agent("archive").Block("shared_notes").Unshare(ctx, "entropy"), memory.ErrNotFound, "double unshare")
	wantErr(t, s.Agent("archive").Block("nope").Share(ctx, "entropy", blocks.ReadOnly), memory.ErrNotFound, "share unknown")
}

// testIsolation: every method, called by mallory on alice's things, behaves
// as if they did not exist.
func testIsolation(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "secret", Value: "the launch code is swordfish"})
	must(t, err)
	_, err = s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "open", Value: "shared swordfish facts"})
	must(t, err)
	must(t, s.Agent("alice").Block("open").Share(ctx, "bob", blocks.ReadOnly))
	arch, err := s.Agent("alice").Archival().Insert(ctx, memory.ArchivalEntry{Content: "swordfish is the password", Tags: []string{"secret"}})
	must(t, err)
	msg, err := s.Agent("alice").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "remember swordfish", BatchID: "b1"})
	must(t, err)
	_, err = s.Agent("alice").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: msg.ID, LastMessageID: msg.ID, Content: "swordfish"})
	must(t, err)

	notFound := []struct {
		name string
		call func() error
	}{
		{"GetBlock", func() error { _, err := s.Agent("mallory").Block("secret").Doc(ctx); return err }},
		{"GetSharedBlock", func() error { _, err := s.Agent("mallory").Shared("alice", "secret").Doc(ctx); return err }},
		{"GetSharedBlock(shared with bob)", func() error { _, err := s.Agent("mallory").Shared("alice", "open").Doc(ctx); return err }},
		{"RenderedContent", func() error { _, err := s.Agent("mallory").Block("secret").Render(ctx); return err }},
		{"UpdateBlockText", func() error { return s.Agent("mallory").Block("secret").SetText(ctx, "x") }},
		{"AppendToBlock", func() error { return s.Agent("mallory").Block("secret").Append(ctx, "x") }},
		{"ReplaceInBlock", func() error { _, err := s.Agent("mallory").Block("secret").Replace(ctx, "launch", "x"); return err }},
		{"ApplyEdit(owner)", func() error {
			return s.Agent("mallory").Shared("alice", "secret").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: "x"})
		}},
		{"PersistBlock", func() error { return s.Agent("mallory").Block("secret").Persist(ctx) }},
		{"DeleteBlock", func() error { return s.Agent("mallory").Block("secret").Delete(ctx) }},
		{"SetBlockPinned", func() error { return s.Agent("mallory").Block("secret").SetPinned(ctx, true) }},
		{"SetBlockType", func() error { return s.Agent("mallory").Block("secret").SetType(ctx, blocks.Core) }},
		{"UpdateBlockSchema", func() error { return s.Agent("mallory").Block("secret").SetSchema(ctx, schema.Text{}) }},
		{"BlockHistory", func() error { _, err := s.Agent("mallory").Shared("alice", "secret").History(ctx); return err }},
		{"ShareBlock", func() error { return s.Agent("mallory").Block("secret").Share(ctx, "mallory2", blocks.Admin) }},
		{"UnshareBlock", func() error { return s.Agent("mallory").Block("open").Unshare(ctx, "bob") }},
		{"ProposeEdit", func() error {
			_, err := s.Agent("mallory").Shared("alice", "secret").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "x"}, "")
			return err
		}},
		{"GetArchival", func() error { _, err := s.Agent("mallory").Archival().Get(ctx, arch.ID); return err }},
		{"DeleteArchival", func() error { return s.Agent("mallory").Archival().Delete(ctx, arch.ID) }},
		{"SupersedeArchival", func() error {
			_, err := s.Agent("mallory").Archival().Supersede(ctx, arch.ID, memory.ArchivalEntry{Content: "x"})
			return err
		}},
		{"CompleteBatch", func() error { return s.Agent("mallory").Messages().CompleteBatch(ctx, "b1") }},
		{"LatestSummary", func() error { _, err := s.Agent("mallory").Messages().LatestSummary(ctx); return err }},
	}
	for _, c := range notFound {
		if err := c.call(); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("%s by mallory: err = %v, want ErrNotFound", c.name, err)
		}
	}
	empty := []struct {
		name string
		call func() (int, error)
	}{
		{"ListBlocks", func() (int, error) { l, err := s.Agent("mallory").Blocks(ctx); return len(l), err }},
		{"ListBlocksByType", func() (int, error) {
			l, err := s.Agent("mallory").BlocksOfType(ctx, blocks.Working)
			return len(l), err
		}},
		{"ListSharedBlocks", func() (int, error) { l, err := s.Agent("mallory").SharedBlocks(ctx); return len(l), err }},
		{"ListArchival", func() (int, error) {
			l, err := s.Agent("mallory").Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true})
			return len(l), err
		}},
		{"Messages", func() (int, error) { l, err := s.Agent("mallory").Messages().List(ctx, nil); return len(l), err }},
		{"Batches", func() (int, error) { l, err := s.Agent("mallory").Messages().Batches(ctx); return len(l), err }},
		{"ListProposals", func() (int, error) { l, err := s.Agent("mallory").Proposals(ctx); return len(l), err }},
	}
	for _, m := range []search.Mode{search.FTS, search.Vector, search.Hybrid, search.Auto} {
		m := m
		empty = append(empty,
			struct {
				name string
				call func() (int, error)
			}{"Search/" + m.String(), func() (int, error) {
				l, err := s.Agent("mallory").Search(ctx, "swordfish", search.NewOptions().Mode(m))
				if errors.Is(err, search.ErrNoEmbedder) {
					return 0, nil
				}
				return len(l), err
			}},
			struct {
				name string
				call func() (int, error)
			}{"SearchArchival/" + m.String(), func() (int, error) {
				l, err := s.Agent("mallory").Archival().Search(ctx, "swordfish", search.NewOptions().Mode(m))
				if errors.Is(err, search.ErrNoEmbedder) {
					return 0, nil
				}
				return len(l), err
			}})
	}
	for _, c := range empty {
		n, err := c.call()
		if err != nil || n != 0 {
			t.Errorf("%s by mallory: %d results, err %v; want none", c.name, n, err)
		}
	}
	// bob sees exactly the shared block, nothing else of alice's.
	res, err := s.Agent("bob").Search(ctx, "swordfish", search.NewOptions().Mode(search.FTS))
	must(t, err)
	if len(res) != 1 || res[0].Label != "open" || res[0].Owner != "alice" {
		t.Fatalf("bob's search = %+v", res)
	}
	// The system-wide view sees everything.
	all, err := s.SearchAll(ctx, "swordfish", search.NewOptions().Mode(search.FTS).Limit(20))
	must(t, err)
	if len(all) != 4 {
		t.Fatalf("SearchAll found %d, want 4 (2 blocks, 1 archival, 1 message)", len(all))
	}
	// Nothing mallory did changed alice's data.
	if r, _ := s.Agent("alice").Block("secret").Render(ctx); r != "the launch code is swordfish" {
		t.Fatalf("alice's block changed: %q", r)
	}
	if _, err := s.Agent("alice").Archival().Get(ctx, arch.ID); err != nil {
		t.Fatalf("alice's archival entry: %v", err)
	}
}

// testIsolationOwnerNames: agent names that would break or widen a
// full-text query if one ever reached it (quotes, operators, spaces,
// wildcards, unicode) keep each agent's searches to its own rows. The tag
// filter sends archival searches to the SQL full-text leg, which reaches
// an agent's rows by its name.
func testIsolationOwnerNames(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	names := []string{`ann`, `"`, `a" OR "b`, `*`, `OR`, `NEAR(x y)`, `bob smith`, `日本語`, `ann*`, `-1`, `'; DROP TABLE archival; --`}
	for i, a := range names {
		for j := range 3 {
			_, err := s.Agent(a).Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("kestrel sighting %d %d", i, j), Tags: []string{"birds"}})
			must(t, err)
		}
		_, err := s.Agent(a).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "a kestrel again", BatchID: "b"})
		must(t, err)
	}
	for _, a := range names {
		for _, c := range []struct {
			name string
			run  func() ([]search.Result, error)
			want int
		}{
			{"SearchArchival+tags", func() ([]search.Result, error) {
				return s.Agent(a).Archival().Search(ctx, "kestrel", search.NewOptions().Mode(search.FTS).Tags("birds").Limit(50))
			}, 3},
			{"SearchArchival", func() ([]search.Result, error) {
				return s.Agent(a).Archival().Search(ctx, "kestrel", search.NewOptions().Mode(search.FTS).Limit(50))
			}, 3},
			{"Search", func() ([]search.Result, error) {
				return s.Agent(a).Search(ctx, "kestrel", search.NewOptions().Mode(search.FTS).Limit(50))
			}, 4},
		} {
			res, err := c.run()
			must(t, err)
			if len(res) != c.want {
				t.Errorf("%s of %q: %d results, want %d", c.name, a, len(res), c.want)
			}
			for _, r := range res {
				if r.Owner != a {
					t.Errorf("%s of %q returned %s %d of %q", c.name, a, r.Type, r.ID, r.Owner)
				}
			}
		}
	}
	all, err := s.SearchAll(ctx, "kestrel", search.NewOptions().Mode(search.FTS).Tags("birds").Limit(100))
	must(t, err)
	if len(all) != 3*len(names) {
		t.Errorf("SearchAll with tags found %d, want %d", len(all), 3*len(names))
	}
}

// testIsolationSharedBlockMoves: a block's searchers follow its shares
// and its owner. Shared, the agent it is shared with finds it; unshared,
// not any more; moved to another owner (raw SQL: the store has no method
// for it, but the full-text indexes key blocks by owner), only the new
// owner finds it. Every search mode is checked for rows of another agent
// at each step; full text must find what the scope may see.
func testIsolationSharedBlockMoves(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "nest", Value: "the osprey nest is on the pylon"})
	must(t, err)
	_, err = s.Agent("carol").CreateBlock(ctx, memory.BlockSpec{Label: "own", Value: "carol saw an osprey too"})
	must(t, err)
	_, err = s.Agent("bob").CreateBlock(ctx, memory.BlockSpec{Label: "own", Value: "bob has no birds"})
	must(t, err)
	// may says which blocks holding "osprey" each agent may see
	// (owner/label); check searches every agent in every mode.
	check := func(step string, may map[string][]string) {
		t.Helper()
		for _, agent := range []string{"alice", "bob", "carol", "mallory"} {
			for _, m := range []search.Mode{search.FTS, search.Vector, search.Hybrid, search.Auto} {
				res, err := s.Agent(agent).Search(ctx, "osprey", search.NewOptions().Mode(m).ContentTypes(search.Blocks).Limit(20))
				if errors.Is(err, search.ErrNoEmbedder) {
					continue
				}
				must(t, err)
				got := map[string]bool{}
				for _, r := range res {
					key := r.Owner + "/" + r.Label
					// bob's own block holds no "osprey", but a vector
					// search may still return it: his own.
					if !slices.Contains(may[agent], key) && key != agent+"/own" {
						t.Errorf("%s: %s search of %q returned %s", step, m, agent, key)
					}
					got[key] = true
				}
				if m != search.FTS {
					continue
				}
				for _, key := range may[agent] {
					if !got[key] {
						t.Errorf("%s: %s search of %q did not find %s", step, m, agent, key)
					}
				}
			}
		}
	}
	check("before sharing", map[string][]string{"alice": {"alice/nest"}, "carol": {"carol/own"}})
	must(t, s.Agent("alice").Block("nest").Share(ctx, "bob", blocks.ReadOnly))
	check("shared with bob", map[string][]string{"alice": {"alice/nest"}, "bob": {"alice/nest"}, "carol": {"carol/own"}})
	must(t, s.Agent("alice").Block("nest").Unshare(ctx, "bob"))
	check("unshared", map[string][]string{"alice": {"alice/nest"}, "carol": {"carol/own"}})
	be := storeaccess.Backend(s)
	must(t, be.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE blocks SET owner = 'dave' WHERE owner = 'alice' AND label = 'nest'`)
		return err
	}))
	check("moved to dave", map[string][]string{"dave": {"dave/nest"}, "carol": {"carol/own"}})
	// A share of the moved block (made by raw SQL, as the move) reaches
	// the agent it names, in its new owner's range.
	must(t, be.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO shares (block_id, agent, permission, created_at)
			SELECT id, 'carol', 'ReadOnly', 0 FROM blocks WHERE owner = 'dave' AND label = 'nest'`)
		return err
	}))
	check("moved, then shared with carol", map[string][]string{"dave": {"dave/nest"}, "carol": {"carol/own", "dave/nest"}})
}

func testProposals(t *testing.T, open Opener) {
	var mu sync.Mutex
	decision := false
	s := openStore(t, open, blocks.ApproverFunc(func(r blocks.ApprovalRequest) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return decision, nil
	}))
	_, err := s.Agent("human").CreateBlock(ctx, memory.BlockSpec{Label: "prefs", Value: "likes: tea", Permission: blocks.Admin})
	must(t, err)
	must(t, s.Agent("human").Block("prefs").Share(ctx, "agent", blocks.Human))
	err = s.Agent("agent").Shared("human", "prefs").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: ", coffee"})
	var pe *memory.ProposalError
	if !errors.As(err, &pe) || !errors.Is(err, blocks.ErrPermission) || !errors.Is(err, blocks.ErrNeedsApproval) {
		t.Fatalf("unapproved Human write: err = %v", err)
	}
	if r, _ := s.Agent("human").Block("prefs").Render(ctx); r != "likes: tea" {
		t.Fatalf("denied write applied: %q", r)
	}
	p2, err := s.Agent("agent").Shared("human", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "likes: nothing"}, "user said so")
	must(t, err)
	ps, err := s.Agent("human").Block("prefs").Proposals(ctx)
	must(t, err)
	if len(ps) != 2 || ps[0].ID != pe.ProposalID || ps[0].Status != "pending" || ps[1].Reason != "user said so" {
		t.Fatalf("proposals = %+v", ps)
	}
	must(t, s.Agent("human:the-human").ApproveProposal(ctx, pe.ProposalID))
	if r, _ := s.Agent("human").Block("prefs").Render(ctx); r != "likes: tea, coffee" {
		t.Fatalf("approved proposal not applied: %q", r)
	}
	h, err := s.Agent("human").Block("prefs").History(ctx)
	must(t, err)
	if len(h) == 0 {
		t.Fatal("the approved block has no history")
	}
	if h[len(h)-1].Actor != "agent" {
		t.Fatalf("approved change attributed to %q, want the proposer", h[len(h)-1].Actor)
	}
	must(t, s.Agent("human:the-human").RejectProposal(ctx, p2.ID, "no"))
	wantErr(t, s.Agent("human:the-human").ApproveProposal(ctx, p2.ID), memory.ErrInvalidArgument, "approve a rejected proposal")
	ps, _ = s.Agent("human").Proposals(ctx)
	if ps[0].Status != "approved" || ps[0].DecidedBy != "human:the-human" || ps[1].Status != "rejected" {
		t.Fatalf("decided proposals = %+v", ps)
	}
	// With the approver saying yes, the write goes straight through.
	mu.Lock()
	decision = true
	mu.Unlock()
	must(t, s.Agent("agent").Shared("human", "prefs").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: ", water"}))
	if r, _ := s.Agent("human").Block("prefs").Render(ctx); r != "likes: tea, coffee, water" {
		t.Fatalf("approved write: %q", r)
	}
}

func testArchival(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	e1, err := s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Ada lives in London", Tags: []string{"person", "location", "person"},
		Metadata: map[string]any{"source": "chat"}})

	must(t, err)
	if e1.ID == 0 || len(e1.Tags) != 2 || e1.CreatedAt.IsZero() {
		t.Fatalf("inserted = %+v", e1)
	}
	_, err = s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Ada likes engines", Tags: []string{"person"}})
	must(t, err)
	e3, err := s.Agent("a").Archival().Supersede(ctx, e1.ID, memory.ArchivalEntry{Content: "Ada moved to Paris", Tags: []string{"location"}})
	must(t, err)
	cur, err := s.Agent("a").Archival().List(ctx, nil)
	must(t, err)
	if len(cur) != 2 {
		t.Fatalf("current entries = %d, want 2 (superseded hidden)", len(cur))
	}
	all, _ := s.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true})
	if len(all) != 3 {
		t.Fatalf("all entries = %d", len(all))
	}
	old, err := s.Agent("a").Archival().Get(ctx, e1.ID)
	must(t, err)
	if old.ValidTo == nil || old.SupersededBy != e3.ID || old.Metadata["source"] != "chat" {
		t.Fatalf("superseded entry = %+v", old)
	}
	_, err = s.Agent("a").Archival().Supersede(ctx, e1.ID, memory.ArchivalEntry{Content: "again"})
	wantErr(t, err, memory.ErrNotFound, "superseding an already superseded entry")
	loc, _ := s.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"location"}})
	if len(loc) != 1 || loc[0].ID != e3.ID {
		t.Fatalf("tag filter = %+v", loc)
	}
	res, err := s.Agent("a").Archival().Search(ctx, "where does Ada live", search.NewOptions().Mode(search.FTS))
	must(t, err)
	for _, r := range res {
		if r.ID == e1.ID {
			t.Fatal("superseded entry found by default")
		}
	}
	res, _ = s.Agent("a").Archival().Search(ctx, "London", search.NewOptions().Mode(search.FTS).IncludeSuperseded(true))
	if len(res) != 1 || res[0].ID != e1.ID {
		t.Fatalf("IncludeSuperseded search = %+v", res)
	}
	must(t, s.Agent("a").Archival().Delete(ctx, e3.ID))
	res, _ = s.Agent("a").Archival().Search(ctx, "Paris", search.NewOptions().Mode(search.FTS))
	if len(res) != 0 {
		t.Fatalf("deleted entry still found: %+v", res)
	}
}

// testArchivalBatch: a batch is checked whole before anything is written,
// then stored in transactions of BatchOptions.Size with progress reported;
// the entries are searchable, listable by tag and private to the agent.
func testArchivalBatch(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	var in []memory.ArchivalEntry
	for i := range 25 {
		in = append(in, memory.ArchivalEntry{Content: fmt.Sprintf("note %d about the harbour crane", i),
			Tags: []string{"bulk", fmt.Sprintf("n%d", i%3)}, Metadata: map[string]any{"i": i}})
	}
	in[7].Content = "the lighthouse keeper writes letters"

	bad := append(slices.Clone(in), memory.ArchivalEntry{Content: "   "})
	_, err := s.Agent("a").Archival().InsertBatch(ctx, bad, nil)
	wantErr(t, err, memory.ErrInvalidArgument, "a batch with an empty entry")
	if got, _ := s.Agent("a").Archival().List(ctx, nil); len(got) != 0 {
		t.Fatalf("a refused batch stored %d entries", len(got))
	}
	_, err = s.Agent(" ").Archival().InsertBatch(ctx, in, nil)
	wantErr(t, err, memory.ErrInvalidArgument, "a batch for an empty agent")

	var calls [][2]int
	out, err := s.Agent("a").Archival().InsertBatch(ctx, in, &memory.BatchOptions{Size: 10,
		Progress: func(done, total int) { calls = append(calls, [2]int{done, total}) }})

	must(t, err)
	if want := [][2]int{{10, 25}, {20, 25}, {25, 25}}; !slices.Equal(calls, want) {
		t.Errorf("progress = %v, want %v", calls, want)
	}
	if len(out) != len(in) {
		t.Fatalf("stored %d of %d", len(out), len(in))
	}
	ids := map[int64]bool{}
	for i, e := range out {
		if e.ID == 0 || ids[e.ID] || e.Content != in[i].Content || e.Agent != "a" || e.CreatedAt.IsZero() {
			t.Fatalf("entry %d = %+v", i, e)
		}
		ids[e.ID] = true
	}
	got, err := s.Agent("a").Archival().Get(ctx, out[4].ID)
	must(t, err)
	if got.Content != in[4].Content || !slices.Equal(got.Tags, []string{"bulk", "n1"}) || got.Metadata["i"] != float64(4) {
		t.Fatalf("stored entry 4 = %+v", got)
	}
	n0, _ := s.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"n0"}})
	if len(n0) != 9 {
		t.Fatalf("tag n0: %d entries, want 9", len(n0))
	}
	res, err := s.Agent("a").Archival().Search(ctx, "lighthouse keeper", search.NewOptions().Mode(search.FTS))
	must(t, err)
	if len(res) != 1 || res[0].ID != out[7].ID {
		t.Fatalf("search after batch = %+v", res)
	}
	// Auto: hybrid when the store has an embedder (the batch's vectors).
	res, err = s.Agent("a").Archival().Search(ctx, "lighthouse keeper letters", search.NewOptions().Mode(search.Auto).Limit(3))
	must(t, err)
	if len(res) == 0 || res[0].ID != out[7].ID {
		t.Fatalf("auto search after batch = %+v", res)
	}
	if res, _ := s.Agent("b").Archival().Search(ctx, "lighthouse keeper", search.NewOptions().Mode(search.FTS)); len(res) != 0 {
		t.Fatalf("another agent finds the batch: %+v", res)
	}
	if out, err := s.Agent("a").Archival().InsertBatch(ctx, nil, nil); err != nil || len(out) != 0 {
		t.Fatalf("empty batch: %v, %v", out, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	out, err = s.Agent("a").Archival().InsertBatch(cctx, in[:3], nil)
	wantErr(t, err, context.Canceled, "a batch with a cancelled context")
	if len(out) != 0 {
		t.Fatalf("cancelled batch reports %d stored", len(out))
	}
	if all, _ := s.Agent("a").Archival().List(ctx, nil); len(all) != len(in) {
		t.Fatalf("after the cancelled batch: %d entries, want %d", len(all), len(in))
	}
	// A batch larger than one INSERT statement (rows are written many to
	// a statement): every returned id is its own entry's.
	var big []memory.ArchivalEntry
	for i := range 250 {
		e := memory.ArchivalEntry{Content: fmt.Sprintf("big batch entry %d", i)}
		if i%50 == 0 {
			e.Tags = []string{fmt.Sprintf("every50-%d", i)}
		}
		big = append(big, e)
	}
	out, err = s.Agent("b").Archival().InsertBatch(ctx, big, nil)
	must(t, err)
	for i, e := range out {
		got, err := s.Agent("b").Archival().Get(ctx, e.ID)
		must(t, err)
		if got.Content != big[i].Content || !slices.Equal(got.Tags, big[i].Tags) {
			t.Fatalf("big batch entry %d: id %d holds %q %v", i, e.ID, got.Content, got.Tags)
		}
	}
}

// testTokenCounts: the persisted token-count cache the builder reads on a
// cold start (stores that offer it).
func testTokenCounts(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	tc := s
	big := uint64(1<<63 + 12345) // beyond int64: stored as its two's complement
	must(t, tc.SaveTokenCounts(ctx, "cl100k_base", map[uint64]int{1: 10, big: 20}))
	must(t, tc.SaveTokenCounts(ctx, "o200k_base", map[uint64]int{1: 11}))
	must(t, tc.SaveTokenCounts(ctx, "cl100k_base", map[uint64]int{1: 99, 3: 30})) // 1 kept
	got, err := tc.TokenCounts(ctx, "cl100k_base", []uint64{1, big, 3, 4})
	must(t, err)
	if want := map[uint64]int{1: 10, big: 20, 3: 30}; !maps.Equal(got, want) {
		t.Fatalf("counts = %v, want %v", got, want)
	}
	if got, _ := tc.TokenCounts(ctx, "o200k_base", []uint64{1, 3}); !maps.Equal(got, map[uint64]int{1: 11}) {
		t.Fatalf("o200k counts = %v", got)
	}
	if got, err := tc.TokenCounts(ctx, "cl100k_base", nil); err != nil || len(got) != 0 {
		t.Fatalf("no hashes: %v, %v", got, err)
	}
}

// testContextLibrary: the builder's context library (stores that keep
// one): first-seen order, last write wins in place, per-agent isolation,
// bad entries store nothing.
func testContextLibrary(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	lib := s
	ids := func(agent string) []string {
		t.Helper()
		es, err := lib.Agent(agent).ContextLibrary(ctx)
		must(t, err)
		var out []string
		for _, e := range es {
			if e.Hash != memory.ArtifactHash(e.Content) {
				t.Fatalf("%s: hash %q does not match its content", e.ID, e.Hash)
			}
			out = append(out, e.ID+"="+e.Content)
		}
		return out
	}
	must(t, lib.Agent("a").PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "spec.md", Kind: "file", Content: "v1", Recoverable: true}}))
	must(t, lib.Agent("a").PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "api.md", Content: "api"}, {ID: "spec.md", Content: "v2"}}))
	must(t, lib.Agent("b").PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "other", Content: "b's"}}))
	if got, want := ids("a"), []string{"spec.md=v2", "api.md=api"}; !slices.Equal(got, want) {
		t.Fatalf("library of a = %q, want %q (first-seen order, last write wins)", got, want)
	}
	if got := ids("b"); !slices.Equal(got, []string{"other=b's"}) {
		t.Fatalf("library of b = %q", got)
	}
	for _, bad := range [][]memory.LibraryEntry{
		{{ID: "ok", Content: "x"}, {ID: " ", Content: "no id"}},
		{{ID: "ok", Content: "x"}, {ID: strings.Repeat("x", 600), Content: "long id"}},
		{{ID: "ok", Content: "x"}, {ID: "nul", Content: "a\x00b"}},
		{{ID: "ok", Content: "x"}, {ID: "utf", Content: "\xff"}},
	} {
		wantErr(t, lib.Agent("a").PutContextLibrary(ctx, bad), memory.ErrInvalidArgument, "bad library entry")
	}
	wantErr(t, lib.Agent("").PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "x", Content: "x"}}), memory.ErrInvalidArgument, "no agent")
	if got := ids("a"); len(got) != 2 {
		t.Fatalf("a failed put stored something: %q", got)
	}
	must(t, lib.Agent("a").RemoveFromContextLibrary(ctx, "spec.md", "unknown"))
	if got := ids("a"); !slices.Equal(got, []string{"api.md=api"}) {
		t.Fatalf("after remove: %q", got)
	}
	must(t, lib.Agent("a").RemoveFromContextLibrary(ctx))
	if got := ids("a"); len(got) != 0 || len(ids("b")) != 1 {
		t.Fatalf("after clearing a: a=%q b=%q", got, ids("b"))
	}
}

// testMessagesTogether: AppendMessages writes a turn in one transaction,
// all or none, with seqs in order.
func testMessagesTogether(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	turn := []memory.Message{
		{Role: memory.RoleUser, BatchID: "t1", Content: "where is the kettle?"},
		{Role: memory.RoleAssistant, BatchID: "t1", ToolCalls: []memory.ToolCall{{ID: "c1", Name: "search", Arguments: []byte(`{}`)}}},
		{Role: memory.RoleTool, BatchID: "t1", ToolCallID: "c1", Content: "kitchen shelf"},
		{Role: memory.RoleAssistant, BatchID: "t1", Content: "On the kitchen shelf."},
	}
	out, err := s.Agent("a").Messages().AppendMany(ctx, turn)
	must(t, err)
	for i, m := range out {
		if m.ID == 0 || m.Seq != i+1 || m.Agent != "a" || m.Content != turn[i].Content {
			t.Fatalf("message %d = %+v", i, m)
		}
	}
	// A bad message anywhere: nothing of the call is written.
	bad := []memory.Message{{Role: memory.RoleUser, BatchID: "t2", Content: "x"}, {Role: "robot", BatchID: "t2", Content: "y"}}
	_, err = s.Agent("a").Messages().AppendMany(ctx, bad)
	wantErr(t, err, memory.ErrInvalidArgument, "a bad role in the second message")
	// A conflict inside the transaction rolls back the messages before it.
	dup := []memory.Message{{Role: memory.RoleUser, BatchID: "t2", Content: "fine"}, {Role: memory.RoleUser, BatchID: "t1", Seq: 2, Content: "dup"}}
	_, err = s.Agent("a").Messages().AppendMany(ctx, dup)
	wantErr(t, err, memory.ErrExists, "a duplicate seq in the second message")
	all, err := s.Agent("a").Messages().List(ctx, nil)
	must(t, err)
	if len(all) != 4 {
		t.Fatalf("after refused calls: %d messages, want 4", len(all))
	}
	res, err := s.Agent("a").Search(ctx, "kitchen shelf", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
	must(t, err)
	// The two messages holding the words, then the tool call between them
	// and the question two turns before them, found by their neighbours'
	// words (testMessagesInContext); nothing of the refused calls.
	if len(res) != 4 {
		t.Fatalf("search over the turn = %d results, want 4: %+v", len(res), res)
	}
	for i, r := range res {
		if !slices.ContainsFunc(out, func(m memory.Message) bool { return m.ID == r.ID }) {
			t.Fatalf("result %d is message %d (%q), not one of the turn's", i, r.ID, r.Content)
		}
	}
	if own := []int64{res[0].ID, res[1].ID}; !slices.Contains(own, out[2].ID) || !slices.Contains(own, out[3].ID) {
		t.Fatalf("the messages holding the words rank %d and %d, not first", res[0].ID, res[1].ID)
	}
	if res[2].ID != out[1].ID {
		t.Fatalf("the message found only by its context ranks %v, want last", res)
	}
}

func testMessages(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	m1, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b1"})
	must(t, err)
	m2, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: "b1",
		ToolCalls: []memory.ToolCall{{ID: "c1", Name: "search", Arguments: []byte(`{"q":"x"}`)}}})

	must(t, err)
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleTool, Content: "result", ToolCallID: "c1", BatchID: "b1"})
	must(t, err)
	if m1.Seq != 1 || m2.Seq != 2 {
		t.Fatalf("seqs = %d, %d", m1.Seq, m2.Seq)
	}
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "dup", BatchID: "b1", Seq: 2})
	wantErr(t, err, memory.ErrExists, "duplicate seq")
	must(t, s.Agent("a").Messages().CompleteBatch(ctx, "b1"))
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "late", BatchID: "b1"})
	wantErr(t, err, memory.ErrInvalidArgument, "append to complete batch")
	m4, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "next", BatchID: "b2"})
	must(t, err)
	msgs, err := s.Agent("a").Messages().List(ctx, nil)
	must(t, err)
	if len(msgs) != 4 || msgs[1].ToolCalls[0].Name != "search" || string(msgs[1].ToolCalls[0].Arguments) != `{"q":"x"}` || msgs[2].ToolCallID != "c1" {
		t.Fatalf("messages = %+v", msgs)
	}
	last, _ := s.Agent("a").Messages().List(ctx, &memory.MessageQuery{Limit: 2, Newest: true})
	if len(last) != 2 || last[1].ID != m4.ID {
		t.Fatalf("newest 2 = %+v", last)
	}
	b1, _ := s.Agent("a").Messages().List(ctx, &memory.MessageQuery{BatchID: "b1"})
	if len(b1) != 3 {
		t.Fatalf("batch b1 = %d messages", len(b1))
	}
	bs, err := s.Agent("a").Messages().Batches(ctx)
	must(t, err)
	if len(bs) != 2 || !bs[0].Complete || bs[1].Complete {
		t.Fatalf("batches = %+v", bs)
	}
	s1, err := s.Agent("a").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: m1.ID, LastMessageID: m2.ID, Content: "greeting"})
	must(t, err)
	s2, err := s.Agent("a").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: m1.ID, LastMessageID: m4.ID, Content: "greeting and more", PreviousID: s1.ID})
	must(t, err)
	latest, err := s.Agent("a").Messages().LatestSummary(ctx)
	must(t, err)
	if latest.ID != s2.ID || latest.PreviousID != s1.ID || latest.Content != "greeting and more" {
		t.Fatalf("latest summary = %+v", latest)
	}
	_, err = s.Agent("a").Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: 5, LastMessageID: 1})
	wantErr(t, err, memory.ErrInvalidArgument, "inverted summary range")
}

func testSearch(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "garden", Description: "plants", Value: "The tomatoes need watering every morning."})
	must(t, err)
	_, err = s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Tomato blight appeared in July", Tags: []string{"garden"}})
	must(t, err)
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "should I water the tomatoes?", BatchID: "b"})
	must(t, err)
	res, err := s.Agent("a").Search(ctx, "tomatoes watering", search.NewOptions().Mode(search.FTS))
	must(t, err)
	if len(res) != 3 {
		t.Fatalf("found %d, want 3: %+v", len(res), res)
	}
	for _, r := range res {
		if r.Source.FTSRank == 0 || r.Snippet == "" {
			t.Fatalf("result without score source or snippet: %+v", r)
		}
	}
	// A block edit is re-indexed.
	must(t, s.Agent("a").Block("garden").SetText(ctx, "Roses by the fence."))
	res, _ = s.Agent("a").Search(ctx, "roses", search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks))
	if len(res) != 1 {
		t.Fatalf("edited block not re-indexed: %+v", res)
	}
	for _, q := range []string{`"unbalanced`, `AND OR NOT`, `title:(x`, `NEAR(a b`, `*`, `日本語 テスト`, "\x00", `🙂`} {
		if _, err := s.Agent("a").Search(ctx, q, nil); err != nil && !errors.Is(err, search.ErrInvalidQuery) {
			t.Errorf("query %q: %v", q, err)
		}
	}
	_, err = s.Agent("a").Search(ctx, "", nil)
	wantErr(t, err, search.ErrInvalidQuery, "empty query")
}

// testMessagesInContext: a message is found by the words of the two
// messages before and the two after it in the same batch (more weakly than
// by its own), and only of those: not of an adjacent message of another
// batch or agent.
func testMessagesInContext(t *testing.T, open Opener) {
	s := open(t, nil)
	defer s.Close()
	a := s.Agent("a").Messages()
	for _, m := range []memory.Message{
		{Role: memory.RoleUser, BatchID: "s1", Content: "Caroline: I went to a transgender support group yesterday."},
		{Role: memory.RoleAssistant, BatchID: "s1", Content: "Melanie: That sounds powerful. What stayed with you?"},
		{Role: memory.RoleUser, BatchID: "s1", Content: "Caroline: The stories people shared."},
		{Role: memory.RoleUser, BatchID: "s2", Content: "Caroline: Painting again this weekend."},
	} {
		_, err := a.Append(ctx, m)
		must(t, err)
	}
	_, err := s.Agent("b").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "s1", Content: "Bob: nothing to see"})
	must(t, err)
	res, err := s.Agent("a").Search(ctx, "transgender support group", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
	must(t, err)
	var got []string
	for _, r := range res {
		got = append(got, r.Content)
	}
	want := []string{
		"Caroline: I went to a transgender support group yesterday.", // its own words
		"Melanie: That sounds powerful. What stayed with you?",       // the turn before it
		"Caroline: The stories people shared.",                       // two turns before it (a longer context)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("search found %q, want %q (the message itself first, then the replies after it)", got, want)
	}
	// "stories" is in the third message: it ranks first, then the two
	// before it, which hold it as context.
	res, err = s.Agent("a").Search(ctx, "stories shared", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
	must(t, err)
	got = got[:0]
	for _, r := range res {
		got = append(got, r.Content)
	}
	if len(got) != 3 || got[0] != "Caroline: The stories people shared." ||
		!slices.Contains(got, "Melanie: That sounds powerful. What stayed with you?") ||
		!slices.Contains(got, "Caroline: I went to a transgender support group yesterday.") {
		t.Fatalf("search found %q, want the third message, then the two before it", got)
	}
}

// testMessageSeqExtremes: a message's seq may be any non-negative int,
// the largest included, and its context is still its neighbours': the
// index's seq - 1 and seq + 1 must not overflow (on PostgreSQL, BIGINT
// arithmetic that overflows is an error, and once failed every append at
// the end of the range and every load of the text cache). A batch at
// the largest has no next seq: an append asking for one is refused, not
// given the smallest int.
func testMessageSeqExtremes(t *testing.T, open Opener) {
	s := open(t, nil)
	defer s.Close()
	out, err := s.Agent("a").Messages().AppendMany(ctx, []memory.Message{
		{Role: memory.RoleUser, BatchID: "edge", Seq: math.MaxInt64 - 1, Content: "the penultimate albatross"},
		{Role: memory.RoleAssistant, BatchID: "edge", Seq: math.MaxInt64, Content: "the final word"},
	})
	must(t, err)
	for _, many := range []bool{false, true} {
		next := memory.Message{Role: memory.RoleUser, BatchID: "edge", Content: "one word past the end"}
		if many {
			_, err = s.Agent("a").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, BatchID: "fine", Content: "a first line"}, next})
		} else {
			_, err = s.Agent("a").Messages().Append(ctx, next)
		}
		wantErr(t, err, memory.ErrInvalidArgument, "an append after seq MaxInt64")
	}
	all, err := s.Agent("a").Messages().List(ctx, nil)
	must(t, err)
	if len(all) != 2 {
		t.Fatalf("%d messages after the refused appends, want the 2 written", len(all))
	}
	for _, tc := range []struct {
		query string
		want  []int64
	}{
		{"albatross", []int64{out[0].ID, out[1].ID}}, // its own, then the message after it by its context
		{"final", []int64{out[1].ID, out[0].ID}},
	} {
		res, err := s.Agent("a").Search(ctx, tc.query, search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
		must(t, err)
		var got []int64
		for _, r := range res {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("search %q found %v, want %v", tc.query, got, tc.want)
		}
	}
}

func testCancelled(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "b", Value: "v"})
	must(t, err)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	calls := map[string]error{}
	calls["CreateBlock"] = func() error { _, err := s.Agent("a").CreateBlock(cctx, memory.BlockSpec{Label: "c"}); return err }()
	calls["GetBlock"] = func() error { _, err := s.Agent("a").Block("b").Doc(cctx); return err }()
	calls["AppendToBlock"] = s.Agent("a").Block("b").Append(cctx, "x")
	calls["ListBlocks"] = func() error { _, err := s.Agent("a").Blocks(cctx); return err }()
	calls["InsertArchival"] = func() error {
		_, err := s.Agent("a").Archival().Insert(cctx, memory.ArchivalEntry{Content: "x"})
		return err
	}()
	calls["AppendMessage"] = func() error {
		_, err := s.Agent("a").Messages().Append(cctx, memory.Message{Role: memory.RoleUser, BatchID: "b"})
		return err
	}()
	calls["Search"] = func() error { _, err := s.Agent("a").Search(cctx, "v", nil); return err }()
	for name, err := range calls {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: err = %v", name, err)
		}
	}
	if r, _ := s.Agent("a").Block("b").Render(ctx); r != "v" {
		t.Fatalf("cancelled append changed the block: %q", r)
	}
	if _, err := s.Agent("a").Block("c").Doc(ctx); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("cancelled create left a block: %v", err)
	}
}

// testConcurrentAgents: agents in goroutines append to one shared block and
// their own blocks; no update is lost.
func testConcurrentAgents(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "board", CharLimit: 100000})
	must(t, err)
	const agents, each = 6, 20
	for i := 0; i < agents; i++ {
		must(t, s.Agent("owner").Block("board").Share(ctx, fmt.Sprintf("agent-%d", i), blocks.Append))
	}
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for i := 0; i < agents; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("agent-%d", i)
			for j := 0; j < each; j++ {
				if err := s.Agent(id).Shared("owner", "board").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: fmt.Sprintf("[%s:%d]", id, j)}); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := s.Agent("owner").Block("board").Render(ctx)
	must(t, err)
	for i := 0; i < agents; i++ {
		for j := 0; j < each; j++ {
			if n := strings.Count(r, fmt.Sprintf("[agent-%d:%d]", i, j)); n != 1 {
				t.Fatalf("entry agent-%d:%d present %d times", i, j, n)
			}
		}
	}
}

// testBlocksStamp: the stamp changes with every kind of change to the
// blocks an agent sees (own and shared), and only then.
func testBlocksStamp(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	stamp := func(agent string) memory.BlocksStamp {
		t.Helper()
		// A write may start its block's new epoch behind it
		// (Options.HistoryLimit), and the switch, when it lands, moves
		// the stamp as any change to the block does: Flush waits for it,
		// so each step's stamp is the one its own writes left.
		must(t, s.Flush(ctx))
		st, err := s.Agent(agent).BlocksStamp(ctx)
		must(t, err)
		return st
	}
	// seen records every stamp of agent "a" so far: a stamp must never come
	// back after a change (that would make a stale cached listing look
	// fresh).
	seen := map[memory.BlocksStamp]string{}
	cur := stamp("a")
	seen[cur] = "start"
	changed := func(what string, f func() error) {
		t.Helper()
		must(t, f())
		next := stamp("a")
		if next == cur {
			t.Fatalf("%s: stamp unchanged (%+v)", what, next)
		}
		if prev, ok := seen[next]; ok {
			t.Fatalf("%s: stamp %+v repeats the one after %s", what, next, prev)
		}
		seen[next], cur = what, next
	}
	same := func(what string, f func() error) {
		t.Helper()
		must(t, f())
		if next := stamp("a"); next != cur {
			t.Fatalf("%s: stamp changed %+v -> %+v", what, cur, next)
		}
	}

	changed("create", func() error {
		_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Permission: blocks.Admin, Value: "one"})
		return err
	})
	changed("append", func() error { return s.Agent("a").Block("notes").Append(ctx, " two") })
	changed("replace", func() error { _, err := s.Agent("a").Block("notes").Replace(ctx, "two", "2"); return err })
	changed("set text", func() error { return s.Agent("a").Block("notes").SetText(ctx, "three") })
	changed("write through a view", func() error {
		doc, err := s.Agent("a").Block("notes").Doc(ctx)
		if err != nil {
			return err
		}
		if err := doc.AppendText(" four", blocks.Agent); err != nil {
			return err
		}
		return s.Agent("a").Block("notes").Persist(ctx)
	})
	changed("pin", func() error { return s.Agent("a").Block("notes").SetPinned(ctx, true) })
	changed("type", func() error { return s.Agent("a").Block("notes").SetType(ctx, blocks.Core) })
	changed("schema", func() error {
		return s.Agent("a").Block("notes").SetSchema(ctx, schema.Text{})
	})

	// Reads, no-op edits, refused edits and other agents' unshared blocks
	// leave it alone.
	same("reads", func() error {
		if _, err := s.Agent("a").Blocks(ctx); err != nil {
			return err
		}
		if _, err := s.Agent("a").SharedBlocks(ctx); err != nil {
			return err
		}
		if _, err := s.Agent("a").Block("notes").Doc(ctx); err != nil {
			return err
		}
		_, err := s.Agent("a").Block("notes").Render(ctx)
		return err
	})
	same("replace without a match", func() error {
		if _, err := s.Agent("a").Block("notes").Replace(ctx, "absent", "x"); !errors.Is(err, memory.ErrNoMatch) {
			return fmt.Errorf("replace without a match: %v, want ErrNoMatch", err)
		}
		return nil
	})
	same("same text again", func() error { return s.Agent("a").Block("notes").SetText(ctx, "three four") })
	same("refused edit", func() error {
		if err := s.Agent("a").Block("notes").Apply(ctx, memory.Edit{Op: blocks.OpPushItem, Value: "x"}); err == nil {
			return errors.New("push_item on a text block succeeded")
		}
		return nil
	})
	same("messages and archival", func() error {
		if _, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b1", Content: "hi"}); err != nil {
			return err
		}
		_, err := s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "fact"})
		return err
	})
	same("another agent's blocks", func() error {
		if _, err := s.Agent("b").CreateBlock(ctx, memory.BlockSpec{Label: "board", Permission: blocks.Admin, Value: "start"}); err != nil {
			return err
		}
		if _, err := s.Agent("b").CreateBlock(ctx, memory.BlockSpec{Label: "private", Permission: blocks.Admin}); err != nil {
			return err
		}
		return s.Agent("b").Block("board").Append(ctx, " more")
	})

	// Shares: granting, the owner's edits and reconfiguration of a shared
	// block, a sharee's own write, re-sharing, unsharing, deleting.
	changed("share", func() error { return s.Agent("b").Block("board").Share(ctx, "a", blocks.Append) })
	changed("owner edits the shared block", func() error { return s.Agent("b").Block("board").Append(ctx, " again") })
	changed("sharee edits the shared block", func() error {
		return s.Agent("a").Shared("b", "board").Apply(ctx, memory.Edit{Op: blocks.OpAppendText, Text: " from a"})
	})
	changed("owner pins the shared block", func() error { return s.Agent("b").Block("board").SetPinned(ctx, true) })
	same("owner edits an unshared block", func() error { return s.Agent("b").Block("private").Append(ctx, "x") })
	changed("re-share with another permission", func() error { return s.Agent("b").Block("board").Share(ctx, "a", blocks.ReadWrite) })
	changed("share a second block", func() error { return s.Agent("b").Block("private").Share(ctx, "a", blocks.ReadOnly) })
	changed("unshare", func() error { return s.Agent("b").Block("private").Unshare(ctx, "a") })
	// Unshare one block and share another: same number of blocks.
	changed("swap shares", func() error {
		if err := s.Agent("b").Block("board").Unshare(ctx, "a"); err != nil {
			return err
		}
		return s.Agent("b").Block("private").Share(ctx, "a", blocks.ReadOnly)
	})
	changed("owner deletes a shared block", func() error { return s.Agent("b").Block("private").Delete(ctx) })

	// Own blocks: deleting, and deleting then creating another block in
	// its place (same count, possibly the same row id).
	changed("create second", func() error {
		_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "tmp", Permission: blocks.Admin})
		return err
	})
	changed("delete", func() error { return s.Agent("a").Block("tmp").Delete(ctx) })
	changed("create after a delete", func() error {
		_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "tmp2", Permission: blocks.Admin})
		return err
	})
	changed("replace a block by another", func() error {
		if err := s.Agent("a").Block("tmp2").Delete(ctx); err != nil {
			return err
		}
		_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "tmp3", Permission: blocks.Admin})
		return err
	})

	if _, err := s.Agent("").BlocksStamp(ctx); !errors.Is(err, memory.ErrInvalidArgument) {
		t.Fatalf("BlocksStamp(\"\"): err = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Agent("a").BlocksStamp(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("BlocksStamp with a cancelled context: err = %v", err)
	}
}

// testEditErrors: replace_text without a match, and proposals that could
// never apply.
func testEditErrors(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "alpha beta"})
	must(t, err)
	wantErr(t, s.Agent("a").Block("notes").Apply(ctx, memory.Edit{Op: blocks.OpReplaceText, Old: "gamma", Text: "x"}),
		memory.ErrNoMatch, "replace_text without a match")
	if found, err := s.Agent("a").Block("notes").Replace(ctx, "gamma", "x"); found || !errors.Is(err, memory.ErrNoMatch) {
		t.Fatalf("ReplaceInBlock(absent) = %v, %v; want false, ErrNoMatch", found, err)
	}
	must(t, s.Agent("a").Block("notes").Apply(ctx, memory.Edit{Op: blocks.OpReplaceText, Old: "beta", Text: "gamma"}))
	if r, _ := s.Agent("a").Block("notes").Render(ctx); r != "alpha gamma" {
		t.Fatalf("rendered = %q", r)
	}

	// Edit.Apply is the store's edit runner: on a fork it changes nothing.
	doc, err := s.Agent("a").Block("notes").Doc(ctx)
	must(t, err)
	fork, err := doc.Fork()
	must(t, err)
	found, err := memory.Edit{Op: blocks.OpReplaceText, Old: "alpha", Text: "omega"}.Apply(fork, blocks.Agent)
	if !found || err != nil {
		t.Fatalf("Apply on a fork = %v, %v", found, err)
	}
	if got, _ := fork.Text(); got != "omega gamma" {
		t.Fatalf("fork = %q", got)
	}
	if found, err := (memory.Edit{Op: blocks.OpReplaceText, Old: "zzz", Text: "x"}).Apply(fork, blocks.Agent); found || !errors.Is(err, memory.ErrNoMatch) {
		t.Fatalf("Apply without a match = %v, %v; want false, ErrNoMatch", found, err)
	}
	if _, err := (memory.Edit{Op: "explode"}).Apply(fork, blocks.Agent); !errors.Is(err, memory.ErrInvalidArgument) {
		t.Fatalf("Apply of an unknown op: %v", err)
	}
	if r, _ := s.Agent("a").Block("notes").Render(ctx); r != "alpha gamma" {
		t.Fatalf("fork edits reached the block: %q", r)
	}

	// Proposals are tried first; one that could never apply is refused and
	// not stored.
	_, err = s.Agent("human").CreateBlock(ctx, memory.BlockSpec{Label: "prefs", Value: "likes: tea", Permission: blocks.Admin,
		CharLimit: 40})

	must(t, err)
	must(t, s.Agent("human").Block("prefs").Share(ctx, "a", blocks.Human))
	_, err = s.Agent("human").CreateBlock(ctx, memory.BlockSpec{Label: "card", Permission: blocks.Admin, Schema: schema.Map{Fields: []schema.FieldDef{
		{Name: "name", Type: schema.FieldString}, {Name: "plan", Type: schema.FieldString, ReadOnly: true},
	}}})

	must(t, err)
	must(t, s.Agent("human").Block("card").Share(ctx, "a", blocks.Partner))
	refused := []struct {
		label string
		e     memory.Edit
		want  error
	}{
		{"prefs", memory.Edit{Op: blocks.OpReplaceText, Old: "coffee", Text: "tea"}, memory.ErrNoMatch},
		{"prefs", memory.Edit{Op: blocks.OpPushItem, Value: "x"}, blocks.ErrWrongSchema},
		{"prefs", memory.Edit{Op: blocks.OpAppendText, Text: strings.Repeat("x", 100)}, blocks.ErrLimit},
		{"card", memory.Edit{Op: blocks.OpSetField, Field: "plan", Value: "pro"}, blocks.ErrPermission},
		{"card", memory.Edit{Op: blocks.OpSetField, Field: "name", Value: 42}, schema.ErrInvalid},
		{"prefs", memory.Edit{Op: "explode"}, memory.ErrInvalidArgument},
	}
	for _, tc := range refused {
		_, err := s.Agent("a").Shared("human", tc.label).Propose(ctx, tc.e, "r")
		wantErr(t, err, tc.want, fmt.Sprintf("ProposeEdit %s on %s", tc.e.Op, tc.label))
		// ApplyEdit of the same edit needs approval, would keep it as a
		// proposal, and so refuses it the same way.
		err = s.Agent("a").Shared("human", tc.label).Apply(ctx, tc.e)
		var pe *memory.ProposalError
		if errors.As(err, &pe) {
			t.Fatalf("ApplyEdit %s on %s kept proposal #%d of an edit that cannot apply", tc.e.Op, tc.label, pe.ProposalID)
		}
		wantErr(t, err, tc.want, fmt.Sprintf("ApplyEdit %s on %s", tc.e.Op, tc.label))
	}
	ps, err := s.Agent("human").Proposals(ctx)
	must(t, err)
	if len(ps) != 0 {
		t.Fatalf("refused proposals were stored: %+v", ps)
	}
	// A valid proposal is stored; if the block changes so that it no longer
	// applies, approving it fails and leaves it pending.
	p, err := s.Agent("a").Shared("human", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpReplaceText, Old: "tea", Text: "coffee"}, "r")
	must(t, err)
	must(t, s.Agent("human").Block("prefs").SetText(ctx, "likes: water"))
	wantErr(t, s.Agent("human:the-human").ApproveProposal(ctx, p.ID), memory.ErrNoMatch, "approve a proposal that no longer applies")
	ps, _ = s.Agent("human").Block("prefs").Proposals(ctx)
	if len(ps) != 1 || ps[0].Status != "pending" {
		t.Fatalf("proposals after a failed approval: %+v", ps)
	}
	if r, _ := s.Agent("human").Block("prefs").Render(ctx); r != "likes: water" {
		t.Fatalf("failed approval changed the block: %q", r)
	}
}

// testProposalRights: who may propose and who may decide, and what a
// revoked share does to pending proposals.
func testProposalRights(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	_, err := s.Agent("owner").CreateBlock(ctx, memory.BlockSpec{Label: "prefs", Value: "tea"})
	must(t, err)
	must(t, s.Agent("owner").Block("prefs").Share(ctx, "partner", blocks.Partner))
	must(t, s.Agent("owner").Block("prefs").Share(ctx, "reader", blocks.ReadOnly))
	must(t, s.Agent("owner").Block("prefs").Share(ctx, "admin", blocks.Admin))
	_, err = s.Agent("stranger").CreateBlock(ctx, memory.BlockSpec{Label: "own"})
	must(t, err)

	_, err = s.Agent("reader").Shared("owner", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "coffee"}, "")
	wantErr(t, err, blocks.ErrPermission, "a ReadOnly sharee proposing")
	p1, err := s.Agent("partner").Shared("owner", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: ", milk"}, "")
	must(t, err)
	for _, who := range []string{"stranger", "reader", "partner", "", "human:"} {
		if err := s.Agent(who).ApproveProposal(ctx, p1.ID); err == nil {
			t.Fatalf("%q approved a proposal on another agent's block", who)
		}
		if err := s.Agent(who).RejectProposal(ctx, p1.ID, "no"); err == nil {
			t.Fatalf("%q rejected a proposal on another agent's block", who)
		}
	}
	if r, _ := s.Agent("owner").Block("prefs").Render(ctx); r != "tea" {
		t.Fatalf("refused approvals changed the block: %q", r)
	}
	must(t, s.Agent("admin").ApproveProposal(ctx, p1.ID))
	p2, err := s.Agent("partner").Shared("owner", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: ", sugar"}, "")
	must(t, err)
	must(t, s.Agent("owner").ApproveProposal(ctx, p2.ID))
	if r, _ := s.Agent("owner").Block("prefs").Render(ctx); r != "tea, milk, sugar" {
		t.Fatalf("after approvals: %q", r)
	}
	// Revoking the share withdraws the sharee's pending proposals.
	p3, err := s.Agent("partner").Shared("owner", "prefs").Propose(ctx, memory.Edit{Op: blocks.OpSetText, Text: "water"}, "")
	must(t, err)
	must(t, s.Agent("owner").Block("prefs").Unshare(ctx, "partner"))
	if err := s.Agent("owner").ApproveProposal(ctx, p3.ID); err == nil {
		t.Fatal("approved a proposal whose proposer's share was revoked")
	}
	ps, err := s.Agent("owner").Block("prefs").Proposals(ctx)
	must(t, err)
	if got := ps[len(ps)-1]; got.ID != p3.ID || got.Status != "withdrawn" {
		t.Fatalf("revoked sharee's proposal = %+v, want withdrawn", got)
	}
	if r, _ := s.Agent("owner").Block("prefs").Render(ctx); r != "tea, milk, sugar" {
		t.Fatalf("a withdrawn proposal changed the block: %q", r)
	}
}

// An import of rows the store holds already (the same dump twice) fails
// with ErrExists and adds nothing, whichever table refuses it.
func testImportTwice(t *testing.T, open Opener) {
	src := openStore(t, open, nil)
	_, err := src.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "hi", BatchID: "b1"})
	must(t, err)
	_, err = src.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "a note", Tags: []string{"t"}})
	must(t, err)
	d, err := src.Export(ctx)
	must(t, err)
	dst := openStore(t, open, nil)
	_, err = dst.Import(ctx, d)
	must(t, err)
	_, err = dst.Import(ctx, d)
	wantErr(t, err, memory.ErrExists, "the same dump imported twice")
	msgs, err := dst.Agent("a").Messages().List(ctx, nil)
	must(t, err)
	if len(msgs) != 1 {
		t.Fatalf("%d messages after a refused second import, want 1", len(msgs))
	}
	d.Archival = nil
	_, err = dst.Import(ctx, d)
	wantErr(t, err, memory.ErrExists, "a dump whose batch the store holds")
}
