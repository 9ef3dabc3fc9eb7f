package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// toolCase is one call against a fresh fixture, as alice.
type toolCase struct {
	name string
	tool string
	args string
	// wantErr: the result is an error and the store is unchanged.
	wantErr bool
	// want are substrings of the result content.
	want []string
	// not are strings the content must not contain.
	not []string
	// For successes: the block (owner/label) and its expected rendering
	// (exact) or parts of it (contains).
	owner, label string
	rendered     string
	contains     []string
	// check runs last, for anything else.
	check func(t *testing.T, st *memory.Store)
}

func runCases(t *testing.T, cases []toolCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t, nil)
			fixture(t, st)
			ts := newToolset(t, st, "alice", nil)
			before := snapshot(t, st)
			res := call(t, ts, tc.tool, tc.args)
			after := snapshot(t, st)
			if res.IsError != tc.wantErr {
				t.Fatalf("IsError = %v, want %v; content %q", res.IsError, tc.wantErr, res.Content)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("content %q lacks %q", res.Content, w)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(res.Content, w) {
					t.Errorf("content %q contains %q", res.Content, w)
				}
			}
			if tc.wantErr && after != before {
				t.Errorf("store changed by a refused call:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if tc.label != "" {
				owner := tc.owner
				if owner == "" {
					owner = "alice"
				}
				got := render(t, st, "alice", owner, tc.label)
				if tc.rendered != "" && got != tc.rendered {
					t.Errorf("block %s/%s renders\n%q\nwant\n%q", owner, tc.label, got, tc.rendered)
				}
				for _, c := range tc.contains {
					if !strings.Contains(got, c) {
						t.Errorf("block %s/%s renders %q, lacking %q", owner, tc.label, got, c)
					}
				}
				if !tc.wantErr && after == before {
					t.Errorf("store unchanged by a successful call")
				}
			}
			if tc.check != nil {
				tc.check(t, st)
			}
		})
	}
}

// common argument failures, run for every tool.
func argFailures(tool string, required string) []toolCase {
	return []toolCase{
		{name: "bad JSON", tool: tool, args: `{"label":`, wantErr: true, want: []string{"not valid JSON"}},
		{name: "not an object", tool: tool, args: `[1,2]`, wantErr: true, want: []string{"must be a JSON object", "got an array"}},
		{name: "unknown argument", tool: tool, args: `{"colour":"red"}`, wantErr: true, want: []string{`unknown argument "colour"`}},
		{name: "missing args", tool: tool, args: ``, wantErr: true, want: []string{`missing required argument "` + required + `"`}},
		{name: "null required", tool: tool, args: `{"` + required + `":null}`, wantErr: true, want: []string{`missing required argument "` + required + `"`}},
	}
}

