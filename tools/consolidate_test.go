package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

func TestArchivalConsolidateTool(t *testing.T) {
	st := openStore(t, nil)
	ts := newToolset(t, st, "alice", nil)
	if res := call(t, ts, "archival_consolidate", `{"dry_run": false}`); res.IsError || !strings.Contains(res.Content, "empty") {
		t.Fatalf("empty memory: %+v", res)
	}
	for _, c := range []string{"Bob prefers green tea in the morning before work", "Bob prefers green tea in the morning before work, really"} {
		if res := call(t, ts, "archival_insert", `{"content": "`+c+`"}`); res.IsError {
			t.Fatal(res)
		}
	}
	if res := call(t, ts, "archival_insert", `{"content": "bob prefers green tea in the morning before work"}`); res.IsError || !strings.Contains(res.Content, "Already stored") {
		t.Fatalf("duplicate insert: %+v", res)
	}
	res := call(t, ts, "archival_consolidate", `{"dry_run": true}`)
	if res.IsError || !strings.Contains(res.Content, `"kind":"near-exact"`) || !strings.Contains(res.Content, "Dry run") {
		t.Fatalf("dry run: %+v", res)
	}
	res = call(t, ts, "archival_consolidate", `{"dry_run": false}`)
	if res.IsError || !strings.Contains(res.Content, `"proposal":`) {
		t.Fatalf("consolidate: %+v", res)
	}
	ps, err := st.Agent("alice").Proposals(context.Background())
	if err != nil || len(ps) != 1 || ps[0].Merge == nil {
		t.Fatalf("proposals %+v, %v", ps, err)
	}
	if n, _ := st.Agent("alice").Archival().List(context.Background(), nil); len(n) != 2 {
		t.Fatalf("the tool changed memory: %d live entries", len(n))
	}
}

// TestArchivalConsolidateToolCapped: a dry run over many clusters of long
// texts returns at most the cap, each text cut with a marker, and says how
// many groups it left out.
func TestArchivalConsolidateToolCapped(t *testing.T) {
	st := openStore(t, nil)
	ts := newToolset(t, st, "alice", nil)
	ctx := context.Background()
	long := strings.Repeat("the quarterly report lists revenue cost margin growth ", 40)
	var entries []memory.ArchivalEntry
	for i := range 120 {
		base := fmt.Sprintf("fact %d topic%d: %s", i, i, long)
		entries = append(entries, memory.ArchivalEntry{Content: base}, memory.ArchivalEntry{Content: base + " really"})
	}
	if _, err := st.Agent("alice").Archival().InsertBatch(ctx, entries, nil); err != nil {
		t.Fatal(err)
	}
	res := call(t, ts, "archival_consolidate", `{"dry_run": true}`)
	if res.IsError {
		t.Fatal(res)
	}
	if len(res.Content) > 20<<10 {
		t.Fatalf("result of %d bytes (want at most about 16 KiB)", len(res.Content))
	}
	var out struct {
		Groups []struct {
			Texts []string `json:"texts"`
		} `json:"groups"`
		Omitted int    `json:"omitted_groups"`
		Note    string `json:"note"`
	}
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Groups) == 0 || out.Omitted == 0 || len(out.Groups)+out.Omitted != 120 || !strings.Contains(out.Note, "truncated") {
		t.Fatalf("%d groups shown, %d omitted, note %q (want some of each, 120 in all, a truncation note)", len(out.Groups), out.Omitted, out.Note)
	}
	if tx := out.Groups[0].Texts[0]; !strings.Contains(tx, "[truncated:") || len([]rune(tx)) > 400 {
		t.Fatalf("text not cut: %d characters", len([]rune(tx)))
	}
}
