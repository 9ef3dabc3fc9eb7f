// Command engram inspects and edits an engram memory store from a terminal:
// blocks, shares, search, archival notes, workspace files, export/import,
// re-embedding, compaction and statistics. Every command takes --json for
// scripting. Errors go to stderr with a non-zero exit code.
//
//	engram [--db STORE] [--json] [--embedder none|offline|openai] COMMAND [ARGS]
//
// Run "engram help" for the command list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: tests call it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app, rest, err := parseGlobal(args, stdin, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "engram:", err, "(run \"engram --help\")")
		return 2
	}
	if len(rest) == 0 || isHelp(rest[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commandFor(rest[0])
	if !ok {
		fmt.Fprintf(stderr, "engram: unknown command %q (run \"engram help\")\n", rest[0])
		return 2
	}
	if groups[rest[0]] && len(rest) == 1 {
		fmt.Fprintf(stderr, "engram: %s: missing subcommand\n\n%s", rest[0], groupHelp(rest[0]))
		return 2
	}
	if groups[rest[0]] && isHelp(rest[1]) {
		fmt.Fprint(stdout, groupHelp(rest[0]))
		return 0
	}
	name := rest[0]
	if groups[name] {
		name += " " + rest[1]
	}
	app.readOnly = readOnly[name]
	if err := cmd(ctx, app, rest[1:]); err != nil {
		var help *helpError
		if errors.As(err, &help) {
			fmt.Fprint(stdout, help.text)
			return 0
		}
		fmt.Fprintln(stderr, "engram:", tidyError(err))
		return 1
	}
	return 0
}

// readOnly are the commands that only read: they refuse a store file that
// does not exist instead of creating an empty one (a mistyped --db would
// otherwise report an empty store, and leave a file behind).
var readOnly = map[string]bool{"blocks list": true, "block show": true, "proposals list": true,
	"archival list": true, "search": true, "context": true, "files export": true, "export": true, "stats": true}

// groups are the commands that take a subcommand.
var groups = map[string]bool{"blocks": true, "block": true, "archival": true, "files": true, "proposals": true}

const usage = `engram — durable, shareable, typed memory for LLM agents

Usage: engram [--db STORE] [--json] [--embedder none|offline|openai] COMMAND [ARGS]

Blocks
  blocks list   --agent A [--shared]               list an agent's blocks (or those shared with it)
  block show    --agent A [--owner O] [--history] [--raw] LABEL
  block create  --agent A --label L [--type working] [--perm ReadWrite]
                [--schema JSON] [--desc TEXT] [--limit N] [--pinned] [--value TEXT]
  block set     --agent A [--owner O] [--as-agent] LABEL TEXT   replace a text block (as the system unless --as-agent)
  block append  --agent A [--owner O] [--as-agent] LABEL TEXT
                --owner O: O's block shared with A, written as A at the share's permission;
                a Partner/Human edit is queued as a proposal ("proposal #N queued for approval", exit 0)
  share         --owner O --label L --with B [--perm Append] [--revoke]

Proposals (edits to Partner/Human blocks waiting for a person)
  proposals list    [--agent OWNER] [--all] [--diff]   the pending queue across agents
  proposals approve [--as NAME] ID                     apply it, decided by "human:NAME" (default $USER)
  proposals reject  [--as NAME] [--reason TEXT] ID

Archival and search
  archival add  --agent A [--tags a,b] TEXT
  archival load --agent A [--in FILE.jsonl] [--tags a,b] [--batch N]   many entries, {"content","tags","metadata"} per line
  archival list --agent A [--tags a,b] [--limit N] [--superseded]
  search        (--agent A | --all) [--mode auto|fts|vector|hybrid] [--types blocks,archival,messages]
                [--limit N] [--vector-weight W] QUERY

Context
  context       --agent A [--model NAME] [--base TEXT] [--batch-blocks a,b]   render the request the builder builds

Files and transfer
  files import  --agent A DIR                      SOUL.md, AGENTS.md, MEMORY.md, TOOLS.md, skills/*/SKILL.md → blocks
                                                   (regular files inside DIR only; no links out, FIFOs or devices)
  files export  --agent A DIR                      writes only inside DIR, never through a link (files 0600)
  export        [--agent A] [--out FILE]           lossless JSON (CRDT history included); FILE replaced atomically, 0600
  import        [--in FILE]

Maintenance
  reembed                                          recompute vectors with --embedder (progress bar)
  compact       [--agent A] [--rebase]             fold block updates into snapshots; --rebase starts new epochs
  stats

Agents and people
  mcp           --agent A                          serve the memory tools over MCP (stdio)
  ui            [--addr 127.0.0.1:PORT] [--as NAME]  local web app: blocks, history, proposals, context, search;
                                                   prints a URL with an access token

TEXT arguments may be "-" (standard input) or "@FILE"; put text starting with
"-" after "--". "engram COMMAND --help" shows a command's flags and an example.

Global flags
  --db STORE     a SQLite file (created 0600), :memory:, a postgres:// URL or a keyword DSN "host=H dbname=D ..."
                 (default: $ENGRAM_DB, else the user data dir, e.g. ~/.local/share/engram/engram.db); passwords are never printed
  --json         machine-readable output
  --embedder     none (default), offline (deterministic, no network) or openai
                 (ENGRAM_EMBED_BASE_URL, ENGRAM_EMBED_MODEL, ENGRAM_EMBED_API_KEY; works with Ollama, vLLM, OpenAI)
`

// packagePrefixes are the "pkg: " prefixes of the library's sentinel
// errors; an error wrapping two of one package's
// ("blocks: permission denied: blocks: write needs approval") prints the
// prefix once.
var packagePrefixes = []string{"blocks", "memory", "schema", "search", "workspace", "sqlite", "postgres", "tools"}

// tidyError is err's message with each package prefix kept only where it
// first starts a part of the chain.
func tidyError(err error) string {
	m := ": " + err.Error()
	for _, p := range packagePrefixes {
		i := strings.Index(m, ": "+p+": ")
		if i < 0 {
			continue
		}
		j := i + len(p) + 4
		for strings.HasPrefix(m[j:], p+": ") {
			m = m[:j] + m[j+len(p)+2:]
		}
		m = m[:j] + strings.ReplaceAll(m[j:], ": "+p+": ", ": ")
	}
	return m[2:]
}