func TestBlockAppend(t *testing.T) {
	cases := []toolCase{
		{name: "own block", tool: "block_append", args: `{"label":"notes","text":"third"}`,
			want:  []string{`Appended 5 characters to block "notes"`, "28 of 5000 characters"},
			label: "notes", rendered: "first line\nsecond line\nthird"},
		{name: "leading newline kept", tool: "block_append", args: `{"label":"notes","text":"\nthird"}`,
			label: "notes", rendered: "first line\nsecond line\nthird"},
		{name: "shared block via owner", tool: "block_append", args: `{"label":"shared_rw","owner":"bob","text":"more"}`,
			want:  []string{`block "shared_rw" (owner "bob")`},
			owner: "bob", label: "shared_rw", rendered: "team notes\nmore"},
		{name: "owner is self", tool: "block_append", args: `{"label":"notes","owner":"alice","text":"x"}`,
			label: "notes", rendered: "first line\nsecond line\nx"},
		{name: "append permission", tool: "block_append", args: `{"label":"appendonly","text":"entry"}`,
			label: "appendonly", rendered: "log:\nentry"},
		{name: "section", tool: "block_append", args: `{"label":"sections","section":"summary","text":"Still fine."}`,
			label: "sections", contains: []string{"So far so good.\nStill fine."}},
		{name: "read-only block", tool: "block_append", args: `{"label":"ro","text":"x"}`,
			wantErr: true, want: []string{"permission denied", "read-only for you"}},
		{name: "read-only share", tool: "block_append", args: `{"label":"shared_ro","owner":"bob","text":"x"}`,
			wantErr: true, want: []string{"permission denied"}},
		{name: "read-only section", tool: "block_append", args: `{"label":"sections","section":"locked","text":"x"}`,
			wantErr: true, want: []string{"permission denied", `section "locked" is read-only`}},
		{name: "char limit", tool: "block_append", args: `{"label":"small","text":"abcdefghijklmnop"}`,
			wantErr: true, want: []string{"character limit", "limit is 20", "shorten"}},
		{name: "unknown block", tool: "block_append", args: `{"label":"nope","text":"x"}`,
			wantErr: true, want: []string{`block "nope" not found`, "your blocks: notes, dup", `shared_rw (owner "bob")`}},
		{name: "other agent's block", tool: "block_append", args: `{"label":"secret","text":"x"}`,
			wantErr: true, want: []string{`block "secret" not found`}, not: []string{"bob's secret"}},
		{name: "other agent's unshared block via owner", tool: "block_append", args: `{"label":"secret","owner":"bob","text":"x"}`,
			wantErr: true, want: []string{`no block "secret" of "bob" is shared with you`}, not: []string{"bob's secret"}},
		{name: "owner that does not exist", tool: "block_append", args: `{"label":"secret","owner":"carol","text":"x"}`,
			wantErr: true, want: []string{`no block "secret" of "carol" is shared with you`}},
		{name: "wrong schema", tool: "block_append", args: `{"label":"profile","text":"x"}`,
			wantErr: true, want: []string{"does not fit", `block "profile" has fields name (string), age (integer), status (string, read-only), tags (list): use block_set_field`}},
		{name: "composite without section", tool: "block_append", args: `{"label":"sections","text":"x"}`,
			wantErr: true, want: []string{"pass section (one of: summary (text), facts (list), locked (text, read-only))"}},
		{name: "unknown section", tool: "block_append", args: `{"label":"sections","section":"nope","text":"x"}`,
			wantErr: true, want: []string{`has no section "nope"`}},
		{name: "section on plain block", tool: "block_append", args: `{"label":"notes","section":"x","text":"y"}`,
			wantErr: true, want: []string{"has no sections; omit section"}},
		{name: "list section", tool: "block_append", args: `{"label":"sections","section":"facts","text":"y"}`,
			wantErr: true, want: []string{`section "facts" is a list of string items: use block_push_item`}},
		{name: "empty text", tool: "block_append", args: `{"label":"notes","text":""}`,
			wantErr: true, want: []string{"text is empty"}},
		{name: "empty label", tool: "block_append", args: `{"label":" ","text":"x"}`,
			wantErr: true, want: []string{"label is empty"}},
		{name: "wrong type", tool: "block_append", args: `{"label":"notes","text":5}`,
			wantErr: true, want: []string{`argument "text" must be a string, got number`}},
		{name: "double-encoded arguments", tool: "block_append", args: `"{\"label\":\"notes\",\"text\":\"x\"}"`,
			label: "notes", rendered: "first line\nsecond line\nx"},
		{name: "needs approval", tool: "block_append", args: `{"label":"approval","text":"please"}`,
			want: []string{"Not applied yet", "permission on block \"approval\" is Human", "proposal #1"},
			check: func(t *testing.T, st *memory.Store) {
				if got := render(t, st, "alice", "alice", "approval"); got != "needs a human" {
					t.Errorf("approval block changed to %q", got)
				}
				ps, err := st.Agent("alice").Block("approval").Proposals(context.Background())
				if err != nil || len(ps) != 1 || ps[0].Status != "pending" || ps[0].Edit.Text != "\nplease" {
					t.Errorf("proposals %+v %v", ps, err)
				}
			}},
	}
	cases = append(cases, argFailures("block_append", "label")...)
	runCases(t, cases)
}

