package letta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
)

// agentFiles are the published Letta agent files of
// ../shared/datasets/letta-af (or $ENGRAM_LETTA_AF). Every test runs on
// each of them alike: none is special-cased.
func agentFiles(t testing.TB) []string {
	t.Helper()
	dir := eval.FindLettaAF()
	if dir == "" {
		testenv.Missing(t, "Letta agent files not found (set ENGRAM_LETTA_AF or place them at ../shared/datasets/letta-af)")
	}
	files, err := eval.LettaAgentFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		testenv.Missing(t, "no .af file in %s", dir)
	}
	return files
}

// raw is an agent file read with no help from the package under test.
type raw struct {
	Agents []map[string]any `json:"agents"`
	Blocks []map[string]any `json:"blocks"`
	Tools  []map[string]any `json:"tools"`
	Groups []map[string]any `json:"groups"`
}

func readRaw(t *testing.T, data []byte) raw {
	t.Helper()
	var s string
	if json.Unmarshal(data, &s) == nil {
		data = []byte(s)
	}
	var r raw
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, str(x))
	}
	return out
}

func byID(list []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, x := range list {
		m[str(x["id"])] = x
	}
	return m
}

func openStore(t testing.TB) *memory.Store {
	t.Helper()
	s, err := memory.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// importFile imports path into a new store and returns the store, the
// report, the raw file and the engram id of each agent by its file id.
func importFile(t *testing.T, path string) (*memory.Store, *letta.Report, raw, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	rep, err := letta.Import(context.Background(), s, data, nil)
	if err != nil {
		t.Fatalf("import %s: %v", filepath.Base(path), err)
	}
	ids := map[string]string{}
	for _, a := range rep.Agents {
		ids[a.FileID] = a.Agent
	}
	return s, rep, readRaw(t, data), ids
}

// compiledPrompt is the id of the message Letta keeps as the compiled
// system prompt: the first in context, when it is a system message.
func compiledPrompt(a map[string]any) string {
	inCtx := strs(a["in_context_message_ids"])
	if len(inCtx) == 0 {
		return ""
	}
	for _, m := range a["messages"].([]any) {
		m := m.(map[string]any)
		if str(m["id"]) == inCtx[0] && str(m["role"]) == "system" {
			return inCtx[0]
		}
	}
	return ""
}

// Every agent of every real file: each block's value byte for byte, its
// limit, read-only and description; shares for blocks several agents
// list; message count and tool-call pairing; the profile; and the
// context the builder makes right after the import.
func TestImportRealAgentFiles(t *testing.T) {
	for _, path := range agentFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ctx := context.Background()
			start := time.Now()
			s, rep, r, ids := importFile(t, path)
			t.Logf("%s: import %v (report %v)", filepath.Base(path), time.Since(start), rep.Duration)
			if len(rep.Agents) != len(r.Agents) {
				t.Fatalf("%d agents imported, the file has %d", len(rep.Agents), len(r.Agents))
			}
			rawBlocks, rawTools := byID(r.Blocks), byID(r.Tools)
			owner := map[string]string{}
			for _, a := range r.Agents {
				for _, bid := range strs(a["block_ids"]) {
					if _, ok := owner[bid]; !ok {
						owner[bid] = ids[str(a["id"])]
					}
				}
			}
			for _, a := range r.Agents {
				id := ids[str(a["id"])]
				if id != strings.TrimSpace(str(a["name"])) {
					t.Errorf("agent %q imported as %q", a["name"], id)
				}
				ag := s.Agent(id)
				shared, err := ag.SharedBlocks(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, bid := range strs(a["block_ids"]) {
					b := rawBlocks[bid]
					label, value := str(b["label"]), str(b["value"])
					var h *memory.Block
					var perm blocks.Permission
					if owner[bid] == id {
						h = ag.Block(label)
						metas, err := ag.Blocks(ctx)
						if err != nil {
							t.Fatal(err)
						}
						i := slices.IndexFunc(metas, func(m memory.BlockMeta) bool { return m.Label == label })
						if i < 0 {
							t.Fatalf("agent %q: no block %q", id, label)
						}
						m := metas[i]
						perm = m.Permission
						if limit := int(b["limit"].(float64)); m.CharLimit != limit {
							t.Errorf("%s/%s: char limit %d, want %d", id, label, m.CharLimit, limit)
						}
						if m.Description != str(b["description"]) {
							t.Errorf("%s/%s: description %q, want %q", id, label, m.Description, b["description"])
						}
						if m.Type != blocks.Core {
							t.Errorf("%s/%s: type %s, want Core (Letta blocks are always in context)", id, label, m.Type)
						}
					} else {
						i := slices.IndexFunc(shared, func(m memory.SharedBlock) bool { return m.SharedFrom == owner[bid] && m.Label == label })
						if i < 0 {
							t.Fatalf("agent %q lists block %q (%s) of %q but it is not shared with it", id, label, bid, owner[bid])
						}
						perm = shared[i].Permission
						h = ag.Shared(owner[bid], label)
					}
					if ro := b["read_only"] == true; (perm == blocks.ReadOnly) != ro {
						t.Errorf("%s/%s: permission %s, read_only %v", id, label, perm, ro)
					}
					doc, err := h.Doc(ctx)
					if err != nil {
						t.Fatal(err)
					}
					v, err := doc.Value()
					if err != nil {
						t.Fatal(err)
					}
					if got, _ := v.(string); got != value {
						t.Errorf("%s/%s: value differs (%d bytes, want %d)", id, label, len(got), len(value))
					}
				}

				// Messages: every one but the compiled system prompt, a
				// tool message per result; calls paired in their batch.
				want, calls := 0, 0
				for _, m := range a["messages"].([]any) {
					m := m.(map[string]any)
					if str(m["id"]) == compiledPrompt(a) {
						continue
					}
					n := 1
					if rets, _ := m["tool_returns"].([]any); str(m["role"]) == "tool" && len(rets) > 1 {
						n = len(rets)
					}
					want += n
					tc, _ := m["tool_calls"].([]any)
					calls += len(tc)
				}
				msgs, err := ag.Messages().List(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) != want {
					t.Errorf("agent %q: %d messages, want %d", id, len(msgs), want)
				}
				gotCalls := 0
				for _, m := range msgs {
					gotCalls += len(m.ToolCalls)
					if m.Role != memory.RoleTool || m.ToolCallID == "" {
						continue
					}
					if !slices.ContainsFunc(msgs, func(c memory.Message) bool {
						return c.BatchID == m.BatchID && c.ID < m.ID && slices.ContainsFunc(c.ToolCalls, func(tc memory.ToolCall) bool { return tc.ID == m.ToolCallID })
					}) {
						t.Errorf("agent %q: the result of call %s is not in its call's batch", id, m.ToolCallID)
					}
				}
				if gotCalls != calls {
					t.Errorf("agent %q: %d tool calls, want %d", id, gotCalls, calls)
				}

				// The profile.
				prof, err := ag.Profile(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if prof.System != str(a["system"]) {
					t.Errorf("agent %q: profile system prompt differs", id)
				}
				var names []string
				for _, tid := range strs(a["tool_ids"]) {
					names = append(names, str(rawTools[tid]["name"]))
				}
				var got []string
				for _, tl := range prof.Tools {
					got = append(got, tl.Name)
				}
				if !slices.Equal(got, names) {
					t.Errorf("agent %q: profile tools %v, want %v", id, got, names)
				}
				if llm, _ := a["llm_config"].(map[string]any); llm != nil && prof.Model != str(llm["model"]) {
					t.Errorf("agent %q: profile model %q, want %q", id, prof.Model, llm["model"])
				}

				// The context right after the import: the agent's own
				// system prompt, blocks, tools and rules.
				req, err := builder.New(s.Agent(id), builder.DefaultConfig()).WithMessages(s.Agent(id).Messages()).Build(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(req.System, builder.EscapeTags(strings.TrimSpace(prof.System))) {
					t.Errorf("agent %q: the built system prompt lacks the agent's own", id)
				}
				if strings.Contains(req.System, builder.DefaultBaseInstructions) {
					t.Errorf("agent %q: the built system prompt has the default base instructions", id)
				}
				for _, bid := range strs(a["block_ids"]) {
					if v := strings.TrimSpace(str(rawBlocks[bid]["value"])); v != "" && !strings.Contains(req.System, builder.EscapeTags(v)) {
						t.Errorf("agent %q: block %q is not in the built system prompt", id, rawBlocks[bid]["label"])
					}
				}
				for _, n := range names {
					if !slices.ContainsFunc(req.Tools, func(tl builder.Tool) bool { return tl.Name == n }) {
						t.Errorf("agent %q: tool %q is not offered", id, n)
					}
				}
				for _, rule := range prof.ToolRules {
					if !strings.Contains(req.System, rule.String()) {
						t.Errorf("agent %q: rule %q is not in the built system prompt", id, rule)
					}
				}
				if !slices.Contains(req.Metadata.Profile, builder.ProfileSystem) || req.Metadata.Model != prof.Model {
					t.Errorf("agent %q: profile parts used %v, model %q (want the profile's %q)", id, req.Metadata.Profile, req.Metadata.Model, prof.Model)
				}
			}
		})
	}
}

// snapshot is everything a round trip must keep of an agent.
type snapshot struct {
	Blocks   []string
	Shared   []string
	Messages []string
	Profile  string
}

func snap(t *testing.T, s *memory.Store, id string) snapshot {
	t.Helper()
	ctx := context.Background()
	ag := s.Agent(id)
	var out snapshot
	metas, err := ag.Blocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range metas {
		doc, err := ag.Block(m.Label).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := doc.Value()
		b, _ := json.Marshal([]any{m.Label, v, m.CharLimit, m.Permission.String(), m.Description, m.Type})
		out.Blocks = append(out.Blocks, string(b))
	}
	shared, err := ag.SharedBlocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range shared {
		out.Shared = append(out.Shared, m.SharedFrom+"/"+m.Label+" "+m.Permission.String())
	}
	slices.Sort(out.Shared)
	msgs, err := ag.Messages().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var calls []string
		for _, c := range m.ToolCalls {
			var args bytes.Buffer
			_ = json.Compact(&args, c.Arguments)
			calls = append(calls, c.ID+" "+c.Name+" "+args.String())
		}
		b, _ := json.Marshal([]any{m.Role, m.Content, m.Name, calls, m.ToolCallID, m.BatchID, m.CreatedAt.UnixNano()})
		out.Messages = append(out.Messages, string(b))
	}
	prof, err := ag.Profile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prof.UpdatedAt = time.Time{}
	pj, _ := json.Marshal(prof)
	out.Profile = canonical(t, pj)
	return out
}

