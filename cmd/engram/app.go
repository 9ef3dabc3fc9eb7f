package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// app holds the global flags and the store, opened on first use.
type app struct {
	db       string
	json     bool
	embedder string
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	store    *memory.Cache
	reembed  bool
}

func parseGlobal(args []string, stdin io.Reader, stdout, stderr io.Writer) (*app, []string, error) {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("engram", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&a.db, "db", "", "store file")
	fs.BoolVar(&a.json, "json", false, "JSON output")
	fs.StringVar(&a.embedder, "embedder", os.Getenv("ENGRAM_EMBEDDER"), "none, offline or openai")
	if err := fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if a.db == "" {
		a.db = defaultDB()
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

func (a *app) embedderValue() (search.Embedder, error) {
	switch strings.ToLower(a.embedder) {
	case "", "none":
		return nil, nil
	case "offline":
		return search.NewOffline(0), nil
	case "openai":
		return search.NewOpenAI(nil)
	}
	return nil, fmt.Errorf("unknown embedder %q (want none, offline or openai)", a.embedder)
}

// open opens the store once.
func (a *app) open(ctx context.Context) (*memory.Cache, error) {
	if a.store != nil {
		return a.store, nil
	}
	if a.db != ":memory:" && !strings.Contains(a.db, "://") {
		if err := os.MkdirAll(filepath.Dir(a.db), 0o755); err != nil {
			return nil, err
		}
	}
	emb, err := a.embedderValue()
	if err != nil {
		return nil, err
	}
	s, err := memory.Open(ctx, a.db, &memory.Options{Embedder: emb, OpenForReembed: a.reembed})
	if err != nil {
		return nil, err
	}
	a.store = s
	return s, nil
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
// after them.
func flags(name string, args []string, define func(fs *flag.FlagSet)) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func need(name, what, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s: %s is required", name, what)
	}
	return nil
}
