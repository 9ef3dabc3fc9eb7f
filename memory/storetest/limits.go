package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// LimitOpener returns a fresh, empty store opened with o, whose per-entry
// caps and quota the suite sets; the suite closes it.
type LimitOpener func(t *testing.T, o *memory.Options) *memory.Store

// RunLimitTests runs the per-entry caps and per-agent quota tests
// (memory.Options.MaxArchivalBytes to AgentQuotaBytes) against stores
// made by open.
func RunLimitTests(t *testing.T, open LimitOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, LimitOpener)
	}{
		{"CapBoundaries", testCapBoundaries},
		{"CapsOff", testCapsOff},
		{"QuotaAccounting", testQuotaAccounting},
		{"QuotaRefuses", testQuotaRefuses},
		{"QuotaConcurrent", testQuotaConcurrent},
		{"QuotaLogRotation", testQuotaLogRotation},
		{"QuotaImport", testQuotaImport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func openLimited(t *testing.T, open LimitOpener, o *memory.Options) *memory.Store {
	t.Helper()
	s := open(t, o)
	t.Cleanup(func() { s.Close() })
	return s
}

// wantRefused checks that err is target and its message names every one
// of want.
func wantRefused(t *testing.T, err, target error, what string, want ...string) {
	t.Helper()
	wantErr(t, err, target, what)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q does not name %q", what, err, w)
		}
	}
}

// stored is everything agent holds: its archival entries (superseded
// included) and messages, as the store lists them.
func stored(t *testing.T, s *memory.Store, agent string) ([]memory.ArchivalEntry, []memory.Message) {
	t.Helper()
	arch, err := s.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true, Limit: 1 << 30})
	must(t, err)
	msgs, err := s.Agent(agent).Messages().List(ctx, nil)
	must(t, err)
	return arch, msgs
}

// wantNothingStored checks that agent holds no archival entry, no message
// and no usage.
func wantNothingStored(t *testing.T, s *memory.Store, agent, what string) {
	t.Helper()
	arch, msgs := stored(t, s, agent)
	used, err := s.Agent(agent).StorageUsed(ctx)
	must(t, err)
	if len(arch) != 0 || len(msgs) != 0 || used != 0 {
		t.Fatalf("%s: agent %q holds %d entries, %d messages, %d bytes; want nothing", what, agent, len(arch), len(msgs), used)
	}
}

// entryBytes is what an archival entry counts toward its agent's usage,
// computed from the entry as listed (the store stores metadata and tags
// as JSON, which these encodings reproduce).
func entryBytes(e memory.ArchivalEntry) int64 {
	meta, _ := json.Marshal(e.Metadata)
	if e.Metadata == nil {
		meta = []byte("{}")
	}
	tags, _ := json.Marshal(append([]string{}, e.Tags...))
	return int64(len(e.Content) + len(meta) + len(tags) + 3*max(len(tags)-2, 0) + memory.UsageRowBytes)
}

// messageBytes is what a message counts toward its agent's usage.
func messageBytes(m memory.Message) int64 {
	calls := m.ToolCalls
	if calls == nil {
		calls = []memory.ToolCall{}
	}
	cj, _ := json.Marshal(calls)
	return int64(len(m.Content) + len(m.Name) + len(m.ToolCallID) + len(cj) + memory.UsageRowBytes)
}

// wantUsage checks that StorageUsed is the sum of what agent's rows
// count, and returns it.
func wantUsage(t *testing.T, s *memory.Store, agent string) int64 {
	t.Helper()
	arch, msgs := stored(t, s, agent)
	var want int64
	for _, e := range arch {
		want += entryBytes(e)
	}
	for _, m := range msgs {
		want += messageBytes(m)
	}
	used, err := s.Agent(agent).StorageUsed(ctx)
	must(t, err)
	if used != want {
		t.Fatalf("StorageUsed(%q) = %d, want %d (%d entries, %d messages)", agent, used, want, len(arch), len(msgs))
	}
	return used
}

