package tools_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/tools"
)

// A log_append to a full Log section of a Composite block rotates out as
// many of the section's oldest entries as its message needs room for;
// finding how many must not render the whole block once per entry
// (entries × block: at the largest limit, 41,000 entries and a message of
// 49,000 characters cost 17 s of CPU). The same append rotating the same
// entries costs about what it costs in a Log block, and keeps the same
// entries.
func TestLogSectionRotationCost(t *testing.T) {
	const entries, msg = 8_000, 40_000
	ctx := context.Background()
	took := map[bool]time.Duration{}
	kept := map[bool]int{}
	for _, composite := range []bool{false, true} {
		var es []blocks.LogEntry
		for i := range entries {
			es = append(es, blocks.LogEntry{Message: fmt.Sprint(i % 10), Timestamp: epoch})
		}
		spec := memory.BlockSpec{Label: "desk", CharLimit: blocks.MaxCharLimit, Type: blocks.Log, Schema: schema.Log{Retention: 1_000_000}, Value: es}
		args := fmt.Sprintf(`{"label":"desk","message":%q}`, strings.Repeat("m", msg))
		section := ""
		if composite {
			section = "events"
			spec = memory.BlockSpec{Label: "desk", CharLimit: blocks.MaxCharLimit,
				Schema: schema.Composite{Sections: []schema.Section{{Name: "events", Schema: schema.Log{Retention: 1_000_000}}}},
				Value:  map[string]any{"events": es}}
			args = fmt.Sprintf(`{"label":"desk","section":"events","message":%q}`, strings.Repeat("m", msg))
		}
		// The limit just above the block's size: the append must rotate.
		probe := openStore(t, nil)
		mustCreate(t, probe, "alice", spec)
		size, err := probe.Agent("alice").Block("desk").Render(ctx)
		if err != nil {
			t.Fatal(err)
		}
		spec.CharLimit = utf8.RuneCountInString(size) + 10
		st := openStore(t, nil)
		mustCreate(t, st, "alice", spec)
		if _, err := st.Agent("alice").Block("desk").Doc(ctx); err != nil {
			t.Fatal(err)
		}
		ts := newToolset(t, st, "alice", &tools.Options{MaxEditChars: 2*msg + 100})
		start := time.Now()
		res := call(t, ts, "log_append", args)
		took[composite] = time.Since(start)
		if res.IsError {
			t.Fatalf("composite=%v: %s", composite, res.Content)
		}
		doc, err := st.Agent("alice").Block("desk").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := doc.Section(section).LogEntries(0)
		if err != nil {
			t.Fatal(err)
		}
		kept[composite] = len(got)
		if r, err := st.Agent("alice").Block("desk").Render(ctx); err != nil || utf8.RuneCountInString(r) > spec.CharLimit {
			t.Fatalf("composite=%v: the block is %d characters, its limit %d (%v)", composite, utf8.RuneCountInString(r), spec.CharLimit, err)
		}
	}
	t.Logf("Log block %v, Composite's Log section %v; entries kept %d and %d", took[false], took[true], kept[false], kept[true])
	if kept[true] != kept[false] {
		t.Errorf("the section kept %d entries, the Log block %d", kept[true], kept[false])
	}
	if r := float64(took[true]) / float64(took[false]); r > 10 {
		t.Errorf("the same append rotating the same entries took %.0f× as long in a Composite's Log section as in a Log block", r)
	}
}
