package ui

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/tools"
)

// BuildRequest builds the request an agent's model would get with the
// default layers (BuildContext with only Agent and Model set).
func BuildRequest(ctx context.Context, store *memory.Store, agent, model string) (*builder.Request, error) {
	return BuildContext(ctx, store, &ContextOptions{Agent: agent, Model: model})
}

// ContextOptions choose what BuildContext puts in a request: "engram
// context" and the Context page both build through it, so they agree. The
// zero value of each field is the default.
type ContextOptions struct {
	Agent string
	// Model names the model (default: the agent profile's, else
	// DefaultModel): its limits (see builder.KnownModelLimits), tokenizer
	// and request shape.
	Model string
	// NoProfile builds without the agent's profile (its system prompt,
	// tools, tool rules and model; see builder.Builder.WithProfile).
	NoProfile bool
	// Base replaces the builder's default base instructions when not nil.
	Base *string
	// Message is the current user message ("": none): it ends the history
	// and is what memories are recalled for.
	Message string
	// Recall is how many archival memories to recall for Message (0: no
	// recall layer); RecallMode is their search's mode (Auto: hybrid with
	// an embedder, else full-text).
	Recall     int
	RecallMode search.Mode
	// NoEnvironment leaves out the environment section (date, time zone,
	// engram version, tools).
	NoEnvironment bool
	// NoLibrary leaves out the agent's context library.
	NoLibrary bool
	// NoTools leaves out the memory tools' definitions.
	NoTools bool
	// MaxTokens overrides the model's context window (0: the profile's
	// when it names the model built for, else the known one, or
	// builder.DefaultMaxTokens for a model engram does not know).
	MaxTokens   int
	BatchBlocks []string
	ActiveBatch string
	// OmitDescriptions, IncludeSchemas and ShowCharUsage are the
	// builder.ContextConfig fields of those names.
	OmitDescriptions, IncludeSchemas, ShowCharUsage bool
	// Location is the environment section's time zone (nil: UTC).
	Location *time.Location
}

// DefaultModel is the model a context is built for when none is named.
const DefaultModel = "gpt-4o"

// BuildContext builds the request agent's model would get: the agent's
// blocks, messages, memory tools, environment and context library, and
// with a message, the memories recalled for it.
func BuildContext(ctx context.Context, store *memory.Store, o *ContextOptions) (*builder.Request, error) {
	var opts ContextOptions
	if o != nil {
		opts = *o
	}
	var prof memory.Profile
	if !opts.NoProfile && opts.Agent != "" {
		p, err := store.Agent(opts.Agent).Profile(ctx)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			return nil, fmt.Errorf("ui: profile of %q: %w", opts.Agent, err)
		}
		prof = p
	}
	model := cmp.Or(opts.Model, prof.Model, DefaultModel)
	cfg := builder.DefaultConfig()
	cfg.ModelOverrides = builder.KnownModelLimits()
	if opts.MaxTokens > 0 {
		cfg.ModelOverrides[model] = builder.WindowLimits(opts.MaxTokens)
	} else if prof.ContextWindow > 0 && model == prof.Model {
		cfg.ModelOverrides[model] = builder.WindowLimits(prof.ContextWindow)
	}
	cfg.OmitDescriptions, cfg.IncludeSchemas, cfg.ShowCharUsage = opts.OmitDescriptions, opts.IncludeSchemas, opts.ShowCharUsage
	if opts.Recall > 0 {
		cfg.Recall = &builder.RecallOptions{Mode: opts.RecallMode, Limit: opts.Recall}
	}
	cfg.TokenCounts = store
	if !opts.NoLibrary {
		cfg.Library = &builder.LibraryOptions{}
	}
	b := builder.New(store.Agent(opts.Agent), cfg).WithMessages(store.Agent(opts.Agent).Messages()).WithModelInfo(builder.ModelInfoFor(model)).
		WithBatchBlocks(opts.BatchBlocks...)
	if opts.Base != nil {
		b = b.WithBaseInstructions(*opts.Base)
	}
	if opts.NoProfile {
		b = b.WithoutProfile()
	}
	if opts.ActiveBatch != "" {
		b = b.WithActiveBatch(opts.ActiveBatch)
	}
	if opts.Message != "" {
		b = b.WithCurrentMessage(memory.Message{Agent: opts.Agent, Role: memory.RoleUser, Content: opts.Message})
	}
	if !opts.NoEnvironment {
		b = b.WithEnvironment(builder.Environment{Location: opts.Location, OS: runtime.GOOS})
	}
	if !opts.NoTools {
		list, err := MemoryTools(store, opts.Agent)
		if err != nil {
			return nil, err
		}
		b = b.WithTools(list)
	}
	req, err := b.Build(ctx)
	if err != nil {
		return nil, fmt.Errorf("ui: build the request of %q for %q: %w", opts.Agent, model, err)
	}
	return req, nil
}