// testEntryCaps: with the default caps, an archival entry, a batch, a
// supersession, a message and an import past a cap each fail with
// ErrTooLarge, naming the agent, the field, the size and the cap, and
// store nothing.
func testEntryCaps(t *testing.T, open Opener) {
	s := openStore(t, open, nil)
	big := strings.Repeat("x", memory.DefaultMaxArchivalBytes+1)
	manyTags := make([]string, 200_000)
	for i := range manyTags {
		manyTags[i] = fmt.Sprint("t", i)
	}
	bigMeta := map[string]any{"blob": strings.Repeat("m", memory.DefaultMaxMetadataBytes)}
	for _, tc := range []struct {
		name string
		e    memory.ArchivalEntry
		want []string
	}{
		{"content", memory.ArchivalEntry{Content: big}, []string{`"cap"`, "content", fmt.Sprint(len(big)), fmt.Sprint(memory.DefaultMaxArchivalBytes), "MaxArchivalBytes"}},
		{"metadata", memory.ArchivalEntry{Content: "c", Metadata: bigMeta}, []string{`"cap"`, "metadata", fmt.Sprint(memory.DefaultMaxMetadataBytes + 11), fmt.Sprint(memory.DefaultMaxMetadataBytes), "MaxMetadataBytes"}},
		{"tag count", memory.ArchivalEntry{Content: "c", Tags: manyTags}, []string{`"cap"`, "tags", "200000 given", fmt.Sprint(memory.DefaultMaxTags), "MaxTags"}},
		{"tag length", memory.ArchivalEntry{Content: "c", Tags: []string{"ok", strings.Repeat("t", memory.DefaultMaxTagBytes+1)}}, []string{`"cap"`, "tag 1", fmt.Sprint(memory.DefaultMaxTagBytes + 1), "MaxTagBytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Agent("cap").Archival().Insert(ctx, tc.e)
			wantRefused(t, err, memory.ErrTooLarge, "InsertArchival", tc.want...)
			wantNothingStored(t, s, "cap", "InsertArchival")
			_, err = s.Agent("cap").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "fine"}, tc.e}, nil)
			wantRefused(t, err, memory.ErrTooLarge, "InsertArchivalBatch", tc.want...)
			if ee := (*memory.EntryError)(nil); !errors.As(err, &ee) || ee.Index != 1 {
				t.Errorf("InsertArchivalBatch: %v, want an EntryError for entry 1", err)
			}
			wantNothingStored(t, s, "cap", "InsertArchivalBatch")
		})
	}
	// Duplicate and blank tags do not count: 64 distinct of 130 given.
	var dup []string
	for i := range 2 * memory.DefaultMaxTags {
		dup = append(dup, fmt.Sprint("t", i%memory.DefaultMaxTags), " ")
	}
	e, err := s.Agent("tags").Archival().Insert(ctx, memory.ArchivalEntry{Content: "c", Tags: dup})
	must(t, err)
	if len(e.Tags) != memory.DefaultMaxTags {
		t.Fatalf("stored %d tags, want %d", len(e.Tags), memory.DefaultMaxTags)
	}

	old, err := s.Agent("sup").Archival().Insert(ctx, memory.ArchivalEntry{Content: "the old fact"})
	must(t, err)
	before := wantUsage(t, s, "sup")
	_, err = s.Agent("sup").Archival().Supersede(ctx, old.ID, memory.ArchivalEntry{Content: big})
	wantRefused(t, err, memory.ErrTooLarge, "SupersedeArchival", `"sup"`, "content")
	if got, err := s.Agent("sup").Archival().Get(ctx, old.ID); err != nil || got.ValidTo != nil {
		t.Fatalf("a refused supersession changed the old entry: %+v %v", got, err)
	}
	if arch, _ := stored(t, s, "sup"); len(arch) != 1 || wantUsage(t, s, "sup") != before {
		t.Fatalf("a refused supersession stored something: %d entries", len(arch))
	}

	bigMsg := strings.Repeat("y", memory.DefaultMaxMessageBytes+1)
	_, err = s.Agent("msg").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b", Content: bigMsg})
	wantRefused(t, err, memory.ErrTooLarge, "AppendMessage", `"msg"`, "content", fmt.Sprint(len(bigMsg)), fmt.Sprint(memory.DefaultMaxMessageBytes), "MaxMessageBytes")
	_, err = s.Agent("msg").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, BatchID: "b", Content: "fine"},
		{Role: memory.RoleAssistant, BatchID: "b", Content: "ok", ToolCalls: []memory.ToolCall{{ID: "1", Name: "f", Arguments: json.RawMessage(`"` + bigMsg + `"`)}}}})

	wantRefused(t, err, memory.ErrTooLarge, "AppendMessages with huge tool calls", `"msg"`, "tool calls", "(message 1)")
	wantNothingStored(t, s, "msg", "refused messages")
	if bs, _ := s.Agent("msg").Messages().Batches(ctx); len(bs) != 0 {
		t.Fatalf("refused messages started batches %+v", bs)
	}

	imp := s
	for _, tc := range []struct {
		name string
		d    memory.Dump
		want []string
	}{
		{"archival", memory.Dump{Version: memory.DumpVersion, Archival: []memory.ArchivalEntry{
			{ID: 5, Agent: "imp", Content: "fine"}, {ID: 9, Agent: "imp", Content: big}}},
			[]string{"archival entry 1 (id 9)", `"imp"`, "content", "MaxArchivalBytes"}},
		{"message", memory.Dump{Version: memory.DumpVersion, Messages: []memory.Message{
			{ID: 3, Agent: "imp", Role: memory.RoleUser, BatchID: "b", Seq: 1, Content: bigMsg}},
			Batches: []memory.Batch{{Agent: "imp", ID: "b"}}},
			[]string{"message 0 (id 3)", `"imp"`, "MaxMessageBytes"}},
	} {
		_, err := imp.Import(ctx, &tc.d)
		wantRefused(t, err, memory.ErrTooLarge, "Import of an over-cap "+tc.name, tc.want...)
		wantNothingStored(t, s, "imp", "a refused import")
	}
}