func TestBlockReplace(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "unique match", tool: "block_replace", args: `{"label":"notes","old":"second","new":"2nd"}`,
			want:  []string{`Replaced "second" with "2nd" in block "notes"`},
			label: "notes", rendered: "first line\n2nd line"},
		{name: "delete", tool: "block_replace", args: `{"label":"notes","old":"first line\n","new":""}`,
			label: "notes", rendered: "second line"},
		{name: "shared", tool: "block_replace", args: `{"label":"shared_rw","owner":"bob","old":"team","new":"crew"}`,
			owner: "bob", label: "shared_rw", rendered: "crew notes"},
		{name: "section", tool: "block_replace", args: `{"label":"sections","section":"summary","old":"good","new":"fine"}`,
			label: "sections", contains: []string{"So far so fine."}},
		{name: "no match", tool: "block_replace", args: `{"label":"notes","old":"third","new":"x"}`,
			wantErr: true, want: []string{`no match for "third" in block "notes"`}},
		{name: "case matters", tool: "block_replace", args: `{"label":"notes","old":"First","new":"x"}`,
			wantErr: true, want: []string{`no match for "First"`}},
		{name: "several matches on one line", tool: "block_replace", args: `{"label":"dup","old":"cat","new":"dog"}`,
			wantErr: true, want: []string{`2 matches for "cat" in block "dup" (on line 1); include more context`}},
		{name: "several matches on lines", tool: "block_replace", args: `{"label":"notes","old":" line","new":""}`,
			wantErr: true, want: []string{`2 matches for " line" in block "notes" (on lines 1, 2)`}},
		{name: "read-only reports permission first", tool: "block_replace", args: `{"label":"ro","old":"zzz","new":"x"}`,
			wantErr: true, want: []string{"permission denied"}},
		{name: "append-only", tool: "block_replace", args: `{"label":"appendonly","old":"log","new":"x"}`,
			wantErr: true, want: []string{"permission denied", "Append"}},
		{name: "char limit", tool: "block_replace", args: `{"label":"small","old":"0123","new":"abcdefghijklmnopqrstuvwxyz"}`,
			wantErr: true, want: []string{"character limit", "limit is 20"}},
		{name: "wrong schema", tool: "block_replace", args: `{"label":"todo","old":"milk","new":"x"}`,
			wantErr: true, want: []string{`block "todo" is a list of string items: use block_push_item`}},
		{name: "unknown block", tool: "block_replace", args: `{"label":"nope","old":"a","new":"b"}`,
			wantErr: true, want: []string{`block "nope" not found`}},
		{name: "unshared", tool: "block_replace", args: `{"label":"secret","owner":"bob","old":"secret","new":"b"}`,
			wantErr: true, want: []string{"is shared with you"}, not: []string{"bob's"}},
		{name: "empty old", tool: "block_replace", args: `{"label":"notes","old":"","new":"b"}`,
			wantErr: true, want: []string{"old is empty"}},
		{name: "missing new", tool: "block_replace", args: `{"label":"notes","old":"first"}`,
			wantErr: true, want: []string{`missing required argument "new"`}},
		{name: "long old is shortened in messages", tool: "block_replace", args: `{"label":"notes","old":"` + strings.Repeat("z", 100) + `","new":"b"}`,
			wantErr: true, want: []string{`no match for "` + strings.Repeat("z", 60) + `"…`}},
	}, argFailures("block_replace", "label")...))
}

