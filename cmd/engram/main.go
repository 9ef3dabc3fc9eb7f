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
	"runtime/debug"
	"strconv"
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
	if app.version && len(rest) == 0 {
		fmt.Fprintln(stdout, "engram", buildVersion())
		return 0
	}
	if len(rest) == 0 || isHelp(rest[0]) {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if rest[0] == "version" || app.version {
		fmt.Fprintln(stdout, "engram", buildVersion())
		return 0
	}
	c := lookup(commands, rest[0])
	if c == nil {
		fmt.Fprintf(stderr, "engram: unknown command %q%s (run \"engram help\")\n", rest[0], didYouMean(rest[0], topNames()))
		return 2
	}
	// Global flags may also follow the command: engram blocks list --db x.db.
	if rest, err = hoistGlobals(app, rest); err != nil {
		fmt.Fprintln(stderr, "engram:", err)
		return 2
	}
	if c.sub != nil && len(rest) == 1 {
		fmt.Fprintf(stderr, "engram: %s: missing subcommand\n\n%s", rest[0], groupHelp(c))
		return 2
	}
	if c.sub != nil && isHelp(rest[1]) {
		fmt.Fprint(stdout, groupHelp(c))
		return 0
	}
	name, args := rest[0], rest[1:]
	if c.sub != nil {
		if c, args, err = c.subcommand(args); err == nil {
			name += " " + c.name
		}
	}
	if err == nil {
		app.readOnly = c.readOnly
		err = c.run(ctx, app, name, args)
	}
	if err != nil {
		var help *helpError
		if errors.As(err, &help) {
			fmt.Fprint(stdout, help.text)
			return 0
		}
		fmt.Fprintln(stderr, "engram:", tidyError(err))
		var usage *usageError
		if errors.As(err, &usage) {
			return 2
		}
		return 1
	}
	return 0
}

