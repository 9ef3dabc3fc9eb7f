package letta

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Report says what an import or export did with each part of an agent
// file: what was mapped to what, what was kept only as metadata (in the
// agent profile's "letta" extension, written back by an export) and what
// was not kept, each with why. Nothing is left out silently: a part of the
// input that appears in none of the three lists was not there.
type Report struct {
	// Direction is "import" or "export".
	Direction string        `json:"direction"`
	Agents    []AgentReport `json:"agents"`
	Mapped    []Item        `json:"mapped"`
	Metadata  []Item        `json:"kept_as_metadata"`
	NotKept   []Item        `json:"not_kept"`
	// Duration is how long the import or export took.
	Duration time.Duration `json:"duration_ns"`

	// index finds an item of a list by (list, agent, what, why) and
	// agentIdx an agent report by engram id, so that adding is constant
	// time whatever the number of lines.
	index    map[itemKey]int
	agentIdx map[string]int
}

type itemKey struct {
	list             *[]Item
	agent, what, why string
}

// AgentReport counts what one agent became.
type AgentReport struct {
	// Letta is the agent's name (and id within the file) in the agent file;
	// Agent its engram id.
	Letta  string `json:"letta"`
	FileID string `json:"file_id,omitempty"`
	Agent  string `json:"agent"`
	// Blocks are the blocks the agent owns; SharedWithIt those it sees
	// through a share.
	Blocks       int `json:"blocks"`
	SharedWithIt int `json:"shared_with_it"`
	Messages     int `json:"messages"`
	// ToolCalls and ToolReturns count calls and results; Paired the calls
	// whose result is in the same batch (compression never separates
	// them); Unpaired the calls or results without their other half.
	ToolCalls   int `json:"tool_calls"`
	ToolReturns int `json:"tool_returns"`
	Paired      int `json:"paired"`
	Unpaired    int `json:"unpaired"`
	// OutOfContext counts the messages kept in the history but outside the
	// context window (covered by a summary).
	OutOfContext int `json:"out_of_context,omitempty"`
	Tools        int `json:"tools"`
	ToolRules    int `json:"tool_rules"`
	Archival     int `json:"archival"`
}

// Item is one line of a report: which agent (if one), what, how many, and
// why (for Mapped: what it became).
type Item struct {
	Agent string `json:"agent,omitempty"`
	What  string `json:"what"`
	Count int    `json:"count,omitempty"`
	Why   string `json:"why"`
}

func (r *Report) add(list *[]Item, agent, what string, n int, why string) {
	k := itemKey{list, agent, what, why}
	if i, ok := r.index[k]; ok && i < len(*list) {
		if it := &(*list)[i]; it.Agent == agent && it.What == what && it.Why == why {
			it.Count += n
			return
		}
	}
	if r.index == nil {
		r.index = map[itemKey]int{}
	}
	r.index[k] = len(*list)
	*list = append(*list, Item{Agent: agent, What: what, Count: n, Why: why})
}

func (r *Report) mapped(agent, what string, n int, why string) { r.add(&r.Mapped, agent, what, n, why) }
func (r *Report) meta(agent, what string, n int, why string)   { r.add(&r.Metadata, agent, what, n, why) }
func (r *Report) notKept(agent, what string, n int, why string) {
	r.add(&r.NotKept, agent, what, n, why)
}

// Write prints the report as text.
func (r *Report) Write(w io.Writer) {
	for _, a := range r.Agents {
		name := a.Agent
		if a.Letta != "" && a.Letta != a.Agent {
			name = fmt.Sprintf("%s (Letta %q)", a.Agent, a.Letta)
		}
		fmt.Fprintf(w, "agent %s: %d blocks (+%d shared with it), %d messages (%d tool calls, %d paired, %d unpaired), %d tools, %d tool rules, %d archival entries\n",
			name, a.Blocks, a.SharedWithIt, a.Messages, a.ToolCalls, a.Paired, a.Unpaired, a.Tools, a.ToolRules, a.Archival)
	}
	section := func(title string, items []Item) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(w, "%s:\n", title)
		for _, it := range items {
			var b strings.Builder
			b.WriteString("  ")
			if it.Agent != "" {
				fmt.Fprintf(&b, "[%s] ", it.Agent)
			}
			b.WriteString(it.What)
			if it.Count > 1 {
				fmt.Fprintf(&b, " (%d)", it.Count)
			}
			fmt.Fprintf(&b, ": %s", it.Why)
			fmt.Fprintln(w, b.String())
		}
	}
	section("mapped", r.Mapped)
	section("kept only as metadata", r.Metadata)
	section("not kept", r.NotKept)
}

// agent returns the report of engram agent id, adding one.
func (r *Report) agent(letta, fileID, id string) *AgentReport {
	if i, ok := r.agentIdx[id]; ok && i < len(r.Agents) && r.Agents[i].Agent == id {
		return &r.Agents[i]
	}
	if r.agentIdx == nil {
		r.agentIdx = map[string]int{}
	}
	r.agentIdx[id] = len(r.Agents)
	r.Agents = append(r.Agents, AgentReport{Letta: letta, FileID: fileID, Agent: id})
	return &r.Agents[len(r.Agents)-1]
}