// canonical re-encodes JSON with sorted keys and no spaces.
func canonical(t *testing.T, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// Import, export --format letta, import again: every agent's blocks,
// shares, messages and profile are equal; the exported file has the
// shapes of Letta's AgentFileSchema and no secret.
func TestRoundTripRealAgentFiles(t *testing.T) {
	for _, path := range agentFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ctx := context.Background()
			s, rep, _, _ := importFile(t, path)
			var agents []string
			for _, a := range rep.Agents {
				agents = append(agents, a.Agent)
			}
			f, erep, err := letta.Export(ctx, s, agents, nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.MarshalIndent(f, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkShape(t, data)
			if !strings.Contains(reportText(erep), "block history") {
				t.Errorf("the export report does not name the blocks' history:\n%s", reportText(erep))
			}
			s2 := openStore(t)
			if _, err := letta.Import(ctx, s2, data, nil); err != nil {
				t.Fatalf("import of the export: %v", err)
			}
			for _, a := range agents {
				x, y := snap(t, s, a), snap(t, s2, a)
				if !slices.Equal(x.Blocks, y.Blocks) {
					t.Errorf("agent %q: blocks differ after the round trip:\n%v\n%v", a, x.Blocks, y.Blocks)
				}
				if !slices.Equal(x.Shared, y.Shared) {
					t.Errorf("agent %q: shares differ: %v, %v", a, x.Shared, y.Shared)
				}
				if !slices.Equal(x.Messages, y.Messages) {
					t.Errorf("agent %q: messages differ:\n%v\n%v", a, x.Messages, y.Messages)
				}
				if x.Profile != y.Profile {
					t.Errorf("agent %q: profiles differ:\n%s\n%s", a, x.Profile, y.Profile)
				}
			}
		})
	}
}

