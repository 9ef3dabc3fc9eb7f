package builder

import (
	"bytes"
	"slices"
	"sync"

	"github.com/engram-go/engram/toolrules"
)

// definitionMemo keeps the tool definitions and tool rules of the last
// build, as given and as made: most builds pass the same ones again, and
// comparing them costs less than compacting and encoding the JSON Schemas
// and rendering the rules anew.
type definitionMemo struct {
	mu          sync.Mutex
	toolsIn     []Tool // a deep copy of what was given
	toolsOut    []Tool
	toolsDigest []byte
	rulesIn     []toolrules.Rule // a deep copy; nil, rendered "", at first
	rulesText   string
}

// toolJSON returns compileTools(in), from the memo when in equals the last
// tools given. The tools returned are the caller's: their Parameters are
// copies.
func (c *Cache) toolJSON(in []Tool) ([]Tool, []byte, error) {
	if c == nil {
		return compileTools(in)
	}
	m := &c.defs
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.toolsOut == nil || !slices.EqualFunc(in, m.toolsIn, sameTool) {
		tools, digest, err := compileTools(in)
		if err != nil {
			return nil, nil, err
		}
		m.toolsIn, m.toolsOut, m.toolsDigest = cloneTools(in), tools, digest
	}
	return cloneTools(m.toolsOut), m.toolsDigest, nil
}

func sameTool(a, b Tool) bool {
	return a.Name == b.Name && a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters)
}

// cloneTools copies tools and their Parameters (into one allocation).
func cloneTools(tools []Tool) []Tool {
	n := 0
	for _, t := range tools {
		n += len(t.Parameters)
	}
	arena := make([]byte, 0, n)
	out := make([]Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		if t.Parameters != nil {
			start := len(arena)
			arena = append(arena, t.Parameters...)
			out[i].Parameters = arena[start:len(arena):len(arena)]
		}
	}
	return out
}

// rulesText returns EscapeTags(toolrules.Render(rules)), from the memo
// when rules equal the last rules given.
func (c *Cache) rulesText(rules []toolrules.Rule) string {
	if c == nil {
		return EscapeTags(toolrules.Render(rules))
	}
	m := &c.defs
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.EqualFunc(rules, m.rulesIn, sameRule) {
		in := slices.Clone(rules)
		for i := range in {
			in[i].Tools = slices.Clone(in[i].Tools)
		}
		m.rulesIn, m.rulesText = in, EscapeTags(toolrules.Render(rules))
	}
	return m.rulesText
}

func sameRule(a, b toolrules.Rule) bool {
	return a.Kind == b.Kind && a.Tool == b.Tool && slices.Equal(a.Tools, b.Tools) && a.N == b.N && a.Duration == b.Duration
}
