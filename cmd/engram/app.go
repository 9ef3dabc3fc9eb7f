package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// servingStatsDrift is memory.Options.TextStatsDrift for a long-running
// command (engram serve's --stats-drift default): its searches keep
// ranking in the text cache, without counting store-wide statistics
// again, after other processes' deletes and rewrites, a pass counting
// again per 0.5% of a type's rows changed that way.
const servingStatsDrift = 0.005

// app holds the global flags and the store, opened on first use.
type app struct {
	db       string
	json     bool
	embedder string
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	store    *memory.Store
	reembed  bool
	version  bool // --version
	// quota is engram serve's --agent-quota (memory.Options.
	// AgentQuotaBytes; 0: none), and uncapped engram import's --no-caps
	// (every per-entry cap off, memory.Options.MaxArchivalBytes...).
	quota    int64
	uncapped bool
	readOnly bool // the command only reads: a missing store file is an error
	// dbDefault: db is the default location in the user data directory
	// (no --db, no $ENGRAM_DB), whose directory is made when missing; a
	// store named by the user needs its directory to exist.
	dbDefault bool
	// serving: a long-running command (mcp, ui) that searches many times
	// keeps the default in-memory search caches (memory.Options
	// TextCacheBytes, VectorCacheBytes); a one-shot command would only
	// start building them and exit.
	serving bool
	// textCache and vectorCache are engram serve's --text-cache and
	// --vector-cache (memory.Options.TextCacheBytes, VectorCacheBytes;
	// 0: their defaults).
	textCache, vectorCache int64
	// docCache is engram serve's --doc-cache (memory.Options.CacheBytes;
	// 0: its default).
	docCache int64
	// statsDrift is engram serve's --stats-drift (nil: servingStatsDrift).
	statsDrift *float64
	// logger is the store's (memory.Options.Logger); nil discards.
	logger *slog.Logger
	// needVectors: the command searches by vector (search --mode
	// vector|hybrid, context --recall): without --embedder, a recorded
	// embedder the CLI cannot rebuild is an error, as it is for serving.
	needVectors bool
	// searches: the command searches (search, context --recall), so it
	// opens with the recorded embedder though it only reads; other
	// commands that only read need no embedder, and skip reopening.
	searches bool
}

func parseGlobal(args []string, stdin io.Reader, stdout, stderr io.Writer) (*app, []string, error) {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("engram", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.db, "db", "", "store: a SQLite file, :memory:, a postgres:// URL or a keyword DSN \"host=H dbname=D\" (default $ENGRAM_DB)")
	fs.BoolVar(&a.json, "json", false, "JSON output")
	fs.BoolVar(&a.version, "version", false, "print the version")
	fs.StringVar(&a.embedder, "embedder", os.Getenv("ENGRAM_EMBEDDER"), "none, offline or openai (default: the one the store records)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if a.db == "" {
		a.db, a.dbDefault = defaultDB(), os.Getenv("ENGRAM_DB") == ""
	}
	return a, fs.Args(), nil
}

// defaultDB is $ENGRAM_DB, else engram.db in the user's data directory.
func defaultDB() string {
	if p := os.Getenv("ENGRAM_DB"); p != "" {
		return p
	}
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "engram.db"
		}
		base = filepath.Join(home, ".local", "share")
		if runtime.GOOS == "darwin" {
			base = filepath.Join(home, "Library", "Application Support")
		}
	}
	return filepath.Join(base, "engram", "engram.db")
}

// embedderValue is the embedder --embedder names; nil for none, and for
// the default, the store's recorded one (see open).
func (a *app) embedderValue() (search.Embedder, error) {
	switch strings.ToLower(a.embedder) {
	case "", "none":
		return nil, nil
	case "offline":
		return search.NewOffline(0), nil
	case "openai":
		e, err := openAIEmbedder("", 0)
		if err != nil {
			return nil, fmt.Errorf("--embedder openai: %w", err)
		}
		return e, nil
	}
	return nil, usageErrorf("unknown embedder %q (want none, offline or openai)", a.embedder)
}