// ModelNotes are what a reader of a context built for model should know
// about its numbers: a model engram does not know gets the default window
// and cl100k_base counts; Claude and Gemini counts are estimates.
func ModelNotes(model string, maxTokens int) []string {
	model = cmp.Or(model, DefaultModel)
	k := builder.KnowModel(model)
	var notes []string
	if !k.KnownLimits && maxTokens <= 0 {
		notes = append(notes, fmt.Sprintf("model %q is not one engram knows: its context window is taken as %d tokens (set --max-tokens) and its tokens are counted with %s, an estimate",
			model, builder.DefaultMaxTokens, builder.EncodingForModel(model)))
	} else if !k.ExactTokens {
		notes = append(notes, fmt.Sprintf("token counts for %q are %s estimates: its own tokenizer is not available offline", model, builder.EncodingForModel(model)))
	}
	return notes
}

// MemoryTools is the definitions of agent's memory tools, as a builder
// tool list.
func MemoryTools(store *memory.Store, agent string) (builder.ToolList, error) {
	ts, err := tools.New(store.Agent(agent), nil)
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
	// The form's layer choices, as "engram context" takes them.
	Message       string
	Recall        int
	RecallMode    string
	RecallModes   []string
	NoEnvironment bool
	NoLibrary     bool
	MaxTokens     int
	// Notes say what the numbers rest on (ModelNotes).
	Notes []string
}

// models suggested in the context page's model box (any name works).
var suggestedModels = []string{"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-5", "o3", "claude-sonnet-4-5", "claude-opus-4-1", "gemini-2.5-pro", "gemini-2.5-flash", "gemma-3"}

func (s *Server) handleContext(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	agents, ok := s.agentList(w, r, q.Get("agent"))
	if !ok {
		return
	}
	d := contextData{Agents: agents, Agent: q.Get("agent"), Model: strings.TrimSpace(q.Get("model")), Models: suggestedModels,
		Message: q.Get("message"), RecallMode: cmp.Or(q.Get("recall_mode"), "auto"), RecallModes: []string{"auto", "fts", "vector", "hybrid"},
		NoEnvironment: q.Get("no_environment") != "", NoLibrary: q.Get("no_library") != ""}
	if d.Model == "" {
		d.Model = s.opts.Model
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"recall", &d.Recall}, {"max_tokens", &d.MaxTokens}} {
		if v := strings.TrimSpace(q.Get(f.name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				s.fail(w, r, http.StatusBadRequest, "Build the context", fmt.Sprintf("%s %q is not a count", f.name, v))
				return
			}
			*f.v = n
		}
	}
	mode, err := search.ParseMode(d.RecallMode)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "Build the context", err.Error())
		return
	}
	if d.Agent == "" && len(agents) > 0 {
		d.Agent = agents[0]
	}
	p := page{Title: "Context", Nav: "context", Data: &d}
	if d.Agent == "" {
		s.render(w, r, http.StatusOK, "context", p)
		return
	}
	req, err := BuildContext(ctx, s.store, &ContextOptions{Agent: d.Agent, Model: d.Model, Message: d.Message, Recall: d.Recall,
		RecallMode: mode, NoEnvironment: d.NoEnvironment, NoLibrary: d.NoLibrary, MaxTokens: d.MaxTokens, Location: time.Local})
	if err != nil {
		s.failErr(w, r, "Build the context", err)
		return
	}
	d.Built, d.Meta, d.Notes = true, req.Metadata, ModelNotes(d.Model, d.MaxTokens)
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

// SectionBudget is the budget a section's tokens count against: the
// memory budget for the memory sections, the library's and the recall's
// own, else the input budget ("engram context" shows the same bars).
func SectionBudget(tk builder.TokenUsage, name string) int { return sectionBudget(tk, name) }

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
