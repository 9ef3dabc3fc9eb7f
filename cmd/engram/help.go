package main

import (
	"bytes"
	"flag"
	"fmt"
	"sort"
	"strings"
)

// helpError carries the help text a --help flag asked for: run prints it on
// stdout and exits 0.
type helpError struct{ text string }

func (e *helpError) Error() string { return e.text }

// commandHelp is each command's synopsis and example, for "engram CMD
// --help" (flags come from the command's FlagSet).
var commandHelp = map[string]struct{ synopsis, example string }{
	"blocks list":       {"blocks list --agent A [--shared]", "engram blocks list --agent ada"},
	"block show":        {"block show --agent A [--owner O] [--history] [--raw] LABEL", "engram block show --agent ada persona"},
	"block create":      {"block create --agent A --label L [flags]", `engram block create --agent ada --label persona --type core --value @persona.txt`},
	"block set":         {"block set --agent A [--owner O] [--as-agent] LABEL TEXT", `engram block set --agent ada notes - < notes.txt`},
	"block append":      {"block append --agent A [--owner O] [--as-agent] LABEL TEXT", `engram block append --agent ada notes -- "-- a line starting with dashes"`},
	"share":             {"share --owner O --label L --with B [--perm Append] [--revoke]", "engram share --owner ada --label notes --with bob --perm ReadOnly"},
	"archival add":      {"archival add --agent A [--tags a,b] [--meta JSON] TEXT", `engram archival add --agent ada --meta '{"session": 3}' "Ada: I adopted a greyhound."`},
	"archival load":     {"archival load --agent A [--in FILE.jsonl] [--tags a,b] [--batch N]", `engram archival load --agent ada --in notes.jsonl   # {"content": "…", "tags": […], "metadata": {…}} per line`},
	"archival list":     {"archival list --agent A [--tags a,b] [--limit N] [--superseded]", "engram archival list --agent ada --tags prefs"},
	"search":            {"search (--agent A | --all) [flags] QUERY", `engram search --agent ada --mode fts "bullet lists"`},
	"context":           {"context --agent A [flags]", `engram context --agent ada --model claude-sonnet-4-5 --message "what did we decide?" --recall 5 --format anthropic`},
	"files import":      {"files import --agent A [--dry-run] DIR   (reads only regular files inside DIR, each at most a block's size)", "engram files import --agent ada ./workspace"},
	"files export":      {"files export --agent A DIR   (writes only inside DIR, never through a link; files 0600)", "engram files export --agent ada ./workspace"},
	"export":            {"export [--agent A] [--format engram|letta] [--out FILE]", "engram export --agent memgpt_agent --format letta --out memgpt_agent.af"},
	"import":            {"import [--in FILE] [--agent A] [--no-caps]", "engram import --in memgpt_agent.af"},
	"profile show":      {"profile show --agent A", "engram profile show --agent memgpt_agent"},
	"profile set":       {"profile set --agent A [--system TEXT] [--model M] [--context-window N] [--tools JSON] [--rules JSON]", `engram profile set --agent ada --system @prompt.txt --rules '[{"kind": "exit_loop", "tool": "send_message"}]'`},
	"profile delete":    {"profile delete --agent A", "engram profile delete --agent ada"},
	"reembed":           {"reembed", "engram --embedder openai reembed"},
	"compact":           {"compact [--agent A] [--rebase]", "engram compact --rebase"},
	"consolidate":       {"consolidate --agent A [--dry-run] [--apply-exact] [--llm] [--after ID] [--max-entries N] [--rounds N]", "engram consolidate --agent ada --apply-exact"},
	"stats":             {"stats", "engram stats"},
	"mcp":               {"mcp --agent A", "engram --db agents.db mcp --agent ada"},
	"ui":                {"ui [--addr 127.0.0.1:PORT] [--as NAME] [--model NAME]", "engram --db agents.db ui --addr 127.0.0.1:8377"},
	"sync url":          {"sync url --agent A --label L [--owner O]", "engram sync url --agent ada --label notes"},
	"serve":             {"serve [--addr 127.0.0.1:8421] [--tls-cert F --tls-key F] [flags]", "engram --db postgres://db.internal/engram serve --addr 0.0.0.0:8421 --tls-cert c.pem --tls-key k.pem"},
	"token create":      {"token create (--agent ID [--name N] [--read-only] [--expires 720h] | --human NAME)", "engram token create --agent ada --name laptop --expires 720h"},
	"token list":        {"token list", "engram token list --json"},
	"token revoke":      {"token revoke ID", "engram token revoke 3"},
	"token login-url":   {"token login-url ID [--base http://127.0.0.1:8421] [--expires 15m]", "engram token login-url --base https://engram.example.com 2"},
	"proposals list":    {"proposals list [--agent OWNER] [--all] [--diff]", "engram proposals list --diff"},
	"proposals approve": {"proposals approve [--as NAME] ID", "engram proposals approve --as alice 3"},
	"proposals reject":  {"proposals reject [--as NAME] [--reason TEXT] ID", `engram proposals reject --as alice --reason "not true" 4`},
}

