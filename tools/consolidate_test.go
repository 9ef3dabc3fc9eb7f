package tools_test

import (
	"context"
	"strings"
	"testing"
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
