package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
	"github.com/engram-go/engram/tools"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func toolNames(ts []tools.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestDefinitionsGolden(t *testing.T) {
	st := openStore(t, nil)
	ts := newToolset(t, st, "alice", nil)
	var buf bytes.Buffer
	if err := json.Indent(&buf, ts.Definitions(), "", "  "); err != nil {
		t.Fatalf("definitions are not JSON: %v", err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "definitions.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("definitions differ from %s (run go test -update if intended):\n%s", path, buf.String())
	}
}

func TestDefinitionsShape(t *testing.T) {
	st := openStore(t, nil)
	ts := newToolset(t, st, "alice", nil)
	list := ts.Tools()
	if got := toolNames(list); !slices.Equal(got, tools.Names()) || len(got) != 12 {
		t.Fatalf("tools %v, names %v", got, tools.Names())
	}
	for _, tl := range list {
		p := tl.Parameters
		if tl.Description == "" || p == nil || p.Type != "object" || p.AdditionalProperties != jsonschema.FalseSchema {
			t.Errorf("%s: description %q, parameters %+v", tl.Name, tl.Description, p)
			continue
		}
		if p.Version != "" || p.ID != "" || len(p.Definitions) != 0 || p.Ref != "" {
			t.Errorf("%s: schema has $schema/$id/$defs/$ref", tl.Name)
		}
		for pair := p.Properties.Oldest(); pair != nil; pair = pair.Next() {
			if pair.Value.Description == "" {
				t.Errorf("%s.%s has no description", tl.Name, pair.Key)
			}
		}
		if len(p.Required) == 0 {
			t.Errorf("%s has no required arguments", tl.Name)
		}
		for _, r := range p.Required {
			if _, ok := p.Properties.Get(r); !ok {
				t.Errorf("%s requires unknown %q", tl.Name, r)
			}
		}
		var def struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(tl.Definition(), &def); err != nil || def.Type != "function" || def.Function.Name != tl.Name ||
			!bytes.Contains(def.Function.Parameters, []byte(`"additionalProperties":false`)) {
			t.Errorf("%s definition %s (%v)", tl.Name, tl.Definition(), err)
		}
	}
}

func TestNew(t *testing.T) {
	st := openStore(t, nil)
	if _, err := tools.New(nil, nil); !errors.Is(err, tools.ErrInvalidOptions) {
		t.Errorf("nil store: %v", err)
	}
	if _, err := tools.New(st.Agent(" "), nil); !errors.Is(err, tools.ErrInvalidOptions) {
		t.Errorf("empty agent: %v", err)
	}
	if _, err := tools.New(st.Agent("a"), &tools.Options{Enabled: []string{"block_append", "fly"}}); !errors.Is(err, tools.ErrInvalidOptions) ||
		!strings.Contains(err.Error(), `"fly"`) {
		t.Errorf("unknown enabled tool: %v", err)
	}
	ts := newToolset(t, st, "a", &tools.Options{Enabled: []string{"archival_search", "block_append"}})
	if got := toolNames(ts.Tools()); !slices.Equal(got, []string{"block_append", "archival_search"}) {
		t.Errorf("enabled subset %v", got)
	}
	if ts.Agent() != "a" {
		t.Errorf("agent %q", ts.Agent())
	}
	res := call(t, ts, "block_replace", `{"label":"x","old":"a","new":"b"}`)
	if !res.IsError || !strings.Contains(res.Content, `unknown tool "block_replace"; available tools: block_append, archival_search`) {
		t.Errorf("disabled tool: %+v", res)
	}
	res = call(t, ts, "", `{}`)
	if !res.IsError || !strings.Contains(res.Content, `unknown tool ""`) {
		t.Errorf("empty tool name: %+v", res)
	}
}

func TestToolRules(t *testing.T) {
	st := openStore(t, nil)
	eng, err := toolrules.NewEngine([]toolrules.Rule{toolrules.MaxCalls("archival_insert", 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := newToolset(t, st, "alice", &tools.Options{Rules: eng})

	// A malformed call is refused before the rules see it.
	if res := call(t, ts, "archival_insert", `{"tags":["x"]}`); !res.IsError {
		t.Fatalf("missing content accepted: %+v", res)
	}
	if got := eng.Calls(); len(got) != 0 {
		t.Fatalf("malformed call counted: %v", got)
	}
	if res := call(t, ts, "archival_insert", `{"content":"first"}`); res.IsError {
		t.Fatalf("first insert: %+v", res)
	}
	if slices.Contains(toolNames(ts.Allowed()), "archival_insert") || len(ts.Allowed()) != 11 {
		t.Errorf("Allowed after the limit: %v", toolNames(ts.Allowed()))
	}
	before := snapshot(t, st)
	res := call(t, ts, "archival_insert", `{"content":"second"}`)
	if !res.IsError || !strings.Contains(res.Content, "call refused by tool rule \"Call `archival_insert` at most 1 time\"") ||
		!strings.Contains(res.Content, "has been called 1 time") {
		t.Errorf("second insert: %+v", res)
	}
	if snapshot(t, st) != before {
		t.Errorf("refused call changed the store")
	}
	eng.NewTurn()
	if res := call(t, ts, "archival_insert", `{"content":"next turn"}`); res.IsError {
		t.Errorf("next turn: %+v", res)
	}
	if got := toolNames(newToolset(t, st, "alice", nil).Allowed()); len(got) != 12 {
		t.Errorf("Allowed without rules: %v", got)
	}
}

func TestToolRulesConsent(t *testing.T) {
	st := openStore(t, nil)
	fixture(t, st)
	var asked []toolrules.ConsentRequest
	eng, err := toolrules.NewEngine([]toolrules.Rule{toolrules.RequiresConsent("block_append")}, &toolrules.EngineOptions{
		Approver: toolrules.ApproverFunc(func(_ context.Context, r toolrules.ConsentRequest) (bool, error) {
			asked = append(asked, r)
			return strings.Contains(string(r.Arguments), "ok"), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	ts := newToolset(t, st, "alice", &tools.Options{Rules: eng})
	before := snapshot(t, st)
	res := call(t, ts, "block_append", `{"label":"notes","text":"no"}`)
	if !res.IsError || !strings.Contains(res.Content, "requires approval") || !strings.Contains(res.Content, "was denied") {
		t.Errorf("denied: %+v", res)
	}
	if snapshot(t, st) != before {
		t.Errorf("denied call changed the store")
	}
	if res := call(t, ts, "block_append", `{"label":"notes","text":"ok"}`); res.IsError {
		t.Errorf("approved: %+v", res)
	}
	if len(asked) != 2 || asked[0].Agent != "alice" || asked[0].Tool != "block_append" {
		t.Errorf("consent requests %+v", asked)
	}
}

func TestSharedBlockEditing(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, nil)
	fixture(t, st)
	ts := newToolset(t, st, "alice", nil)

	// alice edits bob's shared block; bob sees it, attributed to alice.
	if res := call(t, ts, "block_replace", `{"label":"shared_rw","owner":"bob","old":"team","new":"our team"}`); res.IsError {
		t.Fatal(res.Content)
	}
	if got, _ := st.Agent("bob").Block("shared_rw").Render(ctx); got != "our team notes" {
		t.Errorf("bob sees %q", got)
	}
	hist, err := st.Agent("bob").Block("shared_rw").History(ctx)
	if err != nil || hist[len(hist)-1].Actor != "alice" {
		t.Errorf("history %+v %v", hist, err)
	}

	// Once unshared, the block is gone for alice.
	if err := st.Agent("bob").Block("shared_rw").Unshare(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ts, "block_append", `{"label":"shared_rw","owner":"bob","text":"x"}`); !res.IsError || !strings.Contains(res.Content, "is shared with you") {
		t.Errorf("after unshare: %+v", res)
	}

	// propose_edit on a Human-shared block, then bob approves it.
	res := call(t, ts, "propose_edit", `{"label":"shared_human","owner":"bob","op":"replace_text","old":"be kind","text":"be very kind","reason":"stronger wording"}`)
	if res.IsError || !strings.Contains(res.Content, "Proposal #1 created") {
		t.Fatalf("propose: %+v", res)
	}
	if err := st.Agent("bob").ApproveProposal(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Agent("bob").Block("shared_human").Render(ctx); got != "policy: be very kind" {
		t.Errorf("after approval %q", got)
	}

	// A list proposal uses 1-based item numbers.
	mustCreate(t, st, "bob", memory.BlockSpec{Label: "rules", Value: []any{"one", "two", "three"}, Schema: listSchema()})
	if err := st.Agent("bob").Block("rules").Share(ctx, "alice", blocks.Partner); err != nil {
		t.Fatal(err)
	}
	if res := call(t, ts, "propose_edit", `{"label":"rules","owner":"bob","op":"delete_item","index":2,"reason":"obsolete"}`); res.IsError {
		t.Fatalf("propose delete: %+v", res)
	}
	if res := call(t, ts, "propose_edit", `{"label":"rules","owner":"bob","op":"delete_item","index":4,"reason":"obsolete"}`); !res.IsError || !strings.Contains(res.Content, "out of range") {
		t.Errorf("propose delete past the end: %+v", res)
	}
	if err := st.Agent("bob").ApproveProposal(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got, _ := st.Agent("bob").Block("rules").Render(ctx); got != "1. one\n2. three" {
		t.Errorf("after approved delete %q", got)
	}
}

func TestApproverApplies(t *testing.T) {
	st := openStore(t, &memory.Options{Approver: blocks.ApproverFunc(func(r blocks.ApprovalRequest) (bool, error) {
		return r.Agent == "alice", nil
	})})
	fixture(t, st)
	ts := newToolset(t, st, "alice", nil)
	res := call(t, ts, "block_append", `{"label":"approval","text":"approved"}`)
	if res.IsError || !strings.Contains(res.Content, "Appended") {
		t.Fatalf("%+v", res)
	}
	if got := render(t, st, "alice", "alice", "approval"); got != "needs a human\napproved" {
		t.Errorf("approval block %q", got)
	}
}

func TestInfrastructureErrors(t *testing.T) {
	st := openStore(t, nil)
	fixture(t, st)
	ts := newToolset(t, st, "alice", nil)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := ts.Call(ctx, "block_append", json.RawMessage(`{"label":"notes","text":"x"}`))
	if !errors.Is(err, context.Canceled) || !res.IsError {
		t.Errorf("cancelled: %+v %v", res, err)
	}

	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"block_append", `{"label":"notes","text":"x"}`},
		{"block_set_field", `{"label":"profile","field":"age","value":1}`},
		{"archival_insert", `{"content":"x"}`},
		{"archival_search", `{"query":"x"}`},
		{"conversation_search", `{"query":"x"}`},
		{"propose_edit", `{"label":"approval","op":"append_text","text":"x","reason":"r"}`},
	} {
		res, err := ts.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if !errors.Is(err, memory.ErrClosed) || !res.IsError || !strings.Contains(res.Content, "internal problem") {
			t.Errorf("%s on a closed store: %+v %v", c.tool, res, err)
		}
	}
	// Model mistakes are still reported as results.
	res, err = ts.Call(context.Background(), "block_append", json.RawMessage(`{"label":`))
	if err != nil || !res.IsError {
		t.Errorf("bad JSON on a closed store: %+v %v", res, err)
	}
}

func TestConcurrentCalls(t *testing.T) {
	st := openStore(t, nil)
	fixture(t, st)
	ts := newToolset(t, st, "alice", nil)
	done := make(chan tools.Result)
	for i := range 8 {
		go func() {
			res, err := ts.Call(context.Background(), "block_push_item", json.RawMessage(`{"label":"sections","section":"facts","item":"f`+string(rune('a'+i))+`"}`))
			if err != nil {
				res = tools.Result{Content: err.Error(), IsError: true}
			}
			done <- res
		}()
	}
	for range 8 {
		if res := <-done; res.IsError {
			t.Error(res.Content)
		}
	}
	doc, err := st.Agent("alice").Block("sections").Doc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v, _ := doc.Section("facts").Value()
	if items, _ := v.([]blocks.Item); len(items) != 9 {
		t.Errorf("%d items after 8 concurrent pushes: %v", len(items), items)
	}
}