func TestBlockSetField(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "integer", tool: "block_set_field", args: `{"label":"profile","field":"age","value":31}`,
			want:  []string{`Set field "age" of block "profile"`},
			label: "profile", contains: []string{"age: 31"}},
		{name: "list", tool: "block_set_field", args: `{"label":"profile","field":"tags","value":["a","b"]}`,
			label: "profile", contains: []string{"tags:"}},
		{name: "clear optional", tool: "block_set_field", args: `{"label":"profile","field":"age","value":null}`,
			want:  []string{`Cleared field "age"`},
			label: "profile", rendered: "name: Alice\nage:\nstatus [read-only]:\ntags:"},
		{name: "clear required", tool: "block_set_field", args: `{"label":"profile","field":"name","value":null}`,
			wantErr: true, want: []string{"required field cannot be cleared"}},
		{name: "wrong value type", tool: "block_set_field", args: `{"label":"profile","field":"age","value":"old"}`,
			wantErr: true, want: []string{`field "age"`, "want integer"}},
		{name: "fractional integer", tool: "block_set_field", args: `{"label":"profile","field":"age","value":1.5}`,
			wantErr: true, want: []string{`field "age"`}},
		{name: "unknown field", tool: "block_set_field", args: `{"label":"profile","field":"colour","value":"red"}`,
			wantErr: true, want: []string{"unknown field", "name, age, status, tags"}},
		{name: "read-only field", tool: "block_set_field", args: `{"label":"profile","field":"status","value":"x"}`,
			wantErr: true, want: []string{"permission denied", `field "status" is read-only`}},
		{name: "text block", tool: "block_set_field", args: `{"label":"notes","field":"a","value":"x"}`,
			wantErr: true, want: []string{`block "notes" is text: use block_append`}},
		{name: "missing value", tool: "block_set_field", args: `{"label":"profile","field":"age"}`,
			wantErr: true, want: []string{`missing required argument "value"`}},
		{name: "empty field", tool: "block_set_field", args: `{"label":"profile","field":"","value":1}`,
			wantErr: true, want: []string{"field is empty"}},
		{name: "read-only block", tool: "block_set_field", args: `{"label":"ro","field":"a","value":1}`,
			wantErr: true, want: []string{"permission denied"}},
		{name: "unknown block", tool: "block_set_field", args: `{"label":"nope","field":"a","value":1}`,
			wantErr: true, want: []string{`block "nope" not found`}},
	}, argFailures("block_set_field", "label")...))
}

func TestBlockPushItem(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "list", tool: "block_push_item", args: `{"label":"todo","item":"walk dog"}`,
			want:  []string{`Added item 2 to block "todo"`},
			label: "todo", rendered: "1. buy milk\n2. walk dog"},
		{name: "list field", tool: "block_push_item", args: `{"label":"profile","field":"tags","item":"vip"}`,
			want:  []string{`Added an item to list field "tags" of block "profile"`},
			label: "profile", contains: []string{"tags: vip"}},
		{name: "section", tool: "block_push_item", args: `{"label":"sections","section":"facts","item":"grass is green"}`,
			want:  []string{`Added item 2 to block "sections" section "facts"`},
			label: "sections", contains: []string{"2. grass is green"}},
		{name: "list full", tool: "block_push_item", args: `{"label":"full","item":"more"}`,
			wantErr: true, want: []string{"list is full (max_items 1)"}},
		{name: "wrong item type", tool: "block_push_item", args: `{"label":"todo","item":5}`,
			wantErr: true, want: []string{"want string"}},
		{name: "not a list field", tool: "block_push_item", args: `{"label":"profile","field":"name","item":"x"}`,
			wantErr: true, want: []string{`field "name" is string, not list`}},
		{name: "text block", tool: "block_push_item", args: `{"label":"notes","item":"x"}`,
			wantErr: true, want: []string{`block "notes" is text`}},
		{name: "null item", tool: "block_push_item", args: `{"label":"todo","item":null}`,
			wantErr: true, want: []string{`missing required argument "item"`}},
		{name: "read-only share", tool: "block_push_item", args: `{"label":"shared_ro","owner":"bob","item":"x"}`,
			wantErr: true, want: []string{"permission denied"}},
		{name: "unknown block", tool: "block_push_item", args: `{"label":"nope","item":"x"}`,
			wantErr: true, want: []string{`block "nope" not found`}},
	}, argFailures("block_push_item", "label")...))
}