func reportText(r *letta.Report) string {
	var b strings.Builder
	r.Write(&b)
	return b.String()
}

// checkShape checks an exported file against the shapes of Letta's
// AgentFileSchema: every list present, ids resolvable, the compiled
// system prompt first in context, no secret written.
func checkShape(t *testing.T, data []byte) {
	t.Helper()
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agents", "groups", "blocks", "files", "sources", "tools", "mcp_servers"} {
		if _, ok := f[k].([]any); !ok {
			t.Errorf("exported file: %q is not a list: %v", k, f[k])
		}
	}
	if _, ok := f["metadata"].(map[string]any); !ok {
		t.Errorf("exported file: metadata is not an object")
	}
	ids := func(k string) map[string]bool {
		m := map[string]bool{}
		for _, x := range f[k].([]any) {
			m[str(x.(map[string]any)["id"])] = true
		}
		return m
	}
	bids, tids, gids := ids("blocks"), ids("tools"), ids("groups")
	for _, b := range f["blocks"].([]any) {
		b := b.(map[string]any)
		if _, ok := b["value"].(string); !ok || str(b["label"]) == "" || b["limit"] == nil {
			t.Errorf("exported block without value, label or limit: %v", b["id"])
		}
	}
	for _, tl := range f["tools"].([]any) {
		tl := tl.(map[string]any)
		js, _ := tl["json_schema"].(map[string]any)
		if str(tl["name"]) == "" || js == nil || str(js["name"]) != str(tl["name"]) {
			t.Errorf("exported tool %v without a name or json_schema", tl["id"])
		}
	}
	for _, a := range f["agents"].([]any) {
		a := a.(map[string]any)
		for _, k := range []string{"messages", "in_context_message_ids", "files_agents", "group_ids", "block_ids", "tool_ids", "tool_rules"} {
			if _, ok := a[k].([]any); !ok {
				t.Errorf("agent %v: %q is not a list", a["id"], k)
			}
		}
		for _, b := range strs(a["block_ids"]) {
			if !bids[b] {
				t.Errorf("agent %v lists block %s, which the file lacks", a["id"], b)
			}
		}
		for _, tl := range strs(a["tool_ids"]) {
			if !tids[tl] {
				t.Errorf("agent %v lists tool %s, which the file lacks", a["id"], tl)
			}
		}
		for _, g := range strs(a["group_ids"]) {
			if !gids[g] {
				t.Errorf("agent %v lists group %s, which the file lacks", a["id"], g)
			}
		}
		msgs := map[string]string{}
		for _, m := range a["messages"].([]any) {
			m := m.(map[string]any)
			msgs[str(m["id"])] = str(m["role"])
		}
		inCtx := strs(a["in_context_message_ids"])
		for _, m := range inCtx {
			if msgs[m] == "" {
				t.Errorf("agent %v: in-context message %s is not in the file", a["id"], m)
			}
		}
		if str(a["system"]) != "" && (len(inCtx) == 0 || msgs[inCtx[0]] != "system") {
			t.Errorf("agent %v: the first message in context is not the system prompt", a["id"])
		}
		if a["secrets"] != nil {
			t.Errorf("agent %v: secrets written: %v", a["id"], a["secrets"])
		}
		if env, _ := a["tool_exec_environment_variables"].(map[string]any); len(env) > 0 {
			t.Errorf("agent %v: tool environment written: %v", a["id"], env)
		}
	}
}

