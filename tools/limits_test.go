package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/tools"
)

// TestArchivalInsertCaps: archival_insert past a per-entry cap is a tool
// error the model reads (the field, its size, the cap, what to do), not a
// Go error, and stores nothing.
func TestArchivalInsertCaps(t *testing.T) {
	big := strings.Repeat("x", memory.DefaultMaxArchivalBytes+1)
	tags := make([]string, 1000)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	manyTags, _ := json.Marshal(tags)
	for _, tc := range []struct {
		name, args string
		want       []string
	}{
		{"content", fmt.Sprintf(`{"content":%q}`, big),
			[]string{"content is 1048577 bytes", "cap of 1048576", "nothing was stored", "split it"}},
		{"metadata", fmt.Sprintf(`{"content":"c","metadata":{"blob":%q}}`, strings.Repeat("m", memory.DefaultMaxMetadataBytes)),
			[]string{"metadata is 65547 bytes", "cap of 65536"}},
		{"tags", fmt.Sprintf(`{"content":"c","tags":%s}`, manyTags),
			[]string{"more than 64 distinct tags (1000 given)"}},
		{"tag length", fmt.Sprintf(`{"content":"c","tags":[%q]}`, strings.Repeat("t", 300)),
			[]string{"tag 0 is 300 bytes", "cap of 256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, nil)
			fixture(t, st)
			ts := newToolset(t, st, "alice", nil)
			before := snapshot(t, st)
			res := call(t, ts, "archival_insert", tc.args)
			if !res.IsError {
				t.Fatalf("not an error: %q", res.Content)
			}
			for _, w := range append(tc.want, `"alice"`) {
				if !strings.Contains(res.Content, w) {
					t.Errorf("result %q lacks %q", res.Content, w)
				}
			}
			if strings.Contains(res.Content, "internal problem") || strings.Contains(res.Content, "memory: ") {
				t.Errorf("result %q reads as an internal error", res.Content)
			}
			if after := snapshot(t, st); after != before {
				t.Errorf("a refused insert changed the store:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestArchivalInsertQuota: once the agent's quota is full, archival_insert
// is a tool error naming the quota, and log_append's rotation into
// archival is refused the same way, the block unchanged.
func TestArchivalInsertQuota(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, &memory.Options{AgentQuotaBytes: 2000})
	ts := newToolset(t, st, "alice", nil)
	if _, err := st.Agent("alice").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 1}}); err != nil {
		t.Fatal(err)
	}
	var res = call(t, ts, "archival_insert", `{"content":"first fact"}`)
	for i := 0; !res.IsError && i < 20; i++ {
		res = call(t, ts, "archival_insert", fmt.Sprintf(`{"content":"fact %02d, a short one"}`, i))
	}
	if !res.IsError {
		t.Fatalf("never refused: %q", res.Content)
	}
	for _, w := range []string{`agent "alice"`, "quota of 2000 bytes", "nothing was stored", "cannot grow past this quota"} {
		if !strings.Contains(res.Content, w) {
			t.Errorf("result %q lacks %q", res.Content, w)
		}
	}
	used, err := st.Agent("alice").StorageUsed(ctx)
	if err != nil || used > 2000 {
		t.Fatalf("used %d (%v), past the quota", used, err)
	}
	if r := call(t, ts, "log_append", `{"label":"events","message":"one"}`); r.IsError {
		t.Fatalf("an append that rotates nothing: %q", r.Content)
	}
	before := snapshot(t, st)
	res = call(t, ts, "log_append", fmt.Sprintf(`{"label":"events","message":"two %s"}`, strings.Repeat("w", 1500)))
	if !res.IsError || !strings.Contains(res.Content, "quota") || strings.Contains(res.Content, "internal problem") {
		t.Fatalf("log_append rotating past the quota: %+v", res)
	}
	if after := snapshot(t, st); after != before {
		t.Errorf("a refused log_append changed the store:\n%s\nwas\n%s", after, before)
	}
}

// TestMaxEditChars: with Options.MaxEditChars, a block edit carrying more
// characters (its text, the text it replaces and its value together,
// counted as characters, not bytes) is a tool error telling the model to
// split it, and nothing is written; an edit of exactly the cap applies,
// and without the option the same edit applies too.
func TestMaxEditChars(t *testing.T) {
	const most = 40
	over := strings.Repeat("é", most+1) // 41 characters, 82 bytes
	for _, tc := range []struct {
		name, tool, args string
		refused          bool
	}{
		{"append within", "block_append", fmt.Sprintf(`{"label":"notes","text":%q}`, strings.Repeat("é", most)), false},
		{"append past", "block_append", fmt.Sprintf(`{"label":"notes","text":%q}`, over), true},
		{"replace: old and new together past", "block_replace", fmt.Sprintf(`{"label":"notes","old":"first line","new":%q}`, strings.Repeat("n", most-9)), true},
		{"replace: old and new together within", "block_replace", fmt.Sprintf(`{"label":"notes","old":"first line","new":%q}`, strings.Repeat("n", most-10)), false},
		{"insert line past", "block_insert_line", fmt.Sprintf(`{"label":"notes","line":1,"text":%q}`, over), true},
		{"set field past", "block_set_field", fmt.Sprintf(`{"label":"profile","field":"name","value":%q}`, over), true},
		{"push item past", "block_push_item", fmt.Sprintf(`{"label":"todo","item":%q}`, over), true},
		{"log entry past", "log_append", fmt.Sprintf(`{"label":"events","message":%q}`, over), true},
		{"log entry within (its message counted once)", "log_append", fmt.Sprintf(`{"label":"events","message":%q}`, strings.Repeat("l", most-20)), false},
		{"section past", "block_append", fmt.Sprintf(`{"label":"sections","section":"summary","text":%q}`, over), true},
	} {
		for _, capped := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/capped=%v", tc.name, capped), func(t *testing.T) {
				st := openStore(t, nil)
				fixture(t, st)
				opts := &tools.Options{}
				if capped {
					opts.MaxEditChars = most
				}
				ts := newToolset(t, st, "alice", opts)
				before := snapshot(t, st)
				res := call(t, ts, tc.tool, tc.args)
				if !capped || !tc.refused {
					if res.IsError {
						t.Fatalf("refused: %q", res.Content)
					}
					return
				}
				if !res.IsError {
					t.Fatalf("not refused: %q", res.Content)
				}
				for _, w := range []string{fmt.Sprintf("more than the %d one edit may carry", most), "several smaller edits"} {
					if !strings.Contains(res.Content, w) {
						t.Errorf("result %q lacks %q", res.Content, w)
					}
				}
				if after := snapshot(t, st); after != before {
					t.Errorf("a refused edit changed the store:\n%s\nwas\n%s", after, before)
				}
			})
		}
	}
}