const usage = `engram — durable, shareable, typed memory for LLM agents

Usage: engram [--db STORE] [--json] [--embedder none|offline|openai] COMMAND [ARGS]
       engram --version | version

Blocks
  blocks list   --agent A [--shared]               list an agent's blocks (or those shared with it)
  block show    --agent A [--owner O] [--history] [--raw] LABEL
  block create  --agent A --label L [--type working] [--perm ReadWrite]
                [--schema JSON] [--desc TEXT] [--limit N] [--pinned] [--value TEXT]
  block set     --agent A [--owner O] [--as-agent] LABEL TEXT   replace a text block (as the system unless --as-agent)
  block append  --agent A [--owner O] [--as-agent] LABEL TEXT
                --owner O: O's block shared with A, written as A at the share's permission;
                a Partner/Human edit is queued as a proposal ("proposal #N queued for approval", exit 0)
  block delete  --agent A [--as-agent] LABEL       delete a block and its shares (as the system unless --as-agent)
  share         --owner O --label L --with B [--perm Append] [--revoke]

Proposals (edits to Partner/Human blocks waiting for a person)
  proposals list    [--agent OWNER] [--all] [--diff]   the pending queue across agents
  proposals approve [--as NAME] ID                     apply it, decided by "human:NAME" (default $USER)
  proposals reject  [--as NAME] [--reason TEXT] ID

Archival and search
  archival add  --agent A [--tags a,b] [--meta JSON] TEXT
                metadata "conversation", "conversation_id", "session", "session_id", "thread" or "thread_id"
                (a string or a number, first found wins) names the entry's conversation: it is then also found
                by its neighbours' words there
  archival load --agent A [--in FILE.jsonl] [--tags a,b] [--batch N]   many entries, {"content","tags","metadata"} per line
  archival list --agent A [--tags a,b] [--limit N] [--superseded]
  search        (--agent A | --all) [--mode auto|fts|vector|hybrid] [--types blocks,archival,messages]
                [--limit N] [--vector-weight W] QUERY

Context and agent profiles
  context       --agent A [--model NAME] [--message TEXT] [--recall N] [--recall-mode M]
                [--no-environment] [--no-library] [--no-profile] [--format openai|anthropic|gemini]
                                                   the request the builder builds, each layer's tokens against its budget
  profile show  --agent A                          the agent's system prompt, tools, tool rules and model (context uses them)
  profile set   --agent A [--system TEXT] [--model M] [--context-window N] [--tools JSON] [--rules JSON]
  profile delete --agent A

Files and transfer
  files import  --agent A DIR                      SOUL.md, AGENTS.md, MEMORY.md, TOOLS.md, skills/*/SKILL.md → blocks
                                                   (regular files inside DIR only; no links out, FIFOs or devices)
  files export  --agent A DIR                      writes only inside DIR, never through a link (files 0600)
  export        [--agent A] [--out FILE]           lossless JSON (CRDT history included); FILE replaced atomically, 0600
  export        --format letta [--agent A,B] [--out FILE.af]   a Letta agent file; what it cannot hold is reported
  import        [--in FILE] [--agent A] [--no-caps]  an engram export, or a Letta agent file (.af) with a report

Maintenance
  reembed                                          recompute vectors with --embedder (progress bar)
  compact       [--agent A] [--rebase]             fold block updates into snapshots; --rebase starts new epochs
  consolidate   --agent A [--dry-run] [--apply-exact] [--llm]   find near-duplicate archival entries; propose
                                                   merges (proposals), or apply exact ones at once
  stats

Agents and people
  mcp           --agent A                          serve the memory tools over MCP (stdio)
  ui            [--addr 127.0.0.1:PORT] [--as NAME]  local web app: blocks, history, proposals, context, search;
                                                   prints a URL with an access token
  serve         [--addr 127.0.0.1:8421] [--tls-cert F --tls-key F]   MCP over HTTP (/mcp) and the web UI
                                                   for many agents and people, each by its token
  token create  (--agent A [--name N] [--read-only] [--expires 720h] | --human NAME)   prints the token once
  token list                                       tokens (never the secrets); token revoke ID
  token login-url ID [--base URL] [--expires 15m]  a one-time sign-in link of serve's web UI for a human token
  sync url      --agent A --label L [--owner O]    the block's automerge: URL for automerge-repo peers on serve's /sync

TEXT arguments may be "-" (standard input) or "@FILE"; put text starting with
"-" after "--". "engram COMMAND --help" shows a command's flags and an example.

Global flags (before or after the command; "engram stats --json" works)
  --db STORE     a SQLite file (created 0600 in a directory that must exist), :memory:, a postgres:// URL or a keyword DSN "host=H dbname=D ..."
                 (default: $ENGRAM_DB, else the user data dir, e.g. ~/.local/share/engram/engram.db); passwords are never printed
  --json         machine-readable output
  --embedder     none, offline (deterministic, no network) or openai
                 (ENGRAM_EMBED_BASE_URL, ENGRAM_EMBED_MODEL, ENGRAM_EMBED_API_KEY; works with Ollama, vLLM, OpenAI);
                 default: the embedder the store records (engram stats), an OpenAI-compatible one
                 configured from the same variables
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

// buildVersion is the module version the binary was built from, or "(devel)".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// didYouMean is ` (did you mean "X"?)` for the name closest to typed, when
// one is close enough to be a typo, else "".
func didYouMean(typed string, names []string) string {
	best, bestD := "", 3
	if len(typed) <= 3 {
		bestD = 2
	}
	for _, n := range names {
		if d := editDistance(strings.ToLower(typed), n); d < bestD || d == bestD && n < best && best != "" {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// hoistGlobals takes the global flags (--db, --json, --embedder, before any
// "--") out of the command's arguments args[1:] into a: no command has
// flags of those names, so "engram stats --json" means "engram --json stats".
func hoistGlobals(a *app, args []string) ([]string, error) {
	out := []string{args[0]}
	for i := 1; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			out = append(out, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-"), "=")
		switch name {
		case "json":
			a.json = true
			if hasValue {
				b, err := strconv.ParseBool(value)
				if err != nil {
					return nil, usageErrorf("%s: --json=%s: want true or false", args[0], value)
				}
				a.json = b
			}
		case "db", "embedder":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, usageErrorf("%s: --%s needs a value (run \"engram --help\")", args[0], name)
				}
				i++
				value = args[i]
			}
			if name == "db" {
				a.db, a.dbDefault = value, false
			} else {
				a.embedder = value
			}
		default:
			out = append(out, arg)
		}
	}
	return out, nil
}