// testCapBoundaries: an entry exactly at each cap is stored, one byte
// (or tag) more is refused.
func testCapBoundaries(t *testing.T, open LimitOpener) {
	s := openLimited(t, open, &memory.Options{MaxArchivalBytes: 100, MaxMetadataBytes: 40, MaxTags: 3, MaxTagBytes: 5, MaxMessageBytes: 60})
	meta := func(n int) map[string]any { return map[string]any{"k": strings.Repeat("v", n-8)} } // {"k":"…"} is n bytes
	for _, tc := range []struct {
		name     string
		fit, big memory.ArchivalEntry
		field    string
	}{
		{"content", memory.ArchivalEntry{Content: strings.Repeat("é", 50)}, memory.ArchivalEntry{Content: strings.Repeat("é", 50) + "x"}, "content"},
		{"metadata", memory.ArchivalEntry{Content: "c", Metadata: meta(40)}, memory.ArchivalEntry{Content: "c", Metadata: meta(41)}, "metadata"},
		{"tags", memory.ArchivalEntry{Content: "c", Tags: []string{"a", "b", "c", "a"}}, memory.ArchivalEntry{Content: "c", Tags: []string{"a", "b", "c", "d"}}, "tags"},
		{"tag length", memory.ArchivalEntry{Content: "c", Tags: []string{" abcde "}}, memory.ArchivalEntry{Content: "c", Tags: []string{"abcdef"}}, "tag 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Agent("a").Archival().Insert(ctx, tc.fit); err != nil {
				t.Fatalf("at the cap: %v", err)
			}
			_, err := s.Agent("a").Archival().Insert(ctx, tc.big)
			wantRefused(t, err, memory.ErrTooLarge, "past the cap", tc.field)
		})
	}
	if _, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleTool, BatchID: "b", Name: "tool", ToolCallID: "id",
		Content: strings.Repeat("m", 54)}); err != nil {
		t.Fatalf("a message at the cap: %v", err)
	}
	_, err := s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleTool, BatchID: "b", Name: "tool", ToolCallID: "id",
		Content: strings.Repeat("m", 55)})

	wantRefused(t, err, memory.ErrTooLarge, "a message past the cap", "61 bytes", "cap of 60")
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: "b", Content: strings.Repeat("m", 50),
		ToolCalls: []memory.ToolCall{{ID: "1", Name: "f"}}})

	wantRefused(t, err, memory.ErrTooLarge, "a message whose tool calls take it past the cap", "tool calls")
	wantUsage(t, s, "a")
}

