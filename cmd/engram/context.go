package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/search"
)

func cmdContext(fs *flag.FlagSet) runFunc {
	var agent, model, base, batchBlocks, active, message, recallMode, format string
	var descriptions, schemas, chars, withTools, noEnv, noLibrary, noProfile bool
	var recall, maxTokens int
	baseSet := false
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.StringVar(&model, "model", "", "model name (limits, tokenizer, request shape) (default: the agent profile's, else "+ui.DefaultModel+")")
	fs.Func("base", "base instructions (default: the agent profile's system prompt, else the builder's, as in the web UI); TEXT, - or @FILE", func(s string) error {
		base, baseSet = s, true
		return nil
	})
	fs.StringVar(&message, "message", "", `the current user message: TEXT, "-" (stdin) or "@FILE"`)
	fs.IntVar(&recall, "recall", 0, "recall up to N archival memories relevant to --message (0: none)")
	fs.StringVar(&recallMode, "recall-mode", "auto", "the recall search's mode: auto, fts, vector or hybrid")
	fs.BoolVar(&noEnv, "no-environment", false, "leave out the environment section (date, time zone, version, tools)")
	fs.BoolVar(&noLibrary, "no-library", false, "leave out the agent's context library")
	fs.BoolVar(&noProfile, "no-profile", false, "leave out the agent's profile (its system prompt, tools, tool rules and model)")
	fs.StringVar(&format, "format", "", "print a provider's request body instead: openai, anthropic or gemini")
	fs.IntVar(&maxTokens, "max-tokens", 0, "the model's context window in tokens (default: the known window of the model's family)")
	fs.StringVar(&batchBlocks, "batch-blocks", "", "comma-separated Working blocks named by the current batch")
	fs.StringVar(&active, "active-batch", "", "the active batch (default: the newest incomplete one)")
	fs.BoolVar(&descriptions, "descriptions", true, "include block descriptions")
	fs.BoolVar(&schemas, "schemas", false, "include block schemas")
	fs.BoolVar(&chars, "chars", false, `show chars="used/limit" on blocks`)
	fs.BoolVar(&withTools, "tools", true, "include the memory tools' definitions")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("context", "--agent", agent); err != nil {
			return err
		}
		switch format {
		case "", "openai", "anthropic", "gemini":
		default:
			return usageErrorf("context: --format %q: want openai, anthropic or gemini", format)
		}
		if maxTokens < 0 {
			return usageErrorf("context: --max-tokens %d: want a window in tokens (0: the model's known one)", maxTokens)
		}
		if recall < 0 {
			return usageErrorf("context: --recall %d: want a count of memories (0: none)", recall)
		}
		mode, err := search.ParseMode(recallMode)
		if err != nil {
			return usageErrorf("context: --recall-mode: %v", err)
		}
		if recall > 0 && message == "" {
			return usageErrorf("context: --recall recalls memories for the current message: give --message too")
		}
		if message, err = a.text(message); err != nil {
			return fmt.Errorf("context: --message: %w", err)
		}
		if baseSet {
			if base, err = a.text(base); err != nil {
				return fmt.Errorf("context: --base: %w", err)
			}
		}
		a.needVectors, a.searches = recall > 0 && (mode == search.Vector || mode == search.Hybrid), recall > 0
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		opts := &ui.ContextOptions{Agent: agent, Model: model, Message: message, Recall: recall, RecallMode: mode,
			NoEnvironment: noEnv, NoLibrary: noLibrary, NoProfile: noProfile, NoTools: !withTools, MaxTokens: maxTokens,
			BatchBlocks: splitList(batchBlocks), ActiveBatch: active, OmitDescriptions: !descriptions, IncludeSchemas: schemas,
			ShowCharUsage: chars, Location: time.Local}
		if baseSet {
			opts.Base = &base
		}
		req, err := ui.BuildContext(ctx, s, opts)
		if err != nil {
			return err
		}
		for _, n := range ui.ModelNotes(req.Metadata.Model, maxTokens) {
			fmt.Fprintln(a.stderr, "engram: note:", n)
		}
		if format != "" {
			var body any
			switch format {
			case "openai":
				body = req.OpenAI(nil)
			case "anthropic":
				body = req.Anthropic(nil)
			case "gemini":
				body = req.Gemini(nil)
			}
			// The provider's own field names: the body is what its API takes.
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(body)
		}
		return a.output(snakeJSON(req), func(w io.Writer) {
			fmt.Fprintln(w, "=== system ===")
			fmt.Fprintln(w, req.System)
			fmt.Fprintln(w, "\n=== messages ===")
			for _, m := range req.Messages {
				fmt.Fprintf(w, "[%s] %s\n", m.Role, m.Content)
			}
			md := req.Metadata
			fmt.Fprintln(w, "\n=== layers ===")
			var rows [][]string
			for _, sec := range req.Sections {
				budget := ui.SectionBudget(md.Tokens, sec.Name)
				rows = append(rows, []string{sec.Name, fmt.Sprint(sec.Tokens), tokenBar(sec.Tokens, budget), fmt.Sprint(budget)})
			}
			rows = append(rows, []string{"tool definitions", fmt.Sprint(md.Tokens.Tools), tokenBar(md.Tokens.Tools, md.Tokens.InputBudget), fmt.Sprint(md.Tokens.InputBudget)})
			hb := md.Tokens.HistoryBudget
			if hb <= 0 {
				hb = md.Tokens.InputBudget
			}
			rows = append(rows, []string{"history", fmt.Sprint(md.Tokens.History), tokenBar(md.Tokens.History, hb), fmt.Sprint(hb)},
				[]string{"total", fmt.Sprint(md.Tokens.Total), tokenBar(md.Tokens.Total, md.Tokens.InputBudget), fmt.Sprint(md.Tokens.InputBudget)})
			a.table("LAYER\tTOKENS\tOF BUDGET\tBUDGET", rows)
			fmt.Fprintln(w, "\n=== metadata ===")
			fmt.Fprintf(w, "model %s (%s), window %d tokens, input budget %d tokens\n", md.Model, md.Encoding, md.Limits.MaxTokens, md.Tokens.InputBudget)
			var inc []string
			for _, bl := range md.BlocksIncluded {
				inc = append(inc, bl.Label)
			}
			fmt.Fprintf(w, "blocks included: %s\n", strings.Join(inc, ", "))
			for _, d := range md.BlocksDropped {
				fmt.Fprintf(w, "dropped %s %s: %s\n", d.Kind, d.Label, d.Reason)
			}
			for _, d := range append(md.LibraryDropped, md.RecalledDropped...) {
				fmt.Fprintf(w, "dropped %s %s: %s\n", d.Kind, d.Label, d.Reason)
			}
			fmt.Fprintf(w, "messages: kept %d, summarized %d, dropped %d, excluded %d\n",
				len(md.MessagesKept), len(md.MessagesSummarized), len(md.MessagesDropped), len(md.MessagesExcluded))
			fmt.Fprintf(w, "stable prefix: %d bytes, sha256 %s\n", md.StablePrefixEnd, md.StablePrefixHash)
			for _, warn := range md.Warnings {
				fmt.Fprintf(w, "warning: %s\n", warn)
			}
		})
	}
}

// tokenBar is a 20-character bar of used out of budget, with the percent.
func tokenBar(used, budget int) string {
	if budget <= 0 {
		return ""
	}
	const width = 20
	filled := min(width, used*width/budget)
	return fmt.Sprintf("[%s%s] %5.1f%%", strings.Repeat("#", filled), strings.Repeat(".", width-filled), 100*float64(used)/float64(budget))
}
