package letta_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
)

// No input makes Parse, ToDump or FromDumps panic: an agent file is
// untrusted. What ToDump accepts, FromDumps writes back as a file Parse
// reads.
func FuzzAgentFile(f *testing.F) {
	for _, p := range agentFiles(f) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"agents": [{"id": "a", "name": "x", "block_ids": ["b", "b", "c"], "messages": [{"id": "m", "role": "tool", "tool_returns": [{}, {}]}]}], "blocks": [{"id": "b", "label": "bad label!", "value": "v", "limit": 0}]}`))
	f.Add([]byte(`{"agents": [{"id": "a", "name": " "}], "tools": []}`))
	f.Add([]byte(`"{\"agents\": [], \"blocks\": []}"`))
	now := func() time.Time { return time.Unix(1700000000, 0) }
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := letta.Parse(data)
		if err != nil {
			return
		}
		d, rep, err := letta.ToDump(file, &letta.ImportOptions{Now: now})
		if err != nil {
			return
		}
		if rep == nil || d.Version != memory.DumpVersion {
			t.Fatalf("ToDump: report %v, dump version %d", rep, d.Version)
		}
		out, _, err := letta.FromDumps([]*memory.Dump{d}, nil, &letta.ExportOptions{Now: now})
		if err != nil {
			return
		}
		js, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("the export does not marshal: %v", err)
		}
		if _, err := letta.Parse(js); err != nil {
			t.Fatalf("the export does not parse: %v", err)
		}
	})
}