// testCapsOff: negative caps store what the defaults refuse.
func testCapsOff(t *testing.T, open LimitOpener) {
	s := openLimited(t, open, &memory.Options{MaxArchivalBytes: -1, MaxMetadataBytes: -1, MaxTags: -1, MaxTagBytes: -1, MaxMessageBytes: -1})
	tags := make([]string, memory.DefaultMaxTags+1)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	tags[0] = strings.Repeat("t", memory.DefaultMaxTagBytes+1)
	e := memory.ArchivalEntry{Content: strings.Repeat("x ", memory.DefaultMaxArchivalBytes/2+1), Tags: tags,
		Metadata: map[string]any{"blob": strings.Repeat("m", memory.DefaultMaxMetadataBytes)}}
	got, err := s.Agent("a").Archival().Insert(ctx, e)
	must(t, err)
	if back, err := s.Agent("a").Archival().Get(ctx, got.ID); err != nil || back.Content != e.Content || len(back.Tags) != len(tags) {
		t.Fatalf("uncapped entry read back: %d bytes, %d tags, %v", len(back.Content), len(back.Tags), err)
	}
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b", Content: strings.Repeat("y", memory.DefaultMaxMessageBytes+1)})
	must(t, err)
	wantUsage(t, s, "a")
}

// testQuotaAccounting: StorageUsed is the sum of what the agent's rows
// count, through inserts, batches, supersessions, messages, tool calls
// and deletes, per agent; the quota is not needed for the count.
func testQuotaAccounting(t *testing.T, open LimitOpener) {
	s := openLimited(t, open, nil)
	if used := wantUsage(t, s, "a"); used != 0 {
		t.Fatalf("an empty store: %d bytes used", used)
	}
	e1, err := s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "Ada lives in Lóndon", Tags: []string{"person", "place"},
		Metadata: map[string]any{"source": "chat", "n": 3}})

	must(t, err)
	if used := wantUsage(t, s, "a"); used != entryBytes(e1) {
		t.Fatalf("one entry: %d bytes, want %d", used, entryBytes(e1))
	}
	_, err = s.Agent("a").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "one"}, {Content: "two", Tags: []string{"x"}}}, nil)
	must(t, err)
	e3, err := s.Agent("a").Archival().Supersede(ctx, e1.ID, memory.ArchivalEntry{Content: "Ada moved to Paris"})
	must(t, err)
	withOld := wantUsage(t, s, "a") // the superseded entry still counts
	_, err = s.Agent("a").Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, BatchID: "b", Content: "hi"},
		{Role: memory.RoleAssistant, BatchID: "b", ToolCalls: []memory.ToolCall{{ID: "c1", Name: "lookup", Arguments: json.RawMessage(`{"q":"x"}`)}}},
		{Role: memory.RoleTool, BatchID: "b", Name: "lookup", ToolCallID: "c1", Content: "found"}})

	must(t, err)
	if wantUsage(t, s, "a") <= withOld {
		t.Fatal("messages did not count")
	}
	_, err = s.Agent("b").Archival().Insert(ctx, memory.ArchivalEntry{Content: "another agent's"})
	must(t, err)
	wantUsage(t, s, "b")
	must(t, s.Agent("a").Archival().Delete(ctx, e1.ID))
	after := wantUsage(t, s, "a")
	must(t, s.Agent("a").Archival().Delete(ctx, e3.ID))
	if got := wantUsage(t, s, "a"); got != after-entryBytes(e3) {
		t.Fatalf("after deleting entry %d: %d bytes, want %d", e3.ID, got, after-entryBytes(e3))
	}
}