// An agent id the store uses for anything (here: archival entries alone)
// is refused before anything is written.
func TestImportRefusesAnAgentInUse(t *testing.T) {
	ctx := context.Background()
	path := agentFiles(t)[0]
	data, _ := os.ReadFile(path)
	s := openStore(t)
	probe, err := letta.Import(ctx, openStore(t), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := probe.Agents[0].Agent
	if _, err := s.Agent(id).Archival().Insert(ctx, memory.ArchivalEntry{Content: "an engram agent's own note"}); err != nil {
		t.Fatal(err)
	}
	if _, err := letta.Import(ctx, s, data, nil); !errors.Is(err, memory.ErrExists) || !strings.Contains(err.Error(), id) {
		t.Fatalf("import over an agent with archival entries: %v", err)
	}
	if bs, _ := s.Agent(id).Blocks(ctx); len(bs) != 0 {
		t.Fatal("a refused import created blocks")
	}
}

// An agent already in the store is refused, and the refused import
// changes nothing.
func TestImportTwiceRefused(t *testing.T) {
	for _, path := range agentFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ctx := context.Background()
			s, rep, _, _ := importFile(t, path)
			before := snap(t, s, rep.Agents[0].Agent)
			data, _ := os.ReadFile(path)
			if _, err := letta.Import(ctx, s, data, nil); !errors.Is(err, memory.ErrExists) {
				t.Fatalf("second import: %v, want ErrExists", err)
			}
			after := snap(t, s, rep.Agents[0].Agent)
			if !slices.Equal(before.Messages, after.Messages) || !slices.Equal(before.Blocks, after.Blocks) {
				t.Fatal("a refused import changed the agent")
			}
		})
	}
}

// ImportOptions.Agent renames the only agent of a file; a file of several
// agents is refused rather than renamed ambiguously.
func TestImportRenamesTheOnlyAgent(t *testing.T) {
	ctx := context.Background()
	for _, path := range agentFiles(t) {
		data, _ := os.ReadFile(path)
		r := readRaw(t, data)
		s := openStore(t)
		rep, err := letta.Import(ctx, s, data, &letta.ImportOptions{Agent: "renamed"})
		if len(r.Agents) != 1 {
			if !errors.Is(err, letta.ErrInvalid) {
				t.Errorf("%s (%d agents) renamed: %v, want ErrInvalid", filepath.Base(path), len(r.Agents), err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.Agents[0].Agent != "renamed" {
			t.Fatalf("%s: imported as %q", filepath.Base(path), rep.Agents[0].Agent)
		}
		if _, err := s.Agent("renamed").Profile(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
