package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
)

// serveSizes are the serve section's counts for one run.
type serveSizes struct {
	calls         int // tool calls per tool, transport and repeat
	httpSessions  int // sessions opened and closed over HTTP per repeat
	stdioSessions int // engram mcp processes started per repeat
	archival      int // archival entries in the store before the calls
}

func serveSizesFor(cfg config) serveSizes {
	switch cfg.name {
	case "smoke":
		return serveSizes{calls: 10, httpSessions: 5, stdioSessions: 2, archival: 300}
	case "quick":
		return serveSizes{calls: 500, httpSessions: 200, stdioSessions: 20, archival: 300}
	default:
		return serveSizes{calls: 2_000, httpSessions: 500, stdioSessions: 40, archival: 300}
	}
}

// benchServe: MCP end to end, as an agent host sees it. The engram binary
// is built from ../cmd/engram (with this program's build tags, so both use
// one SQLite driver) and run twice on one store: `engram serve` (Streamable
// HTTP with a bearer token, the token made by `engram token create`) and
// `engram mcp` (stdio). The official go-sdk client drives both, one call
// at a time, alternating transports in chunks so both see the same moments
// of a shared machine. Rows: tool call p50/p95 HTTP vs stdio, and new
// sessions per second over HTTP against starting an `engram mcp` process,
// which is what a new stdio session costs.
func benchServe(ctx context.Context, cfg config, tmp string, r *report) error {
	const sec = "serve"
	sz := serveSizesFor(cfg)
	dir, err := os.MkdirTemp(tmp, "serve-")
	if err != nil {
		return err
	}
	bin, err := buildEngram(ctx, dir)
	if err != nil {
		return err
	}
	db := filepath.Join(dir, "serve.db")
	if err := seedServeStore(ctx, db, sz.archival); err != nil {
		return err
	}
	token, err := createToken(ctx, bin, db)
	if err != nil {
		return err
	}

	srv, err := startServe(ctx, bin, db, filepath.Join(dir, "serve.log"))
	if err != nil {
		return err
	}
	defer srv.stop()
	httpCS, err := connectHTTP(ctx, srv.mcpURL, token)
	if err != nil {
		return fmt.Errorf("serve: connect over HTTP to %s: %w%s", srv.mcpURL, err, srv.logTail())
	}
	defer httpCS.Close()
	stdioCS, err := connectStdio(ctx, bin, db)
	if err != nil {
		return err
	}
	defer stdioCS.Close()

	type tool struct {
		name string
		args func(i int) map[string]any
	}
	words := []string{"tea", "deploy", "postgres", "latency", "backup", "review"}
	toolList := []tool{
		{"archival_search", func(i int) map[string]any { return map[string]any{"query": words[i%len(words)]} }},
		{"archival_insert", func(i int) map[string]any {
			return map[string]any{"content": fmt.Sprintf("bench note %d: %s checked after the %s change", i, words[i%len(words)], words[(i+1)%len(words)])}
		}},
	}
	sessions := []*mcp.ClientSession{httpCS, stdioCS}
	call := func(cs *mcp.ClientSession, t tool, i int) (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: t.args(i)})
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("serve: %s: %w", t.name, err)
		}
		if res.IsError {
			return 0, fmt.Errorf("serve: %s answered an error: %s", t.name, toolText(res))
		}
		return d, nil
	}
	// Warm both: the first search loads the text cache in each process.
	// A search that finds nothing would time the wrong thing.
	for _, cs := range sessions {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "archival_search", Arguments: map[string]any{"query": "backup"}})
		if err != nil {
			return fmt.Errorf("serve: archival_search: %w", err)
		}
		if text := toolText(res); res.IsError || !strings.Contains(text, "backup") || strings.Contains(text, `"count":0`) {
			return fmt.Errorf("serve: archival_search for \"backup\" found none of the seeded entries: %.300s", text)
		}
	}
	for _, t := range toolList {
		for _, cs := range sessions {
			for i := range 5 {
				if _, err := call(cs, t, i); err != nil {
					return err
				}
			}
		}
	}
	const chunk = 20
	for _, t := range toolList {
		var lat [2][]latency // [http, stdio] per repeat
		for rep := range cfg.repeats {
			var ds [2][]time.Duration
			for done := 0; done < sz.calls; done += chunk {
				for k, cs := range sessions {
					for i := done; i < min(done+chunk, sz.calls); i++ {
						d, err := call(cs, t, rep*sz.calls+i)
						if err != nil {
							return err
						}
						ds[k] = append(ds[k], d)
					}
				}
			}
			for k := range ds {
				lat[k] = append(lat[k], latencyOf(ds[k]))
			}
		}
		r.latency(sec, "MCP tool call p50, "+t.name+": HTTP vs stdio", medianLatency(lat[0]), medianLatency(lat[1]),
			fmt.Sprintf("%d calls per transport per repeat, one at a time, go-sdk client; a store of %d archival entries", sz.calls, sz.archival))
		relabel(r, "HTTP")
	}

	// New sessions: over HTTP a session is initialize (+ initialized and
	// the event stream the client opens) and DELETE on a running server;
	// over stdio it is a new engram mcp process (open the store, initialize,
	// stdin closed, exit).
	var httpRate, stdioRate []float64
	for range cfg.repeats {
		start := time.Now()
		for range sz.httpSessions {
			cs, err := connectHTTP(ctx, srv.mcpURL, token)
			if err != nil {
				return fmt.Errorf("serve: new session over HTTP: %w%s", err, srv.logTail())
			}
			if err := cs.Close(); err != nil {
				return fmt.Errorf("serve: close a session over HTTP: %w", err)
			}
		}
		httpRate = append(httpRate, float64(sz.httpSessions)/time.Since(start).Seconds())
		start = time.Now()
		for range sz.stdioSessions {
			cs, err := connectStdio(ctx, bin, db)
			if err != nil {
				return err
			}
			if err := cs.Close(); err != nil {
				return fmt.Errorf("serve: engram mcp exit: %w", err)
			}
		}
		stdioRate = append(stdioRate, float64(sz.stdioSessions)/time.Since(start).Seconds())
	}
	r.compare(sec, "MCP sessions/s over HTTP vs engram mcp process starts (stdio)", median(httpRate), median(stdioRate), unitOps, "higher",
		fmt.Sprintf("one after another; HTTP: initialize + close on a running serve (%d per repeat); stdio: start engram mcp, initialize, close stdin, exit (%d per repeat)",
			sz.httpSessions, sz.stdioSessions))
	relabel(r, "HTTP")
	return nil
}