// TestProposeEditHeldToMaxEditChars: propose_edit carries an edit as the
// block_* tools do and is held to the same cap, before the block is
// read or tried (a proposal of 1,000,000 characters on a Human block of
// the largest limit cost 9.6 s of CPU and +1.3 GiB, refused only
// afterwards by MaxProposalBytes).
func TestProposeEditHeldToMaxEditChars(t *testing.T) {
	const most = 40
	over := strings.Repeat("é", most+1)
	for _, tc := range []struct{ name, args string }{
		{"append_text", fmt.Sprintf(`{"label":"approval","op":"append_text","text":%q,"reason":"r"}`, over)},
		{"set_text", fmt.Sprintf(`{"label":"approval","op":"set_text","text":%q,"reason":"r"}`, over)},
		{"shared append_text", fmt.Sprintf(`{"owner":"bob","label":"shared_human","op":"append_text","text":%q,"reason":"r"}`, over)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, nil)
			fixture(t, st)
			ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: most})
			before := snapshot(t, st)
			res := call(t, ts, "propose_edit", tc.args)
			if !res.IsError || !strings.Contains(res.Content, fmt.Sprintf("more than the %d one edit may carry", most)) {
				t.Errorf("a propose_edit of %d characters under MaxEditChars %d: %q", most+1, most, res.Content)
			}
			if after := snapshot(t, st); after != before {
				t.Errorf("a propose_edit past the cap changed the store:\n%s\nwas\n%s", after, before)
			}
		})
	}
	// Within the cap it is proposed.
	st := openStore(t, nil)
	fixture(t, st)
	ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: most})
	if res := call(t, ts, "propose_edit", fmt.Sprintf(`{"label":"approval","op":"append_text","text":%q,"reason":"r"}`, strings.Repeat("é", most))); res.IsError {
		t.Errorf("a propose_edit of %d characters: %q", most, res.Content)
	}
}

