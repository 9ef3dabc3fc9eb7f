package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

// BuildRequest builds the request an agent's model would get, as "engram
// context" does: the default configuration, the agent's messages and the
// memory tools' definitions.
func BuildRequest(ctx context.Context, store memory.Store, agent, model string) (*builder.Request, error) {
	b := builder.New(store, builder.DefaultConfig()).ForAgent(agent).WithMessages(store).
		WithModelInfo(builder.ModelInfoFor(model))
	list, err := MemoryTools(store, agent)
	if err != nil {
		return nil, err
	}
	req, err := b.WithTools(list).Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("ui: build the request of %q for %q: %w", agent, model, err)
	}
	return req, nil
}

// MemoryTools is the definitions of agent's memory tools, as a builder
// tool list.
func MemoryTools(store memory.Store, agent string) (builder.ToolList, error) {
	ts, err := tools.New(store, agent, nil)
	if err != nil {
		return nil, fmt.Errorf("ui: memory tools for %q: %w", agent, err)
	}
	var list builder.ToolList
	for _, t := range ts.Tools() {
		bt, err := builder.NewTool(t.Name, t.Description, t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("ui: tool %q: %w", t.Name, err)
		}
		list = append(list, bt)
	}
	return list, nil
}

type sectionRow struct {
	Name   string
	Hash   string
	Tokens int
	Stable bool
	Text   clipped
	Budget int
}

type messageRow struct {
	ID      int64
	Role    string
	Name    string
	Batch   string
	Content clipped
	Calls   []string
}

type toolRow struct {
	Name        string
	Description string
	Parameters  string
}

type contextData struct {
	Agents   []string
	Agent    string
	Model    string
	Models   []string
	Built    bool
	Meta     builder.Metadata
	Sections []sectionRow
	Totals   []sectionRow
	Messages []messageRow
	Tools    []toolRow
	// Dropped is every block, attachment, library artifact and recalled
	// memory left out, with why.
	Dropped []builder.Dropped
	Order   string
}

// models suggested in the context page's model box (any name works).
var suggestedModels = []string{"gpt-4o", "gpt-4o-mini", "o3", "claude-sonnet-4", "gemini-2.0-flash", "gemma-3"}

func (s *Server) handleContext(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	agents, ok := s.agentList(w, r, q.Get("agent"))
	if !ok {
		return
	}
	d := contextData{Agents: agents, Agent: q.Get("agent"), Model: strings.TrimSpace(q.Get("model")), Models: suggestedModels}
	if d.Model == "" {
		d.Model = s.opts.Model
	}
	if d.Agent == "" && len(agents) > 0 {
		d.Agent = agents[0]
	}
	p := page{Title: "Context", Nav: "context", Data: &d}
	if d.Agent == "" {
		s.render(w, r, http.StatusOK, "context", p)
		return
	}
	req, err := BuildRequest(ctx, s.store, d.Agent, d.Model)
	if err != nil {
		s.failErr(w, r, "Build the context", err)
		return
	}
	d.Built, d.Meta = true, req.Metadata
	tk := req.Metadata.Tokens
	budget := tk.InputBudget
	for _, sec := range req.Sections {
		b := sectionBudget(tk, sec.Name)
		d.Sections = append(d.Sections, sectionRow{Name: sec.Name, Hash: sec.Hash, Tokens: sec.Tokens, Stable: sec.Stable,
			Text: clip(sec.Text, s.opts.MaxChars), Budget: b})
	}
	hb := tk.HistoryBudget
	if hb <= 0 {
		hb = budget
	}
	d.Totals = []sectionRow{
		{Name: "system prompt", Tokens: tk.System, Budget: budget},
		{Name: "tool definitions", Tokens: tk.Tools, Budget: budget},
		{Name: "history", Tokens: tk.History, Budget: hb},
		{Name: "total", Tokens: tk.Total, Budget: budget},
	}
	for _, m := range req.Messages {
		mr := messageRow{ID: m.ID, Role: string(m.Role), Name: m.Name, Batch: m.BatchID, Content: clip(m.Content, s.opts.MaxChars)}
		for _, c := range m.ToolCalls {
			mr.Calls = append(mr.Calls, fmt.Sprintf("%s(%s)", c.Name, c.Arguments))
		}
		d.Messages = append(d.Messages, mr)
	}
	for _, t := range req.Tools {
		params := string(t.Parameters)
		var v any
		if json.Unmarshal(t.Parameters, &v) == nil {
			if b, err := json.MarshalIndent(v, "", "  "); err == nil {
				params = string(b)
			}
		}
		d.Tools = append(d.Tools, toolRow{Name: t.Name, Description: t.Description, Parameters: params})
	}
	md := req.Metadata
	d.Dropped = append(append(append(d.Dropped, md.BlocksDropped...), md.LibraryDropped...), md.RecalledDropped...)
	var order []string
	for _, l := range md.TruncationOrder {
		order = append(order, string(l))
	}
	d.Order = strings.Join(order, " → ")
	p.Live = []string{d.Agent}
	s.render(w, r, http.StatusOK, "context", p)
}

// sectionBudget is the budget a section's tokens count against: the
// memory budget for the memory sections, else the input budget.
func sectionBudget(tk builder.TokenUsage, name string) int {
	switch name {
	case builder.SectionCore, builder.SectionWorking, builder.SectionAttachments:
		if tk.MemoryBudget > 0 {
			return tk.MemoryBudget
		}
	case builder.SectionLibrary:
		if tk.LibraryBudget > 0 {
			return tk.LibraryBudget
		}
	case builder.SectionRecalled:
		if tk.RecallBudget > 0 {
			return tk.RecallBudget
		}
	}
	return tk.InputBudget
}

func percent(n, of int) string {
	if of <= 0 {
		return ""
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}
