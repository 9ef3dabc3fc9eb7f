package main

import (
	"context"
	"flag"
	"sort"

	"github.com/engram-go/engram/blocks"
)

// A command is one engram command, the way cmd/go's base.Command is one
// go command: its name, usage line, help, flags and what it runs, in one
// place. A group ("block", "token", …) is a command with subcommands of
// its own and nothing to run; a subcommand is named by the group and its
// own name ("block create").
type command struct {
	// name is the word that selects the command: "search", or "create"
	// in the group "block".
	name string
	// usage is the usage line after "engram [global flags] ".
	usage string
	// example is one command line, shown under "Example:".
	example string
	// long is more help, printed after the flags.
	long string
	// readOnly commands only read: they refuse a store file that does not
	// exist instead of creating an empty one (a mistyped --db would
	// otherwise report an empty store, and leave a file behind).
	readOnly bool
	// flags defines the command's flags on fs and returns what runs the
	// command once they are parsed, given the positional arguments.
	flags func(fs *flag.FlagSet) runFunc
	// sub are a group's subcommands.
	sub []*command
}

// runFunc runs a command with its flags parsed and its positional
// arguments.
type runFunc func(ctx context.Context, a *app, args []string) error

// commands is every engram command, in the order "did you mean" tries
// them. A group's subcommands are listed with it.
var commands = []*command{
	{name: "blocks", sub: []*command{
		{name: "list", usage: "blocks list --agent A [--shared]", example: "engram blocks list --agent ada",
			readOnly: true, flags: cmdBlocksList},
	}},
	{name: "block", sub: []*command{
		{name: "show", usage: "block show --agent A [--owner O] [--history] [--raw] LABEL", example: "engram block show --agent ada persona",
			readOnly: true, flags: cmdBlockShow},
		{name: "create", usage: "block create --agent A --label L [flags]", example: `engram block create --agent ada --label persona --type core --value @persona.txt`,
			flags: cmdBlockCreate},
		{name: "set", usage: "block set --agent A [--owner O] [--as-agent] LABEL TEXT", example: `engram block set --agent ada notes - < notes.txt`,
			flags: cmdBlockWrite(blocks.OpSetText)},
		{name: "append", usage: "block append --agent A [--owner O] [--as-agent] LABEL TEXT", example: `engram block append --agent ada notes -- "-- a line starting with dashes"`,
			flags: cmdBlockWrite(blocks.OpAppendText)},
		{name: "delete", usage: "block delete --agent A [--as-agent] LABEL", example: "engram block delete --agent ada scratch",
			long: blockDeleteHelp, flags: cmdBlockDelete},
	}},
	{name: "share", usage: "share --owner O --label L --with B [--perm Append] [--revoke]", example: "engram share --owner ada --label notes --with bob --perm ReadOnly",
		flags: cmdShare},
	{name: "archival", sub: []*command{
		{name: "add", usage: "archival add --agent A [--tags a,b] [--meta JSON] TEXT", example: `engram archival add --agent ada --meta '{"session": 3}' "Ada: I adopted a greyhound."`,
			flags: cmdArchivalAdd},
		{name: "load", usage: "archival load --agent A [--in FILE.jsonl] [--tags a,b] [--batch N]", example: `engram archival load --agent ada --in notes.jsonl   # {"content": "…", "tags": […], "metadata": {…}} per line`,
			flags: cmdArchivalLoad},
		{name: "list", usage: "archival list --agent A [--tags a,b] [--limit N] [--superseded]", example: "engram archival list --agent ada --tags prefs",
			readOnly: true, flags: cmdArchivalList},
	}},
	{name: "search", usage: "search (--agent A | --all) [flags] QUERY", example: `engram search --agent ada --mode fts "bullet lists"`,
		readOnly: true, flags: cmdSearch},
	{name: "context", usage: "context --agent A [flags]", example: `engram context --agent ada --model claude-sonnet-4-5 --message "what did we decide?" --recall 5 --format anthropic`,
		readOnly: true, flags: cmdContext},
	{name: "files", sub: []*command{
		{name: "import", usage: "files import --agent A [--dry-run] DIR   (reads only regular files inside DIR, each at most a block's size)", example: "engram files import --agent ada ./workspace",
			long: filesImportHelp, flags: cmdFilesIO(true)},
		{name: "export", usage: "files export --agent A DIR   (writes only inside DIR, never through a link; files 0600)", example: "engram files export --agent ada ./workspace",
			readOnly: true, flags: cmdFilesIO(false)},
	}},
	{name: "export", usage: "export [--agent A] [--format engram|letta] [--out FILE]", example: "engram export --agent memgpt_agent --format letta --out memgpt_agent.af",
		long: exportHelp, readOnly: true, flags: cmdExport},
	{name: "import", usage: "import [--in FILE] [--agent A] [--no-caps]", example: "engram import --in memgpt_agent.af",
		long: importHelp, flags: cmdImport},
	{name: "reembed", usage: "reembed", example: "engram --embedder openai reembed",
		flags: cmdReembed},
	{name: "compact", usage: "compact [--agent A] [--rebase]", example: "engram compact --rebase",
		flags: cmdCompact},
	{name: "consolidate", usage: "consolidate --agent A [--dry-run] [--apply-exact] [--llm] [--after ID | --resume] [--max-entries N] [--rounds N]", example: "engram consolidate --agent ada --apply-exact",
		flags: cmdConsolidate},
	{name: "stats", usage: "stats", example: "engram stats",
		readOnly: true, flags: cmdStats},
	{name: "mcp", usage: "mcp --agent A", example: "engram --db agents.db mcp --agent ada",
		flags: cmdMCP},
	{name: "proposals", sub: []*command{
		{name: "list", usage: "proposals list [--agent OWNER] [--all] [--diff]", example: "engram proposals list --diff",
			readOnly: true, flags: cmdProposalsList},
		{name: "approve", usage: "proposals approve [--as NAME] ID", example: "engram proposals approve --as alice 3",
			flags: cmdProposalsDecide(true)},
		{name: "reject", usage: "proposals reject [--as NAME] [--reason TEXT] ID", example: `engram proposals reject --as alice --reason "not true" 4`,
			flags: cmdProposalsDecide(false)},
	}},
	{name: "profile", sub: []*command{
		{name: "show", usage: "profile show --agent A", example: "engram profile show --agent memgpt_agent",
			readOnly: true, flags: cmdProfileShow},
		{name: "set", usage: "profile set --agent A [--system TEXT] [--model M] [--context-window N] [--tools JSON] [--rules JSON]", example: `engram profile set --agent ada --system @prompt.txt --rules '[{"kind": "exit_loop", "tool": "send_message"}]'`,
			flags: cmdProfileSet},
		{name: "delete", usage: "profile delete --agent A", example: "engram profile delete --agent ada",
			flags: cmdProfileDelete},
	}},
	{name: "ui", usage: "ui [--addr 127.0.0.1:PORT] [--as NAME] [--model NAME]", example: "engram --db agents.db ui --addr 127.0.0.1:8377",
		flags: cmdUI},
	{name: "token", sub: []*command{
		{name: "create", usage: "token create (--agent ID [--name N] [--read-only] [--expires 720h] | --human NAME)", example: "engram token create --agent ada --name laptop --expires 720h",
			flags: cmdTokenCreate},
		{name: "list", usage: "token list", example: "engram token list --json",
			readOnly: true, flags: cmdTokenList},
		{name: "revoke", usage: "token revoke ID", example: "engram token revoke 3",
			flags: cmdTokenRevoke},
		{name: "login-url", usage: "token login-url ID [--base http://127.0.0.1:8421] [--expires 15m]", example: "engram token login-url --base https://engram.example.com 2",
			flags: cmdTokenLoginURL},
	}},
	{name: "serve", usage: "serve [--addr 127.0.0.1:8421] [--tls-cert F --tls-key F] [flags]", example: "engram --db postgres://db.internal/engram serve --addr 0.0.0.0:8421 --tls-cert c.pem --tls-key k.pem",
		flags: cmdServe},
	{name: "sync", sub: []*command{
		{name: "url", usage: "sync url --agent A --label L [--owner O]", example: "engram sync url --agent ada --label notes",
			flags: cmdSyncURL},
	}},
}