func TestBlockInsertLine(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "middle", tool: "block_insert_line", args: `{"label":"notes","line":2,"text":"middle"}`,
			want:  []string{`Inserted line 2 into block "notes"`},
			label: "notes", rendered: "first line\nmiddle\nsecond line"},
		{name: "first", tool: "block_insert_line", args: `{"label":"notes","line":1,"text":"zeroth"}`,
			label: "notes", rendered: "zeroth\nfirst line\nsecond line"},
		{name: "end", tool: "block_insert_line", args: `{"label":"notes","line":3,"text":"end"}`,
			label: "notes", rendered: "first line\nsecond line\nend"},
		{name: "past the end", tool: "block_insert_line", args: `{"label":"notes","line":9,"text":"x"}`,
			wantErr: true, want: []string{"line 9 (text has 2 lines; use 1..3)"}},
		{name: "zero", tool: "block_insert_line", args: `{"label":"notes","line":0,"text":"x"}`,
			wantErr: true, want: []string{"out of range"}},
		{name: "line not a number", tool: "block_insert_line", args: `{"label":"notes","line":"two","text":"x"}`,
			wantErr: true, want: []string{`argument "line" must be an integer, got string`}},
		{name: "fractional line", tool: "block_insert_line", args: `{"label":"notes","line":1.5,"text":"x"}`,
			wantErr: true, want: []string{`argument "line" must be an integer`}},
		{name: "read-only", tool: "block_insert_line", args: `{"label":"ro","line":1,"text":"x"}`,
			wantErr: true, want: []string{"permission denied"}},
		{name: "char limit", tool: "block_insert_line", args: `{"label":"small","line":1,"text":"abcdefghijklmnop"}`,
			wantErr: true, want: []string{"character limit"}},
		{name: "missing line", tool: "block_insert_line", args: `{"label":"notes","text":"x"}`,
			wantErr: true, want: []string{`missing required argument "line"`}},
	}, argFailures("block_insert_line", "label")...))
}

func TestLogAppend(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "with fields", tool: "log_append", args: `{"label":"events","message":"started","fields":{"level":"info"}}`,
			want:  []string{`Logged an entry to block "events"`},
			label: "events", contains: []string{"[2025-03-01T12:00:00Z] started", "level: info"}},
		{name: "message only", tool: "log_append", args: `{"label":"events","message":"plain"}`,
			label: "events", contains: []string{"[2025-03-01T12:00:00Z] plain"}},
		{name: "unknown entry field", tool: "log_append", args: `{"label":"events","message":"m","fields":{"colour":"red"}}`,
			wantErr: true, want: []string{"unknown log entry field", "level"}},
		{name: "message in fields", tool: "log_append", args: `{"label":"events","message":"m","fields":{"message":"x"}}`,
			wantErr: true, want: []string{`fields must not contain "message"`}},
		{name: "fields not an object", tool: "log_append", args: `{"label":"events","message":"m","fields":[1]}`,
			wantErr: true, want: []string{`argument "fields" must be an object, got array`}},
		{name: "text block", tool: "log_append", args: `{"label":"notes","message":"m"}`,
			wantErr: true, want: []string{`block "notes" is text`}},
		{name: "empty message", tool: "log_append", args: `{"label":"events","message":"  "}`,
			wantErr: true, want: []string{"message is empty"}},
		{name: "unknown block", tool: "log_append", args: `{"label":"nope","message":"m"}`,
			wantErr: true, want: []string{`block "nope" not found`}},
	}, argFailures("log_append", "label")...))
}

func TestArchivalInsert(t *testing.T) {
	runCases(t, append([]toolCase{
		{name: "with tags and metadata", tool: "archival_insert", args: `{"content":"Sam prefers tea","tags":["prefs","drinks"],"metadata":{"source":"user"}}`,
			want: []string{"Inserted archival entry #2 with tags drinks, prefs."},
			check: func(t *testing.T, st *memory.Store) {
				es, err := st.Agent("alice").Archival().List(context.Background(), nil)
				if err != nil || len(es) != 1 || es[0].Content != "Sam prefers tea" || es[0].Metadata["source"] != "user" {
					t.Fatalf("entries %+v %v", es, err)
				}
			}},
		{name: "content only", tool: "archival_insert", args: `{"content":"x"}`, want: []string{"Inserted archival entry #2."}},
		{name: "empty content", tool: "archival_insert", args: `{"content":" "}`, wantErr: true, want: []string{"content is empty"}},
		{name: "tags not an array", tool: "archival_insert", args: `{"content":"x","tags":"a"}`,
			wantErr: true, want: []string{`argument "tags" must be an array of strings, got string`}},
		{name: "tag not a string", tool: "archival_insert", args: `{"content":"x","tags":[1]}`,
			wantErr: true, want: []string{`argument "tags`, "must be a string, got number"}},
		{name: "metadata not an object", tool: "archival_insert", args: `{"content":"x","metadata":"a"}`,
			wantErr: true, want: []string{`argument "metadata" must be an object, got string`}},
	}, argFailures("archival_insert", "content")...))
}