// testQuotaRefuses: a write that would take the agent past its quota
// fails with ErrQuota naming the agent, what it holds, what the write adds
// and the quota, and stores nothing; a write exactly reaching the quota
// is stored; other agents are not affected; a delete makes room.
func testQuotaRefuses(t *testing.T, open LimitOpener) {
	one := memory.ArchivalEntry{Content: strings.Repeat("q", 740)} // 740 + 2 + 2 + 256 = 1000 bytes
	if n := entryBytes(one); n != 1000 {
		t.Fatalf("entry of %d bytes", n)
	}
	s := openLimited(t, open, &memory.Options{AgentQuotaBytes: 3000})
	var ids []int64
	for i := range 3 {
		e, err := s.Agent("a").Archival().Insert(ctx, numbered(one, i))
		must(t, err)
		ids = append(ids, e.ID)
	}
	if used := wantUsage(t, s, "a"); used != 3000 {
		t.Fatalf("used %d, want exactly the quota", used)
	}
	_, err := s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "x"})
	wantRefused(t, err, memory.ErrQuota, "InsertArchival past the quota", `"a"`, "holds 3000 bytes", "adds 261", "quota of 3000", "AgentQuotaBytes")
	_, err = s.Agent("a").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "x"}}, nil)
	wantRefused(t, err, memory.ErrQuota, "InsertArchivalBatch past the quota", `"a"`)
	_, err = s.Agent("a").Archival().Supersede(ctx, ids[0], memory.ArchivalEntry{Content: "x"})
	wantRefused(t, err, memory.ErrQuota, "SupersedeArchival past the quota", `"a"`)
	if e, _ := s.Agent("a").Archival().Get(ctx, ids[0]); e.ValidTo != nil {
		t.Fatal("a refused supersession superseded the entry")
	}
	_, err = s.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b", Content: "x"})
	wantRefused(t, err, memory.ErrQuota, "AppendMessage past the quota", `"a"`)
	arch, msgs := stored(t, s, "a")
	if len(arch) != 3 || len(msgs) != 0 || wantUsage(t, s, "a") != 3000 {
		t.Fatalf("refused writes stored something: %d entries, %d messages", len(arch), len(msgs))
	}
	if bs, _ := s.Agent("a").Messages().Batches(ctx); len(bs) != 0 {
		t.Fatalf("a refused message started a batch: %+v", bs)
	}
	// Another agent has its own quota.
	_, err = s.Agent("b").Archival().InsertBatch(ctx, []memory.ArchivalEntry{one, one, one}, nil)
	must(t, err)
	// A batch past the quota stores none of its entries.
	_, err = s.Agent("c").Archival().InsertBatch(ctx, []memory.ArchivalEntry{numbered(one, 0), numbered(one, 1), numbered(one, 2), numbered(one, 3)}, &memory.BatchOptions{Size: 1})
	wantRefused(t, err, memory.ErrQuota, "a batch past the quota", `"c"`, "adds 4000")
	wantNothingStored(t, s, "c", "a batch past the quota")
	// A delete gives the entry's bytes back.
	must(t, s.Agent("a").Archival().Delete(ctx, ids[1]))
	_, err = s.Agent("a").Archival().Insert(ctx, one)
	must(t, err)
	_, err = s.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "x"})
	wantErr(t, err, memory.ErrQuota, "full again")
}

