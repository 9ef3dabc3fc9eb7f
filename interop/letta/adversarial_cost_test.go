package letta_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
)

func toDump(t *testing.T, doc map[string]any) (*memory.Dump, time.Duration, int) {
	t.Helper()
	data := marshal(t, doc)
	f, err := letta.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, _, err := letta.ToDump(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d, time.Since(start), len(data)
}

func extensionBytes(d *memory.Dump) int {
	n := 0
	for _, p := range d.Profiles {
		n += len(p.Profile.Extensions[letta.ExtensionName])
	}
	return n
}

// linearCost fails t unless mapping the document doc(n) costs about 16
// times what doc(n/16) does: a quadratic step makes it up to 256 times.
// Comparing two sizes in one run holds on a slow or loaded machine and
// under the race detector, where a wall-clock budget does not. Each
// size's time is the best of three runs, the two sizes taken in turn so
// that a busy spell of the machine slows both alike.
func linearCost(t *testing.T, what string, n int, doc func(n int) map[string]any) {
	t.Helper()
	docs := []map[string]any{doc(n / 16), doc(n)}
	least := make([]time.Duration, 2)
	var size int
	for i := range 3 {
		for j, d := range docs {
			runtime.GC()
			_, took, sz := toDump(t, d)
			if i == 0 || took < least[j] {
				least[j] = took
			}
			if j == 1 {
				size = sz
			}
		}
	}
	small, big := least[0], least[1]
	growth := float64(big) / float64(max(small, time.Microsecond))
	t.Logf("%d %s: ToDump %v; %d: %v (%.1fx for 16x the input; %d-byte file)", n/16, what, small, n, big, growth, size)
	// Linear is 16–42x on a quiet machine and reached 86x with four -race
	// test binaries on 2 cores; a quadratic scan is 257–268x.
	if growth > 128 {
		t.Errorf("mapping %d %s took %v, %d took %v: %.1fx for 16x the input, want about 16x (linear; 128x fails)", n, what, big, n/16, small, growth)
	}
}

// A group's agent_ids are deduplicated with slices.Contains: quadratic in
// the list's length. A sub-megabyte file must not cost seconds.
func TestGroupAgentListCostIsLinear(t *testing.T) {
	linearCost(t, "agent ids in one group", 60000, func(n int) map[string]any {
		doc := minimalDoc()
		ids := make([]any, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("x%d", i)
		}
		doc["groups"] = []any{map[string]any{"id": "group-0", "agent_ids": ids, "description": "g"}}
		return doc
	})
}

// An agent's tools are deduplicated by name with slices.ContainsFunc:
// quadratic in the number of tools.
func TestAgentToolListCostIsLinear(t *testing.T) {
	linearCost(t, "tools of one agent", 30000, func(n int) map[string]any {
		doc := minimalDoc()
		tools := make([]any, n)
		tids := make([]any, n)
		for i := range tools {
			tools[i] = map[string]any{"id": fmt.Sprintf("tool-%d", i), "name": fmt.Sprintf("t%d", i)}
			tids[i] = fmt.Sprintf("tool-%d", i)
		}
		doc["tools"] = tools
		firstAgent(doc)["tool_ids"] = tids
		return doc
	})
}

// Every group is copied, with its member list, into the extension of each
// of its members: A agents in G groups of all of them store A*G*A names
// from a file of G*A names.
func TestGroupsDoNotAmplifyExtensions(t *testing.T) {
	doc := minimalDoc()
	const A, G = 150, 150
	var agents, gids, groups []any
	for i := 0; i < A; i++ {
		agents = append(agents, map[string]any{"id": fmt.Sprintf("agent-%d", i), "name": fmt.Sprintf("a%d", i), "system": "",
			"group_ids": []any{}})
	}
	for g := 0; g < G; g++ {
		var ids []any
		for i := 0; i < A; i++ {
			ids = append(ids, fmt.Sprintf("agent-%d", i))
		}
		groups = append(groups, map[string]any{"id": fmt.Sprintf("group-%d", g), "agent_ids": ids, "description": ""})
		gids = append(gids, fmt.Sprintf("group-%d", g))
	}
	for _, a := range agents {
		a.(map[string]any)["group_ids"] = gids
	}
	doc["agents"], doc["groups"] = agents, groups
	d, took, size := toDump(t, doc)
	ext := extensionBytes(d)
	t.Logf("%d-byte file: %d bytes of extensions, ToDump %v", size, ext, took)
	if ext > 10*size {
		t.Errorf("a %d-byte file stores %d bytes of extensions (%.0fx)", size, ext, float64(ext)/float64(size))
	}
}

// A tool's fields engram does not model (source_code) are copied into the
// extension of every agent that lists it.
func TestSharedToolDoesNotAmplifyExtensions(t *testing.T) {
	doc := minimalDoc()
	const A = 200
	var agents []any
	for i := 0; i < A; i++ {
		agents = append(agents, map[string]any{"id": fmt.Sprintf("agent-%d", i), "name": fmt.Sprintf("a%d", i), "system": "",
			"tool_ids": []any{"tool-0"}})
	}
	doc["agents"] = agents
	doc["tools"] = []any{map[string]any{"id": "tool-0", "name": "t", "source_code": strings.Repeat("x", 200<<10),
		"json_schema": map[string]any{"name": "t", "parameters": map[string]any{"type": "object"}}}}
	d, _, size := toDump(t, doc)
	ext := extensionBytes(d)
	t.Logf("%d-byte file: %d bytes of extensions", size, ext)
	if ext > 10*size {
		t.Errorf("a %d-byte file stores %d bytes of extensions (%.0fx)", size, ext, float64(ext)/float64(size))
	}
}

var _ = json.Marshal

// Report.add finds an item by a linear scan, and several items name one
// id each (in-context message ids, block ids, tool ids, messages outside
// the window): a list of unknown ids costs quadratic time.
func TestUnknownInContextIDsCostIsLinear(t *testing.T) {
	linearCost(t, "unknown in-context ids", 60000, func(n int) map[string]any {
		doc := minimalDoc()
		ids := make([]any, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("m%d", i)
		}
		firstAgent(doc)["in_context_message_ids"] = ids
		return doc
	})
}