// lookup finds the command named name among cs.
func lookup(cs []*command, name string) *command {
	for _, c := range cs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// names are the names of cs, in their order.
func names(cs []*command) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

// commandNamed finds a command by its full name ("search", "block
// create").
func commandNamed(full string) *command {
	for _, c := range commands {
		if c.name == full {
			return c
		}
		for _, s := range c.sub {
			if c.name+" "+s.name == full {
				return s
			}
		}
	}
	return nil
}

// topNames are the top-level commands, and help and version, for "did
// you mean".
func topNames() []string { return append(names(commands), "help", "version") }

// subcommand picks group's subcommand from args[0].
func (group *command) subcommand(args []string) (*command, []string, error) {
	if len(args) == 0 {
		return nil, nil, usageErrorf("%s: missing subcommand (run \"engram %s --help\")", group.name, group.name)
	}
	s := lookup(group.sub, args[0])
	if s == nil {
		sorted := names(group.sub)
		sort.Strings(sorted)
		return nil, nil, usageErrorf("%s: unknown subcommand %q%s (run \"engram %s --help\")", group.name, args[0], didYouMean(args[0], sorted), group.name)
	}
	return s, args[1:], nil
}

// run parses c's flags from args (full is c's full name) and runs it.
func (c *command) run(ctx context.Context, a *app, full string, args []string) error {
	var run runFunc
	pos, err := flags(full, args, func(fs *flag.FlagSet) { run = c.flags(fs) })
	if err != nil {
		return err
	}
	return run(ctx, a, pos)
}
