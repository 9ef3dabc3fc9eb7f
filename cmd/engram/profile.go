package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/toolrules"
)

func cmdProfileShow(fs *flag.FlagSet) runFunc {
	var agent string
	fs.StringVar(&agent, "agent", "", "agent id")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("profile show", "--agent", agent); err != nil {
			return err
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		p, err := s.Agent(agent).Profile(ctx)
		if err != nil {
			return err
		}
		return a.output(p, func(w io.Writer) {
			fmt.Fprintf(w, "agent %s, profile set %s\n", agent, p.UpdatedAt.Format("2006-01-02 15:04:05Z07:00"))
			if p.Model != "" {
				fmt.Fprintf(w, "model: %s", p.Model)
				if p.ContextWindow > 0 {
					fmt.Fprintf(w, " (context window %d tokens)", p.ContextWindow)
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "tools (%d):\n", len(p.Tools))
			for _, t := range p.Tools {
				fmt.Fprintf(w, "  %s: %s\n", t.Name, oneLine(t.Description, 100))
			}
			if len(p.ToolRules) > 0 {
				fmt.Fprintln(w, strings.TrimSpace(toolrules.Render(p.ToolRules)))
			}
			for _, k := range sortedExtensions(p) {
				fmt.Fprintf(w, "extension %q: %d bytes (what that format said that engram does not model)\n", k, len(p.Extensions[k]))
			}
			fmt.Fprintf(w, "=== system prompt (%d characters) ===\n%s\n", len([]rune(p.System)), p.System)
		})
	}
}

func sortedExtensions(p memory.Profile) []string {
	var out []string
	for k := range p.Extensions {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func cmdProfileSet(fs *flag.FlagSet) runFunc {
	var agent, system, model, toolsArg, rulesArg string
	var window int
	set := map[string]bool{}
	fs.StringVar(&agent, "agent", "", "agent id")
	fs.Func("system", "the system prompt: TEXT, - or @FILE", func(v string) error { system, set["system"] = v, true; return nil })
	fs.Func("model", "the model name", func(v string) error { model, set["model"] = v, true; return nil })
	fs.Func("context-window", "the model's context window in tokens (0: the model's known one)", func(v string) error {
		_, err := fmt.Sscan(v, &window)
		set["window"] = true
		return err
	})
	fs.Func("tools", `tool definitions, a JSON list of {"name", "description", "parameters"}: TEXT, - or @FILE`, func(v string) error {
		toolsArg, set["tools"] = v, true
		return nil
	})
	fs.Func("rules", `tool rules, a JSON list such as [{"kind": "exit_loop", "tool": "send_message"}]: TEXT, - or @FILE`, func(v string) error {
		rulesArg, set["rules"] = v, true
		return nil
	})
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("profile set", "--agent", agent); err != nil {
			return err
		}
		if len(set) == 0 {
			return usageErrorf("profile set: nothing to set (give --system, --model, --context-window, --tools or --rules)")
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		ag := s.Agent(agent)
		p, err := ag.Profile(ctx)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			return err
		}
		if set["system"] {
			if p.System, err = a.text(system); err != nil {
				return fmt.Errorf("profile set: --system: %w", err)
			}
		}
		if set["model"] {
			p.Model = model
		}
		if set["window"] {
			p.ContextWindow = window
		}
		if set["tools"] {
			text, err := a.text(toolsArg)
			if err != nil {
				return fmt.Errorf("profile set: --tools: %w", err)
			}
			p.Tools = nil
			if err := json.Unmarshal([]byte(text), &p.Tools); err != nil {
				return usageErrorf("profile set: --tools: not a JSON list of tool definitions: %v", err)
			}
		}
		if set["rules"] {
			text, err := a.text(rulesArg)
			if err != nil {
				return fmt.Errorf("profile set: --rules: %w", err)
			}
			p.ToolRules = nil
			if err := json.Unmarshal([]byte(text), &p.ToolRules); err != nil {
				return usageErrorf("profile set: --rules: not a JSON list of tool rules: %v", err)
			}
		}
		if err := ag.SetProfile(ctx, p); err != nil {
			return err
		}
		return a.output(map[string]any{"agent": agent, "set": true}, func(w io.Writer) {
			fmt.Fprintf(w, "profile of %s set: %d tools, %d tool rules, model %q\n", agent, len(p.Tools), len(p.ToolRules), p.Model)
		})
	}
}

func cmdProfileDelete(fs *flag.FlagSet) runFunc {
	var agent string
	fs.StringVar(&agent, "agent", "", "agent id")
	return func(ctx context.Context, a *app, _ []string) error {
		if err := need("profile delete", "--agent", agent); err != nil {
			return err
		}
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if err := s.Agent(agent).DeleteProfile(ctx); err != nil {
			return err
		}
		return a.output(map[string]any{"agent": agent, "deleted": true}, func(w io.Writer) { fmt.Fprintf(w, "profile of %s deleted\n", agent) })
	}
}
