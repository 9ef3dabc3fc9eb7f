package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/engram-go/engram/builder"
	"github.com/engram-go/engram/cmd/engram/internal/ui"
)

func cmdContext(ctx context.Context, a *app, args []string) error {
	var agent, model, base, batchBlocks, active string
	var descriptions, schemas, chars, withTools bool
	if _, err := flags("context", args, func(fs *flag.FlagSet) {
		fs.StringVar(&agent, "agent", "", "agent id")
		fs.StringVar(&model, "model", "gpt-4o", "model name (limits, tokenizer, adjustments)")
		fs.StringVar(&base, "base", "", "base instructions")
		fs.StringVar(&batchBlocks, "batch-blocks", "", "comma-separated Working blocks named by the current batch")
		fs.StringVar(&active, "active-batch", "", "the active batch (default: the newest incomplete one)")
		fs.BoolVar(&descriptions, "descriptions", true, "include block descriptions")
		fs.BoolVar(&schemas, "schemas", false, "include block schemas")
		fs.BoolVar(&chars, "chars", false, `show chars="used/limit" on blocks`)
		fs.BoolVar(&withTools, "tools", true, "include the memory tools' definitions")
	}); err != nil {
		return err
	}
	if err := need("context", "--agent", agent); err != nil {
		return err
	}
	s, err := a.open(ctx)
	if err != nil {
		return err
	}
	defer a.close()
	cfg := builder.DefaultConfig()
	cfg.OmitDescriptions, cfg.IncludeSchemas, cfg.ShowCharUsage = !descriptions, schemas, chars
	b := builder.New(s, cfg).ForAgent(agent).WithMessages(s).WithModelInfo(builder.ModelInfoFor(model)).
		WithBaseInstructions(base).WithBatchBlocks(splitList(batchBlocks)...)
	if active != "" {
		b = b.WithActiveBatch(active)
	}
	if withTools {
		list, err := ui.MemoryTools(s, agent)
		if err != nil {
			return err
		}
		b = b.WithTools(list)
	}
	req, err := b.Build(ctx)
	if err != nil {
		return err
	}
	return a.output(snakeJSON(req), func(w io.Writer) {
		fmt.Fprintln(w, "=== system ===")
		fmt.Fprintln(w, req.System)
		fmt.Fprintln(w, "\n=== messages ===")
		for _, m := range req.Messages {
			fmt.Fprintf(w, "[%s] %s\n", m.Role, m.Content)
		}
		md := req.Metadata
		fmt.Fprintln(w, "\n=== metadata ===")
		fmt.Fprintf(w, "model %s (%s), budget %d tokens\n", md.Model, md.Encoding, md.Tokens.InputBudget)
		fmt.Fprintf(w, "tokens: base %d, core %d, working %d, rules %d, system %d, tools %d, history %d (summary %d), total %d\n",
			md.Tokens.Base, md.Tokens.Core, md.Tokens.Working, md.Tokens.ToolRules, md.Tokens.System, md.Tokens.Tools,
			md.Tokens.History, md.Tokens.Summary, md.Tokens.Total)
		var inc []string
		for _, bl := range md.BlocksIncluded {
			inc = append(inc, bl.Label)
		}
		fmt.Fprintf(w, "blocks included: %s\n", strings.Join(inc, ", "))
		for _, d := range md.BlocksDropped {
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