// commandDetail is more help for a command, printed after its flags.
var commandDetail = map[string]string{
	"import": `The file is an engram export (engram export) or a Letta agent file (.af, schema v2; also
one held in a JSON string), told apart by its content. A Letta file's agents become engram
agents named after them: blocks (value, limit, read-only), shares for blocks several agents
list, messages with their tool calls paired, files as archival entries, and each agent's
profile (system prompt, tools, tool rules, model), which engram context uses from then on.
The report (--json for JSON) lists what was mapped, what was kept only as metadata and what
was not kept, with why.`,
	"export": `--format letta writes a Letta agent file (.af, schema v2) of the agents (--agent a,b;
default: all): blocks, shares, messages, profiles. Secrets are never written. What the format
cannot hold (block history, proposals, archival entries) is reported on stderr.`,
	"files import": `Files and the blocks they become (a file that is absent is skipped):
  SOUL.md                 → Core block "persona"
  AGENTS.md               → Core block "guidelines"
  MEMORY.md               → Working block "memory" (pinned)
  TOOLS.md                → Core block "tools" (ReadOnly for the agent)
  skills/NAME/SKILL.md    → Working block "skill.NAME" (ReadOnly; NAME made a valid label)
A block that exists gets the file's text (written as the system, as a diff; the old text stays
in its history): each one is named on stderr before it is replaced. --dry-run only says what
would happen.`,
}

// textRule is the help paragraph for commands that take TEXT.
const textRule = `TEXT may be "-" (read standard input) or "@FILE" (read FILE; "@@" starts a
literal "@"). Text that starts with "-" goes after "--", which ends the flags.`

// commandHelpText renders the help of command name from its FlagSet.
func commandHelpText(name string, fs *flag.FlagSet) string {
	var b bytes.Buffer
	h, ok := commandHelp[name]
	if !ok {
		h.synopsis = name + " [flags]"
	}
	fmt.Fprintf(&b, "Usage: engram [global flags] %s\n", h.synopsis)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(&b, "\nFlags:")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(nil)
	}
	if d, ok := commandDetail[name]; ok {
		fmt.Fprintln(&b, "\n"+d)
	}
	if strings.Contains(h.synopsis, "TEXT") || name == "block create" {
		fmt.Fprintln(&b, "\n"+textRule)
	}
	if h.example != "" {
		fmt.Fprintf(&b, "\nExample:\n  %s\n", h.example)
	}
	fmt.Fprintln(&b, "\nGlobal flags (before or after the command): --db STORE, --json, --embedder none|offline|openai (engram --help).")
	return b.String()
}

// groupHelp lists a command group's subcommands (engram block --help).
func groupHelp(group string) string {
	var names []string
	for n := range commandHelp {
		if strings.HasPrefix(n, group+" ") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: engram [global flags] %s SUBCOMMAND ...\n\nSubcommands:\n", group)
	for _, n := range names {
		fmt.Fprintf(&b, "  engram %s\n", commandHelp[n].synopsis)
	}
	fmt.Fprintf(&b, "\nRun \"engram %s SUBCOMMAND --help\" for its flags and an example.\n", group)
	return b.String()
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}