// TestSetFieldCountsWhatItDeletes: block_set_field changes a text or list
// field in place, one operation per character or item it deletes, so a
// short value that clears a long one is held to MaxEditChars by what it
// deletes (a 2-character value cleared 50,000 characters under a cap of
// 5,000); clearing a field within the cap, or a change that deletes
// little, is applied.
func TestSetFieldCountsWhatItDeletes(t *testing.T) {
	const most = 5_000
	ctx := context.Background()
	items := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = "i"
		}
		return l
	}
	for _, tc := range []struct {
		name    string
		field   schema.FieldType
		old     any
		value   string
		refused bool
	}{
		{"text field of 6,000 cleared", schema.FieldText, strings.Repeat("t", 6_000), `""`, true},
		{"list field of 6,000 emptied", schema.FieldList, items(6_000), `[]`, true},
		{"text field of 3,000 cleared", schema.FieldText, strings.Repeat("t", 3_000), `""`, false},
		{"list field of 3,000 emptied", schema.FieldList, items(3_000), `[]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, nil)
			mustCreate(t, st, "alice", memory.BlockSpec{Label: "memo", CharLimit: blocks.MaxCharLimit,
				Schema: schema.Map{Fields: []schema.FieldDef{{Name: "body", Type: tc.field}}},
				Value:  map[string]any{"body": tc.old}})
			ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: most})
			before := snapshot(t, st)
			res := call(t, ts, "block_set_field", fmt.Sprintf(`{"label":"memo","field":"body","value":%s}`, tc.value))
			if res.IsError != tc.refused {
				t.Fatalf("refused %v, want %v: %q", res.IsError, tc.refused, res.Content)
			}
			if !tc.refused {
				return
			}
			if !strings.Contains(res.Content, fmt.Sprintf("more than the %d one edit may carry", most)) {
				t.Errorf("the refusal does not name the cap: %q", res.Content)
			}
			if after := snapshot(t, st); after != before {
				t.Errorf("a refused edit changed the store")
			}
			if _, err := st.Agent("alice").Block("memo").Render(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProposeCountsWhatItDeletes: propose_edit's set_text and set_field
// change a text (or list) in place: the edit, tried on a copy of the
// block now and applied on approval, deletes what differs, one operation
// per character or item, and is held to MaxEditChars by that as
// block_set_field is.
func TestProposeCountsWhatItDeletes(t *testing.T) {
	const most = 5_000
	for _, tc := range []struct {
		name string
		spec memory.BlockSpec
		args string
	}{
		{"set_text clearing 6,000 characters",
			memory.BlockSpec{Label: "big", Permission: blocks.Human, CharLimit: blocks.MaxCharLimit, Value: strings.Repeat("t", 6_000)},
			`{"label":"big","op":"set_text","text":"x","reason":"r"}`},
		{"set_field clearing a text field of 6,000",
			memory.BlockSpec{Label: "big", Permission: blocks.Human, CharLimit: blocks.MaxCharLimit,
				Schema: schema.Map{Fields: []schema.FieldDef{{Name: "body", Type: schema.FieldText}}},
				Value:  map[string]any{"body": strings.Repeat("t", 6_000)}},
			`{"label":"big","op":"set_field","field":"body","value":"","reason":"r"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, nil)
			mustCreate(t, st, "alice", tc.spec)
			ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: most})
			res := call(t, ts, "propose_edit", tc.args)
			if !res.IsError || !strings.Contains(res.Content, fmt.Sprintf("more than the %d one edit may carry", most)) {
				t.Errorf("a proposal deleting 6,000 characters under MaxEditChars %d: %q", most, res.Content)
			}
		})
	}
}

// TestSetFieldCheapEditsNotRefused: what a set_field deletes is counted
// as the block splices it: null deletes the field's key (one operation),
// and a list given one more number keeps every item it had (the stored
// items are int64, the edit's decoded ones float64: the same values).
func TestSetFieldCheapEditsNotRefused(t *testing.T) {
	const most = 8_000
	nums := make([]string, 3_000)
	numItems := make([]any, 3_000)
	for i := range nums {
		nums[i] = fmt.Sprint(i % 10)
		numItems[i] = int64(i % 10)
	}
	for _, tc := range []struct {
		name  string
		field schema.FieldDef
		old   any
		value string
	}{
		{"null clears an optional text field of 9,000", schema.FieldDef{Name: "body", Type: schema.FieldText}, strings.Repeat("t", 9_000), `null`},
		{"one number added to a list of 3,000 numbers (6,002 characters of JSON)", schema.FieldDef{Name: "body", Type: schema.FieldList}, numItems, "[" + strings.Join(nums, ",") + ",7]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, nil)
			mustCreate(t, st, "alice", memory.BlockSpec{Label: "memo", CharLimit: blocks.MaxCharLimit,
				Schema: schema.Map{Fields: []schema.FieldDef{tc.field}},
				Value:  map[string]any{"body": tc.old}})
			ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: most})
			if res := call(t, ts, "block_set_field", fmt.Sprintf(`{"label":"memo","field":"body","value":%s}`, tc.value)); res.IsError {
				t.Errorf("refused: %q", res.Content)
			}
		})
	}
}

// TestProposeReadOnlySectionMessage: a proposal the block could never
// apply says so once.
func TestProposeReadOnlySectionMessage(t *testing.T) {
	st := openStore(t, nil)
	mustCreate(t, st, "alice", memory.BlockSpec{Label: "hsec", Permission: blocks.Human, Value: map[string]any{"summary": "So far.", "locked": "do not touch"},
		Schema: schema.Composite{Sections: []schema.Section{
			{Name: "summary", Schema: schema.Text{}},
			{Name: "locked", ReadOnly: true, Schema: schema.Text{}},
		}}})
	ts := newToolset(t, st, "alice", nil)
	res := call(t, ts, "propose_edit", `{"label":"hsec","section":"locked","op":"set_text","text":"x","reason":"r"}`)
	want := `Error: permission denied: agent "alice" may not set_text on block "hsec": section "locked" is read-only; even if approved this edit could not be applied`
	if res.Content != want {
		t.Errorf("got  %q\nwant %q", res.Content, want)
	}
}
