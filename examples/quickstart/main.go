// Command quickstart is the README's first command. Offline and
// self-contained, it walks the main job end to end:
//
//  1. opens a store (a SQLite file in a temp dir, offline embedder);
//  2. creates Core / Working / Log blocks for an agent;
//  3. shares a block with a second agent, and both edit it concurrently —
//     the CRDT merges their appends;
//  4. inserts archival notes and searches them (hybrid: BM25 + vectors);
//  5. records a conversation in batches and lets the agent use its memory
//     tools under tool rules;
//  6. builds the model request: XML-tagged memory, tool rules, compressed
//     history — and prints it with its metadata.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/toolrules"
	"github.com/engram-go/engram/tools"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func section(title string) { fmt.Printf("\n━━ %s ━━\n", title) }

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "engram-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memory.db")

	// 1. A store on a SQLite file, with the deterministic offline embedder
	// (swap in search.NewOpenAI(nil) for Ollama / OpenAI / vLLM).
	store, err := memory.Open(ctx, path, &memory.Options{Embedder: search.NewOffline(384)})
	if err != nil {
		return err
	}
	defer store.Close()
	section("store")
	fmt.Println("opened", path)

	// 2. Blocks of each type and several schemas. Acting as an agent is a
	// handle you hold, not a string you repeat.
	const agent = "entropy"
	entropy := store.Agent(agent)
	specs := []memory.BlockSpec{
		{Label: "persona", Type: blocks.Core, Permission: blocks.Append, Description: "Who you are.",
			Value: "I am Entropy, a task breakdown specialist."},
		{Label: "user_profile", Type: blocks.Core, Description: "What you know about the user.",
			Schema: schema.Map{Fields: []schema.FieldDef{
				{Name: "name", Type: schema.FieldString},
				{Name: "plan", Type: schema.FieldString, ReadOnly: true, Default: "pro"},
				{Name: "sessions", Type: schema.FieldCounter},
			}}, Value: map[string]any{"name": "Ada"}},
		{Label: "tasks", Type: blocks.Working, Pinned: true, Description: "The current plan.",
			Schema: schema.List{Checkbox: true, MaxItems: 20}, Value: []any{"outline the plan", "write the tests", "ship it"}},
		{Label: "events", Type: blocks.Log, Permission: blocks.Append, Schema: schema.Log{DisplayLimit: 3, Retention: 50}},
	}
	for _, s := range specs {
		if _, err := entropy.CreateBlock(ctx, s); err != nil {
			return err
		}
	}
	if err := entropy.Block("user_profile").Apply(ctx, memory.Edit{Op: blocks.OpIncrementCounter, Field: "sessions", Delta: 1}); err != nil {
		return err
	}
	// Append permission: the agent may add to its persona, not rewrite it.
	err = entropy.Block("persona").SetText(ctx, "I am someone else.")
	section("permissions")
	fmt.Println("rewrite of an Append block:", err)

	// 3. A block owned by "archive", shared with entropy (Append). Both
	// agents append at the same time; the CRDT keeps every line.
	archive := store.Agent("archive")
	notesBlock, err := archive.CreateBlock(ctx, memory.BlockSpec{Label: "project_notes", Type: blocks.Working, Pinned: true,
		Value: "Notes on the export bug:\n"})
	if err != nil {
		return err
	}
	if err := notesBlock.Share(ctx, agent, blocks.Append); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	// The owner's handle and the sharee's handle on the same block.
	for _, b := range []*memory.Block{notesBlock, entropy.Shared("archive", "project_notes")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 3; i++ {
				line := fmt.Sprintf("- %s: finding %d\n", b.Accessor(), i)
				if err := b.Append(ctx, line); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	notes, _ := notesBlock.Render(ctx)
	section("shared block after concurrent edits by two agents")
	fmt.Print(notes)

	// 4. Archival memory and search.
	for _, n := range []struct {
		text string
		tags []string
	}{
		{"Ada prefers answers as short bullet lists.", []string{"preferences"}},
		{"The export bug appears only for CSV files larger than 2 GB.", []string{"bugs", "export"}},
		{"Release 1.4 is planned for the first week of March.", []string{"planning"}},
		{"Ada's team reviews pull requests on Tuesdays.", []string{"team"}},
	} {
		if _, err := entropy.Archival().Insert(ctx, memory.ArchivalEntry{Content: n.text, Tags: n.tags}); err != nil {
			return err
		}
	}
	res, err := entropy.Archival().Search(ctx, "which files break the export?", search.NewOptions().Mode(search.Hybrid).Limit(2))
	if err != nil {
		return err
	}
	section("archival search (hybrid: BM25 and vectors fused; Auto would trust the offline embedder for nothing and run FTS)")
	rank := func(leg string, n int) string { // 0: that leg did not find it
		if n == 0 {
			return leg + " -"
		}
		return fmt.Sprintf("%s#%d", leg, n)
	}
	for _, r := range res {
		fmt.Printf("%.4f  %s %s  %s\n", r.Score, rank("fts", r.Source.FTSRank), rank("vec", r.Source.VectorRank), r.Snippet)
	}

	// 5. A conversation in batches. Earlier batches are complete; the
	// current one is active and never compressed away.
	history := entropy.Messages()
	for i, q := range []string{"What's on the plan today?", "Remind me what the export bug was.", "Any news on the release?",
		"Who reviews my PRs?", "Summarise the open tasks."} {
		batch := fmt.Sprintf("evt-%d", i+1)
		if _, err := history.Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: batch, Content: q}); err != nil {
			return err
		}
		if _, err := history.Append(ctx, memory.Message{Role: memory.RoleAssistant, BatchID: batch,
			Content: "Answer " + fmt.Sprint(i+1) + ": " + strings.Repeat("details ", 40)}); err != nil {
			return err
		}
		if err := history.CompleteBatch(ctx, batch); err != nil {
			return err
		}
	}
	const active = "evt-6"
	if _, err := history.Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: active,
		Content: "Note that the CSV fix is done, then tell me what's next."}); err != nil {
		return err
	}

	// The agent's memory tools, under tool rules the engine enforces.
	rules := []toolrules.Rule{
		toolrules.ExitLoop("send_message"),
		toolrules.MaxCalls("archival_insert", 1),
		toolrules.RequiresPrior("send_message", "block_push_item"),
	}
	engine, err := toolrules.NewEngine(rules, nil)
	if err != nil {
		return err
	}
	ts, err := tools.New(store.Agent(agent), &tools.Options{Rules: engine})
	if err != nil {
		return err
	}
	section("tool calls the model might make")
	for _, c := range []struct{ name, args string }{
		{"block_push_item", `{"label":"tasks","item":"verify the CSV fix on a 3 GB file"}`},
		{"log_append", `{"label":"events","message":"CSV export fix reported done"}`},
		{"archival_insert", `{"content":"The CSV export fix landed on 2026-11-22.","tags":["bugs","export"]}`},
		{"archival_insert", `{"content":"one more"}`},
		{"block_replace", `{"label":"persona","old":"Entropy","new":"Chaos"}`},
	} {
		r, err := ts.Call(ctx, c.name, json.RawMessage(c.args))
		if err != nil {
			return err
		}
		fmt.Printf("%s → %s\n", c.name, r.Content)
	}

	// 6. Build the request: memory blocks as XML, tool rules, and the
	// history compressed (summaries stored and reused) to fit its budget.
	cfg := builder.DefaultConfig()
	cfg.TokenCounts = store // token counts persist across runs
	cfg.DefaultLimits.HistoryTokens = 300
	cfg.Compression = compress.RecursiveSummarization{ChunkSize: 4} // extractive summarizer: offline
	toolList := builder.ToolList{}
	for _, t := range ts.Tools() {
		bt, err := builder.NewTool(t.Name, t.Description, t.Parameters)
		if err != nil {
			return err
		}
		toolList = append(toolList, bt)
	}
	req, err := builder.New(store.Agent(
		agent), cfg).WithMessages(store.Agent(
		agent).Messages()).
		WithTools(toolList).
		WithBaseInstructions("You are Entropy, a task breakdown specialist.").
		WithToolRules(rules...).
		WithModelInfo(builder.ModelInfoFor("gpt-4o")).
		WithActiveBatch(active).
		Build(ctx)
	if err != nil {
		return err
	}
	section("system prompt")
	fmt.Println(req.System)
	section("messages")
	for _, m := range req.Messages {
		fmt.Printf("[%s] %s\n", m.Role, oneLine(m.Content, 110))
	}
	section("metadata")
	md := req.Metadata
	fmt.Printf("tokens: system %d, tools %d, history %d (summary %d), total %d of %d\n",
		md.Tokens.System, md.Tokens.Tools, md.Tokens.History, md.Tokens.Summary, md.Tokens.Total, md.Tokens.InputBudget)
	var included []string
	for _, b := range md.BlocksIncluded {
		label := b.Label
		if b.Owner != "" {
			label += " (from " + b.Owner + ")"
		}
		included = append(included, label)
	}
	fmt.Println("blocks included:", strings.Join(included, ", "))
	fmt.Printf("messages kept %d, summarized %d, dropped %d; summarizer calls %d\n",
		len(md.MessagesKept), len(md.MessagesSummarized), len(md.MessagesDropped), md.SummarizerCalls)
	fmt.Printf("stable prefix: %d bytes, sha256 %s…\n", md.StablePrefixEnd, md.StablePrefixHash[:16])
	fmt.Println("tools offered:", len(req.Tools), "— allowed next by the rules:", len(ts.Allowed()))
	for _, w := range md.Warnings {
		fmt.Println("warning:", w)
	}
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