func TestProposeEdit(t *testing.T) {
	pending := func(owner, label string, n int) func(t *testing.T, st *memory.Store) {
		return func(t *testing.T, st *memory.Store) {
			ps, err := st.Agent(owner).Block(label).Proposals(context.Background())
			if err != nil || len(ps) != n {
				t.Fatalf("proposals on %s/%s: %+v %v, want %d", owner, label, ps, err, n)
			}
		}
	}
	runCases(t, append([]toolCase{
		{name: "human-shared block", tool: "propose_edit",
			args: `{"label":"shared_human","owner":"bob","op":"replace_text","old":"kind","text":"very kind","reason":"policy update"}`,
			want: []string{`Proposal #1 created: replace_text on block "shared_human" (owner "bob")`},
			check: func(t *testing.T, st *memory.Store) {
				ps, err := st.Agent("bob").Block("shared_human").Proposals(context.Background())
				if err != nil || len(ps) != 1 {
					t.Fatalf("proposals %+v %v", ps, err)
				}
				p := ps[0]
				if p.Proposer != "alice" || p.Reason != "policy update" || p.Status != "pending" ||
					p.Edit.Op != "replace_text" || p.Edit.Old != "kind" || p.Edit.Text != "very kind" {
					t.Errorf("proposal %+v", p)
				}
				if got := render(t, st, "alice", "bob", "shared_human"); got != "policy: be kind" {
					t.Errorf("block changed before approval: %q", got)
				}
			}},
		{name: "own human block", tool: "propose_edit", args: `{"label":"approval","op":"append_text","text":" now","reason":"r"}`,
			want: []string{"Proposal #1 created: append_text on block \"approval\""}, check: pending("alice", "approval", 1)},
		{name: "read-write block", tool: "propose_edit", args: `{"label":"shared_rw","owner":"bob","op":"append_text","text":"x","reason":"r"}`,
			wantErr: true, want: []string{"is ReadWrite: you can edit it directly"}},
		{name: "read-only block", tool: "propose_edit", args: `{"label":"shared_ro","owner":"bob","op":"append_text","text":"x","reason":"r"}`,
			wantErr: true, want: []string{"read-only for you: edits to it cannot be proposed"}},
		{name: "append block", tool: "propose_edit", args: `{"label":"appendonly","op":"set_text","text":"x","reason":"r"}`,
			wantErr: true, want: []string{"is Append"}},
		{name: "no match", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"replace_text","old":"zzz","text":"x","reason":"r"}`,
			wantErr: true, want: []string{`no match for "zzz"`}},
		{name: "wrong schema", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"push_item","value":"x","reason":"r"}`,
			wantErr: true, want: []string{"does not fit", "is text"}},
		{name: "char limit", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"append_text","text":"` + strings.Repeat("x", 5000) + `","reason":"r"}`,
			wantErr: true, want: []string{"character limit"}},
		{name: "op needs text", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"set_text","reason":"r"}`,
			wantErr: true, want: []string{"op set_text needs text"}},
		{name: "unknown op", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"explode","reason":"r"}`,
			wantErr: true, want: []string{`unknown op "explode"`}},
		{name: "admin op", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"delete","reason":"r"}`,
			wantErr: true, want: []string{`unknown op "delete"`}},
		{name: "item numbers start at 1", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"delete_item","index":0,"reason":"r"}`,
			wantErr: true, want: []string{"item numbers start at 1"}},
		{name: "empty reason", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"append_text","text":"x","reason":""}`,
			wantErr: true, want: []string{"reason is empty"}},
		{name: "unshared", tool: "propose_edit", args: `{"label":"secret","owner":"bob","op":"append_text","text":"x","reason":"r"}`,
			wantErr: true, want: []string{`no block "secret" of "bob" is shared with you`}},
		{name: "missing reason", tool: "propose_edit", args: `{"label":"shared_human","owner":"bob","op":"append_text","text":"x"}`,
			wantErr: true, want: []string{`missing required argument "reason"`}},
	}, argFailures("propose_edit", "label")...))
}