// open opens the store once.
func (a *app) open(ctx context.Context) (*memory.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	// Only a SQLite file gets its directory made: a PostgreSQL URL or
	// keyword DSN ("host=… password=…/x") is no path to create.
	if path, ok := memory.SQLitePath(a.db); ok && path != ":memory:" {
		if _, err := os.Stat(path); a.readOnly && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no store at %s (this command only reads; commands that write create the store; set --db or ENGRAM_DB)", redact.Target(path))
		}
		dir := filepath.Dir(path)
		if !a.dbDefault {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				why := "does not exist"
				if err == nil {
					why = "is not a directory"
				} else if !errors.Is(err, fs.ErrNotExist) {
					why = err.Error()
				}
				return nil, fmt.Errorf("no store at %s: directory %s %s (create it first, or choose another --db)", redact.Target(path), redact.Target(dir), why)
			}
		}
		// 0700: the store holds every agent's memory; the file itself is
		// created 0600 by the SQLite backend.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create the store's directory %s: %w", redact.Target(dir), err)
		}
	}
	emb, err := a.embedderValue()
	if err != nil {
		return nil, err
	}
	opts := &memory.Options{Embedder: emb, OpenForReembed: a.reembed, AgentQuotaBytes: a.quota, Logger: a.logger}
	if a.uncapped {
		opts.MaxArchivalBytes, opts.MaxMetadataBytes, opts.MaxTags, opts.MaxTagBytes, opts.MaxMessageBytes = -1, -1, -1, -1, -1
	}
	a.cacheOptions(opts)
	s, err := memory.Open(ctx, a.db, opts)
	if errors.Is(err, search.ErrEmbedderMismatch) {
		return nil, fmt.Errorf("%w\nto switch the store to this embedder: engram --embedder %s reembed", err, cmpOr(a.embedder, "none"))
	}
	if err != nil {
		return nil, err
	}
	if a.embedder == "" && (!a.readOnly || a.searches || a.serving || a.needVectors) {
		if s, err = a.reopenWithRecorded(ctx, s, opts); err != nil {
			return nil, err
		}
	}
	a.store = s
	return s, nil
}

// cacheOptions sets opts' search caches: none for a one-shot command
// (it would only start building them and exit), the configured ones,
// prewarmed and with drifting statistics, for a serving one, whose
// document cache is bounded as configured too.
func (a *app) cacheOptions(opts *memory.Options) {
	if !a.serving {
		opts.TextCacheBytes, opts.VectorCacheBytes = -1, -1
		return
	}
	opts.Prewarm = true
	opts.TextCacheBytes, opts.VectorCacheBytes = a.textCache, a.vectorCache
	opts.CacheBytes = a.docCache
	opts.TextStatsDrift = servingStatsDrift
	if a.statsDrift != nil {
		opts.TextStatsDrift = *a.statsDrift
	}
}