// testQuotaConcurrent: writers racing for the last of an agent's quota
// (archival inserts and message appends, at once) store exactly what
// fits, never more. The race is run for ten agents: one that a check
// outside the write lock loses shows in most rounds, but not in every one.
func testQuotaConcurrent(t *testing.T, open LimitOpener) {
	entry := memory.ArchivalEntry{Content: strings.Repeat("q", 740)}                                   // 1000 bytes
	msg := memory.Message{Role: memory.RoleUser, BatchID: "b", Content: strings.Repeat("m", 1000-258)} // 742 + "[]" + 256
	if entryBytes(entry) != 1000 || messageBytes(msg) != 1000 {
		t.Fatalf("rows of %d and %d bytes", entryBytes(entry), messageBytes(msg))
	}
	const fits, writers = 10, 4
	s := openLimited(t, open, &memory.Options{AgentQuotaBytes: fits*1000 + 999})
	// 10 rounds (a fresh agent each) with the long tests, 3 otherwise.
	rounds := 10
	if !testenv.Long() {
		rounds = 3
	}
	for round := range rounds {
		agent := fmt.Sprint("a", round)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok, full int
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range fits {
					var err error
					if w%2 == 0 {
						_, err = s.Agent(agent).Archival().Insert(ctx, numbered(entry, w*fits+i))
					} else {
						_, err = s.Agent(agent).Messages().Append(ctx, msg)
					}
					mu.Lock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, memory.ErrQuota):
						full++
					default:
						t.Errorf("writer %d: %v", w, err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if ok != fits || full != (writers-1)*fits {
			t.Fatalf("agent %s: %d writes stored, %d refused; want %d and %d", agent, ok, full, fits, (writers-1)*fits)
		}
		if used := wantUsage(t, s, agent); used != fits*1000 {
			t.Fatalf("agent %s: used %d, want %d", agent, used, fits*1000)
		}
	}
}

// testQuotaLogRotation: entries a Log block rotates into archival count
// toward the owner's quota; an append whose rotation would pass it fails
// with ErrQuota and leaves the block as it was.
func testQuotaLogRotation(t *testing.T, open LimitOpener) {
	s := openLimited(t, open, &memory.Options{AgentQuotaBytes: 2000})
	_, err := s.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 2}})
	must(t, err)
	var refused error
	appended := 0
	for i := range 40 {
		err := s.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry %02d %s", i, strings.Repeat("w", 100))})
		if err != nil {
			refused = err
			break
		}
		appended++
	}
	wantRefused(t, refused, memory.ErrQuota, "a rotation past the quota", `"a"`, `"events"`)
	if appended < 3 {
		t.Fatalf("only %d appends before the quota", appended)
	}
	used := wantUsage(t, s, "a")
	if used > 2000 {
		t.Fatalf("used %d, past the quota", used)
	}
	before, err := s.Agent("a").Block("events").Render(ctx)
	must(t, err)
	err = s.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: "one more"})
	wantErr(t, err, memory.ErrQuota, "another append")
	if after, _ := s.Agent("a").Block("events").Render(ctx); after != before {
		t.Fatalf("a refused append changed the block:\n%s\nwas\n%s", after, before)
	}
	if wantUsage(t, s, "a") != used {
		t.Fatal("a refused append changed the usage")
	}
}

// testQuotaImport: an import that would take an agent past its quota
// fails with ErrQuota naming it, and imports nothing.
func testQuotaImport(t *testing.T, open LimitOpener) {
	s := openLimited(t, open, &memory.Options{AgentQuotaBytes: 2500})
	imp := s
	one := memory.ArchivalEntry{Agent: "a", Content: strings.Repeat("q", 740), Metadata: map[string]any{}}
	d := memory.Dump{Version: memory.DumpVersion}
	for i := range 3 {
		e := one
		e.ID = int64(i + 1)
		d.Archival = append(d.Archival, e)
	}
	d.Archival = append(d.Archival, memory.ArchivalEntry{ID: 9, Agent: "b", Content: "b's", Metadata: map[string]any{}})
	_, err := imp.Import(ctx, &d)
	wantRefused(t, err, memory.ErrQuota, "an import past the quota", `"a"`, "adds 3000")
	wantNothingStored(t, s, "a", "a refused import")
	wantNothingStored(t, s, "b", "a refused import")
	d.Archival = slices.Delete(d.Archival, 0, 1)
	rep, err := imp.Import(ctx, &d)
	must(t, err)
	if rep.Archival != 3 {
		t.Fatalf("imported %d entries", rep.Archival)
	}
	if used := wantUsage(t, s, "a"); used != 2000 {
		t.Fatalf("used %d after the import, want 2000", used)
	}
}

// numbered is e with its content's first four bytes replaced by i: the
// same size, a different text (the store keeps one entry per text).
func numbered(e memory.ArchivalEntry, i int) memory.ArchivalEntry {
	e.Content = fmt.Sprintf("%04d", i) + e.Content[4:]
	return e
}