// relabel names the winner in the last row's automatic note: the rows of
// this section compare two of engram's transports, not engram and a peer.
func relabel(r *report, who string) {
	x := &r.Rows[len(r.Rows)-1]
	switch {
	case strings.HasPrefix(x.Note, "engram loses:"):
		x.Note = who + " loses:" + strings.TrimPrefix(x.Note, "engram loses:")
	case strings.HasPrefix(x.Note, "engram "):
		x.Note = who + " " + strings.TrimPrefix(x.Note, "engram ")
	}
}

// buildEngram builds the engram command into dir with this program's
// build tags (go run -tags engram_cgo,sqlite_fts5 . benchmarks the cgo
// driver on both sides).
func buildEngram(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "engram")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := []string{"build", "-o", bin}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				args = append(args, "-tags", s.Value)
			}
		}
	}
	args = append(args, "./cmd/engram")
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("serve: the go command builds engram for this section: %w", err)
	}
	// Built in engram's own module (the replace directive in go.mod points
	// there), with its go.sum: the bench module's lists only what the
	// bench's packages import, not what the command alone needs.
	root, err := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.Dir}}", "github.com/engram-go/engram").Output()
	if err != nil {
		return "", fmt.Errorf("serve: find engram's module directory: %w", err)
	}
	build := exec.CommandContext(ctx, gobin, args...)
	build.Dir = strings.TrimSpace(string(root))
	out, err := build.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("serve: go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return bin, nil
}