// reopenWithRecorded reopens s, opened without an embedder, with the one
// its vectors were made with, so that vector search and new content's
// vectors work without --embedder. One it cannot rebuild (an
// OpenAI-compatible model without its key or URL in the environment) fails
// a command that searches by vector; others run without vectors, a write
// saying so on stderr.
func (a *app) reopenWithRecorded(ctx context.Context, s *memory.Store, opts *memory.Options) (*memory.Store, error) {
	emb, _, err := recordedEmbedder(ctx, s)
	switch {
	case emb != nil:
	case errors.Is(err, errEmbedderUnavailable):
		if a.serving || a.needVectors {
			s.Close()
			return nil, fmt.Errorf("%w\n(or choose --embedder none to search without vectors)", err)
		}
		if !a.readOnly {
			fmt.Fprintf(a.stderr, "engram: warning: %v; new content gets no vectors\n", err)
		}
		return s, nil
	case err != nil:
		s.Close()
		return nil, err
	default:
		return s, nil // nothing recorded
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	opts.Embedder = emb
	return memory.Open(ctx, a.db, opts)
}

func (a *app) close() error {
	if a.store == nil {
		return nil
	}
	err := a.store.Close()
	a.store = nil
	return err
}

// output writes v as indented JSON (--json) or calls text.
func (a *app) output(v any, text func(w io.Writer)) error {
	if a.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(a.stdout)
	return nil
}

func (a *app) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// progress draws a one-line progress bar on stderr (not in --json mode).
func (a *app) progress(label string) func(done, total int) {
	if a.json {
		return func(int, int) {}
	}
	finished := false
	return func(done, total int) {
		if finished {
			return
		}
		const width = 30
		filled := width
		if total > 0 {
			filled = done * width / total
		}
		fmt.Fprintf(a.stderr, "\r%s [%s%s] %d/%d", label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done, total)
		if done >= total {
			finished = true
			fmt.Fprintln(a.stderr)
		}
	}
}

// flags parses a command's flags; positional arguments may come before or
// after them, "--" ends the flags, and an argument that starts with "-" but
// cannot be a flag (it holds a space, say: "- item", "-5 degrees") is taken
// as text.
func flags(name string, args []string, define func(fs *flag.FlagSet)) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	var pos []string
	for {
		i := textArg(fs, args)
		if i < 0 {
			p, err := parseSegment(name, fs, args)
			return append(pos, p...), err
		}
		p, err := parseSegment(name, fs, args[:i])
		if err != nil {
			return nil, err
		}
		pos = append(append(pos, p...), args[i])
		args = args[i+1:]
	}
}

// parseSegment parses flags interleaved with positional arguments.
func parseSegment(name string, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(name, fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func parseFlags(name string, fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return &helpError{commandHelpText(name, fs)}
	}
	if err != nil {
		hint := ""
		if bad, found := strings.CutPrefix(err.Error(), "flag provided but not defined: "); found {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
			hint = didYouMean(strings.TrimLeft(bad, "-"), names)
			if hint != "" {
				hint = strings.Replace(hint, `"`, `"--`, 1)
			}
			hint += `; text that starts with "-" goes after "--"`
		}
		return usageErrorf("%s: %v%s (run \"engram %s --help\")", name, err, hint, name)
	}
	return nil
}

// textArg is the index of the first argument before any "--" that starts
// with "-" but is no flag of fs and cannot be one, or -1.
func textArg(fs *flag.FlagSet, args []string) int {
	for i, a := range args {
		if a == "--" {
			return -1
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if fs.Lookup(name) != nil {
			continue
		}
		if strings.ContainsFunc(name, func(r rune) bool {
			return !(r == '-' || r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) || name == "" {
			return i
		}
	}
	return -1
}

// text resolves a TEXT argument: "-" reads standard input, "@FILE" reads
// FILE, "@@..." is a literal "@...", anything else is itself.
// Past maxTextBytes it is refused: "@/dev/zero" once read until memory
// ran out.
func (a *app) text(arg string) (string, error) {
	switch {
	case arg == "-":
		return readText(a.stdin, "standard input")
	case strings.HasPrefix(arg, "@@"):
		return arg[1:], nil
	case strings.HasPrefix(arg, "@") && len(arg) > 1:
		f, err := os.Open(arg[1:])
		if err != nil {
			return "", fmt.Errorf("read %s: %w", arg[1:], err)
		}
		defer f.Close()
		return readText(f, arg[1:])
	}
	return arg, nil
}

// maxTextBytes bounds a TEXT argument read from a file or standard input:
// four times a block's character cap (a block of 4-byte characters), far
// more than any model's context window holds.
const maxTextBytes = 4 * blocks.MaxCharLimit

func readText(r io.Reader, name string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxTextBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxTextBytes {
		return "", fmt.Errorf("read %s: %w: more than %d MiB", name, errTooLarge, maxTextBytes>>20)
	}
	return string(b), nil
}

// errTooLarge is a TEXT argument past maxTextBytes.
var errTooLarge = errors.New("text too large")

func need(name, what, v string) error {
	if strings.TrimSpace(v) == "" {
		return usageErrorf("%s: %s is required (run \"engram %s --help\")", name, what, name)
	}
	return nil
}

// usageError is a command line the program cannot run (unknown command or
// flag, missing argument): run exits 2 for it, 1 for a command that failed.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}
