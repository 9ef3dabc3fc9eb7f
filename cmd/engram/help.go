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

// importHelp is more help for engram import.
const importHelp = `The file is an engram export (engram export) or a Letta agent file (.af, schema v2; also
one held in a JSON string), told apart by its content. A Letta file's agents become engram
agents named after them: blocks (value, limit, read-only), shares for blocks several agents
list, messages with their tool calls paired, files as archival entries, and each agent's
profile (system prompt, tools, tool rules, model), which engram context uses from then on.
The report (--json for JSON) lists what was mapped, what was kept only as metadata and what
was not kept, with why.`

// exportHelp is more help for engram export.
const exportHelp = `--format letta writes a Letta agent file (.af, schema v2) of the agents (--agent a,b;
default: all): blocks, shares, messages, profiles. Secrets are never written. What the format
cannot hold (block history, proposals, archival entries) is reported on stderr.`

// filesImportHelp is more help for engram files import.
const filesImportHelp = `Files and the blocks they become (a file that is absent is skipped):
  SOUL.md                 → Core block "persona"
  AGENTS.md               → Core block "guidelines"
  MEMORY.md               → Working block "memory" (pinned)
  TOOLS.md                → Core block "tools" (ReadOnly for the agent)
  skills/NAME/SKILL.md    → Working block "skill.NAME" (ReadOnly; NAME made a valid label)
A block that exists gets the file's text (written as the system, as a diff; the old text stays
in its history): each one is named on stderr before it is replaced. --dry-run only says what
would happen.`

// textRule is the help paragraph for commands that take TEXT.
const textRule = `TEXT may be "-" (read standard input) or "@FILE" (read FILE; "@@" starts a
literal "@"). Text that starts with "-" goes after "--", which ends the flags.`

// commandHelpText renders the help of command name (its full name, "block
// create") from its FlagSet.
func commandHelpText(name string, fs *flag.FlagSet) string {
	var b bytes.Buffer
	synopsis, example, long := name+" [flags]", "", ""
	if c := commandNamed(name); c != nil {
		synopsis, example, long = c.usage, c.example, c.long
	}
	fmt.Fprintf(&b, "Usage: engram [global flags] %s\n", synopsis)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(&b, "\nFlags:")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(nil)
	}
	if long != "" {
		fmt.Fprintln(&b, "\n"+long)
	}
	if strings.Contains(synopsis, "TEXT") || name == "block create" {
		fmt.Fprintln(&b, "\n"+textRule)
	}
	if example != "" {
		fmt.Fprintf(&b, "\nExample:\n  %s\n", example)
	}
	fmt.Fprintln(&b, "\nGlobal flags (before or after the command): --db STORE, --json, --embedder none|offline|openai (engram --help).")
	return b.String()
}

// groupHelp lists a command group's subcommands (engram block --help).
func groupHelp(group *command) string {
	subs := append([]*command(nil), group.sub...)
	sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: engram [global flags] %s SUBCOMMAND ...\n\nSubcommands:\n", group.name)
	for _, c := range subs {
		fmt.Fprintf(&b, "  engram %s\n", c.usage)
	}
	fmt.Fprintf(&b, "\nRun \"engram %s SUBCOMMAND --help\" for its flags and an example.\n", group.name)
	return b.String()
}

func isHelp(arg string) bool {
	return arg == "-h" || arg == "--help" || arg == "-help" || arg == "help"
}