// seedServeStore makes agent ada's store: a few blocks and n archival
// entries to search.
func seedServeStore(ctx context.Context, db string, n int) error {
	st, err := memory.Open(ctx, db, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, b := range []memory.BlockSpec{
		{Label: "persona", Type: blocks.Core, Value: "A careful operations agent. Keeps notes short."},
		{Label: "human", Type: blocks.Core, Value: "Ada runs the deploys and reviews the backups on Fridays."},
		{Label: "notes", Type: blocks.Working, Value: "Open items:", CharLimit: 1 << 20},
	} {
		if _, err := st.Agent("ada").CreateBlock(ctx, b); err != nil {
			return fmt.Errorf("serve: create block %s: %w", b.Label, err)
		}
	}
	topics := []string{"tea", "deploy", "postgres", "latency", "backup", "review", "billing", "oncall"}
	entries := make([]memory.ArchivalEntry, n)
	for i := range entries {
		entries[i] = memory.ArchivalEntry{Content: fmt.Sprintf("entry %d: the %s item from week %d; %s followed, then %s",
			i, topics[i%len(topics)], i/7, topics[(i*3+1)%len(topics)], topics[(i*5+2)%len(topics)])}
	}
	if _, err := st.Agent("ada").Archival().InsertBatch(ctx, entries, nil); err != nil {
		return fmt.Errorf("serve: insert %d archival entries: %w", n, err)
	}
	return st.Close()
}

// createToken runs engram token create for ada; the token is the last
// word of its last line.
func createToken(ctx context.Context, bin, db string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--db", db, "token", "create", "--agent", "ada", "--name", "bench").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("serve: engram token create: %w\n%s", err, out)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", errors.New("serve: engram token create printed nothing")
	}
	return f[len(f)-1], nil
}

// serveProc is a running engram serve child.
type serveProc struct {
	cmd    *exec.Cmd
	mcpURL string
	log    string // its stderr (the access log)
	done   chan error
}

// startServe starts engram serve on a free loopback port (--addr
// 127.0.0.1:0; the address is read from its --json line), with no rate
// limit in the way of a tight loop.
func startServe(ctx context.Context, bin, db, logPath string) (*serveProc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, "--db", db, "--embedder", "none", "--json", "serve", "--addr", "127.0.0.1:0",
		"--rate", "1e9", "--burst", "1000000000")
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("serve: start engram serve: %w", err)
	}
	p := &serveProc{cmd: cmd, log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	type info struct{ MCP string }
	got := make(chan info, 1)
	fail := make(chan error, 1)
	go func() {
		var i info
		if err := json.NewDecoder(bufio.NewReader(out)).Decode(&i); err != nil {
			fail <- err
			return
		}
		got <- i
	}()
	select {
	case i := <-got:
		if i.MCP == "" {
			p.stop()
			return nil, fmt.Errorf("serve: engram serve printed no MCP URL%s", p.logTail())
		}
		p.mcpURL = i.MCP
		return p, nil
	case err := <-fail:
		p.stop()
		return nil, fmt.Errorf("serve: read engram serve's address: %w%s", err, p.logTail())
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("serve: engram serve printed no address in 30 s%s", p.logTail())
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop ends serve as a supervisor would: SIGTERM (it drains and closes
// its sessions), then SIGKILL if it is still there after 15 s.
func (p *serveProc) stop() {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// logTail is the end of serve's stderr, for an error message.
func (p *serveProc) logTail() string {
	b, err := os.ReadFile(p.log)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\nengram serve stderr (end):\n" + string(b)
}

// bearer adds the token to every request of the HTTP client.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectHTTP opens a session through the go-sdk's Streamable HTTP
// client. Every session goes through http.DefaultTransport, so
// connections are kept alive between sessions as an agent host's would be.
func connectHTTP(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}}
	return mcp.NewClient(&mcp.Implementation{Name: "engram-bench", Version: "0"}, nil).Connect(ctx, tr, nil)
}

// connectStdio starts engram mcp and initializes a session over its
// stdin and stdout; closing the session closes stdin and waits for the
// process to exit.
func connectStdio(ctx context.Context, bin, db string) (*mcp.ClientSession, error) {
	cmd := exec.Command(bin, "--db", db, "--embedder", "none", "mcp", "--agent", "ada")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "engram-bench", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait() // reaps it unless the SDK's close already did
		}
		return nil, fmt.Errorf("serve: start engram mcp over stdio: %w\n%s", err, stderr.String())
	}
	return cs, nil
}

func toolText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}
