package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/cmd/engram/internal/serve"
	"github.com/engram-go/engram/cmd/engram/internal/ui"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/tools"
)

// readTools are the tools a read-only token keeps: those that only read.
// A tool not listed here is hidden from read-only sessions, so a new
// writing tool is never offered to them by omission.
var readTools = []string{tools.ArchivalSearch, tools.ConversationSearch, tools.LoadSkill}

// serveConfig is what cmdServe's flags set.
type serveConfig struct {
	addr, certFile, keyFile string
	origins                 string
	trustedProxies          string
	metricsTokenFile        string
	opts                    serve.Options
	drain                   time.Duration
	consolidateEvery        time.Duration // 0: no background consolidation
	consolidateApplyExact   bool
}

// checkLimits refuses a limit flag set to a value it cannot mean. The
// library reads a zero or negative limit as its default; on the command
// line, whose flags show their defaults, such a value is a mistake.
func (c *serveConfig) checkLimits() error {
	o := &c.opts
	if !(o.Rate > 0) {
		return usageErrorf("serve: --rate %v: want a positive number of requests per second per token, such as 50 (or inf for no limit)", o.Rate)
	}
	for _, f := range []struct {
		name string
		v    int64
		min  int64
		want string
	}{
		{"burst", int64(o.Burst), 1, "1 or more requests of a token at once"},
		{"max-sessions", int64(o.MaxSessions), 1, "1 or more open MCP sessions"},
		{"max-token-sessions", int64(o.MaxTokenSessions), 0, "1 or more open MCP sessions of a token, or 0 for a tenth of --max-sessions"},
		{"max-batch", int64(o.MaxBatch), 1, "1 or more messages in a JSON-RPC batch"},
		{"max-body", o.MaxBodyBytes, 1, "a positive request body size in bytes"},
		{"max-edit", int64(o.MaxEdit), 1, "1 or more characters (or automerge operations) in one edit"},
	} {
		if f.v < f.min {
			return usageErrorf("serve: --%s %d: want %s", f.name, f.v, f.want)
		}
	}
	if o.SessionIdle <= 0 {
		return usageErrorf("serve: --session-idle %v: want a positive duration, such as 30m", o.SessionIdle)
	}
	if c.drain < 0 {
		return usageErrorf("serve: --drain %v: want a duration of 0 or more", c.drain)
	}
	return nil
}

func cmdServe(fs *flag.FlagSet) runFunc {
	var c serveConfig
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8421", "listen address; anything but loopback without TLS prints a warning")
	fs.StringVar(&c.certFile, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&c.keyFile, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&c.origins, "origins", "", "comma-separated browser origins allowed besides the server's own (https://app.example.com)")
	fs.IntVar(&c.opts.MaxSessions, "max-sessions", 1000, "open MCP sessions at most (beyond: 503)")
	fs.IntVar(&c.opts.MaxTokenSessions, "max-token-sessions", 0, "open MCP sessions of one token at most (beyond: 503; default a tenth of --max-sessions)")
	fs.DurationVar(&c.opts.SessionIdle, "session-idle", 30*time.Minute, "close an MCP session idle this long")
	fs.Float64Var(&c.opts.Rate, "rate", 50, "requests per second per token, sustained (beyond, a request waits for the rate, at most 10 s and with at most 10 s' worth of the token's requests waiting; beyond either 429)")
	fs.IntVar(&c.opts.Burst, "burst", 100, "requests per token at once")
	fs.IntVar(&c.opts.TokenConcurrency, "token-concurrency", 0, "requests (and /sync frames) of one token served at once; later ones wait for a turn (default 0: half the CPUs, at least 1)")
	fs.IntVar(&c.opts.TokenQueue, "token-queue", 16, "requests of one token that may wait for a turn (beyond: 429; its /sync frames wait outside this queue)")
	var tokenBytes, tokenBytesBurst int64
	fs.Var((*byteSize)(&tokenBytes), "token-bytes", "request body bytes per second per token, sustained, such as 1MiB (default 0: 1MiB; a request its token cannot pay for yet waits, with its turn, before its body is decoded, and gets 429 past 10s)")
	fs.Var((*byteSize)(&tokenBytesBurst), "token-bytes-burst", "request body bytes per token at once (default 0: twice --max-body)")
	fs.IntVar(&c.opts.MaxBatch, "max-batch", 32, "messages in one JSON-RPC batch at most, each counted as a request by --rate and --burst (only sessions of protocol 2025-03-26 or earlier may batch; never more than --burst, nor more calls than --token-concurrency)")
	fs.Int64Var(&c.opts.MaxBodyBytes, "max-body", 4<<20, "request body size limit in bytes")
	fs.IntVar(&c.opts.MaxEdit, "max-edit", serve.DefaultMaxEdit, "the largest edit one request may make: characters an MCP tool's block edit carries, automerge operations the changes of one /sync message apply (beyond: refused, nothing applied)")
	var quota, textCache, vectorCache, docCache int64
	fs.Var((*byteSize)(&docCache), "doc-cache", "bytes the cached block documents may hold, as estimated from their sizes, such as 512MiB (default 0: 1GiB); past it, the least recently used leave memory and load again when next used")
	fs.Var((*byteSize)(&textCache), "text-cache", "bytes the in-memory full-text index may hold, such as 256MiB (default 0: 64MiB); past it, it holds the partitions of the agents searched lately (see /metrics engram_search_cache_*)")
	fs.Var((*byteSize)(&vectorCache), "vector-cache", "bytes the in-memory vector index may hold, such as 1GiB (default 0: 256MiB on SQLite; on PostgreSQL none, pgvector answers, and a size asks for one)")
	statsDrift := servingStatsDrift
	fs.Float64Var(&statsDrift, "stats-drift", servingStatsDrift, "share of a content type's rows, between 0 and 1, that other processes' deletes and rewrites may leave the text cache's search statistics following approximately before they are counted again (0: exact; each such write drops them, and searches of that type rank in SQL or count again until they are)")
	fs.Var((*byteSize)(&quota), "agent-quota", "bytes each agent's archival entries and messages may hold, such as 500MiB or 2GiB (beyond: the write is refused; default 0, no quota)")
	fs.StringVar(&c.trustedProxies, "trusted-proxies", "", "comma-separated addresses or CIDR prefixes of reverse proxies whose X-Forwarded-For names the client (for the failed-login limit; default: none, the header is ignored). "+
		"The header is believed from any connection from these addresses: the port must be reachable from them only through the proxy, or a client there can name any address (escaping the per-address limit, spending another address's count)")
	fs.StringVar(&c.metricsTokenFile, "metrics-token-file", "", "serve /metrics (Prometheus) to the bearer of the token in this file; without it /metrics is off")
	fs.DurationVar(&c.drain, "drain", 10*time.Second, "on SIGINT/SIGTERM, how long requests in flight may take to finish")
	fs.DurationVar(&c.consolidateEvery, "consolidate-every", 0, "every this long, one bounded consolidation round per agent's archival memory: near-duplicates become merge_archival proposals (default 0, off)")
	fs.BoolVar(&c.consolidateApplyExact, "consolidate-apply-exact", false, "with --consolidate-every, merge exact duplicates (same normalised text) at once instead of proposing them; near-exact ones are still proposed")
	return func(ctx context.Context, a *app, _ []string) error {
		if quota != 0 {
			a.quota = quota
		}
		a.textCache, a.vectorCache, a.docCache = textCache, vectorCache, docCache
		c.opts.TokenBytesRate, c.opts.TokenBytesBurst = float64(tokenBytes), tokenBytesBurst
		if !(statsDrift >= 0 && statsDrift <= 1) {
			return usageErrorf("serve: --stats-drift %v: want a share between 0 and 1, such as 0.005, or 0 for exact statistics", statsDrift)
		}
		a.statsDrift = &statsDrift
		if c.consolidateEvery < 0 {
			return usageErrorf("serve: --consolidate-every %v: want a positive duration, or 0 for off", c.consolidateEvery)
		}
		if err := c.checkLimits(); err != nil {
			return err
		}
		if c.opts.TokenConcurrency < 0 {
			return usageErrorf("serve: --token-concurrency %d: want 1 or more requests of a token at once, or 0 for half the CPUs", c.opts.TokenConcurrency)
		}
		if c.opts.TokenQueue < 1 {
			return usageErrorf("serve: --token-queue %d: want 1 or more requests of a token waiting for a turn", c.opts.TokenQueue)
		}
		if (c.certFile == "") != (c.keyFile == "") {
			return usageErrorf("serve: --tls-cert and --tls-key go together (run \"engram serve --help\")")
		}
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		a.serving = true // many searches: keep the full-text index in memory
		log := slog.New(slog.NewJSONHandler(a.stderr, nil))
		a.logger = log
		s, err := a.open(ctx)
		if err != nil {
			return err
		}
		defer a.close()
		if c.consolidateEvery > 0 {
			// Stopped (and waited for) before the store closes.
			cctx, cancel := context.WithCancel(ctx)
			cdone := make(chan struct{})
			go func() {
				defer close(cdone)
				if err := s.RunConsolidation(cctx, c.consolidateEvery, &memory.ConsolidateOptions{ApplyExact: c.consolidateApplyExact}); err != nil {
					log.Error("consolidation stopped", "err", err)
				}
			}()
			defer func() { cancel(); <-cdone }()
		}
		h, err := newServeHandler(s, &c, log)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", c.addr)
		if err != nil {
			return fmt.Errorf("serve: listen on %s: %w", c.addr, err)
		}
		scheme := "http"
		hs := newHTTPServer(h, log)
		if c.certFile != "" {
			cert, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
			if err != nil {
				ln.Close()
				return fmt.Errorf("serve: load TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err)
			}
			hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			ln = tls.NewListener(ln, hs.TLSConfig)
			scheme = "https"
		}
		if w := serve.Listening(ln.Addr(), c.certFile != ""); w != "" {
			fmt.Fprintln(a.stderr, "engram serve: warning:", w)
		}
		base := scheme + "://" + hostPort(ln.Addr())
		errc := make(chan error, 1)
		go func() { errc <- hs.Serve(ln) }()
		db := redact.Target(a.db)
		if err := a.output(map[string]any{"url": base, "mcp": base + "/mcp", "ui": base + "/ui/", "db": db}, func(w io.Writer) {
			fmt.Fprintf(w, "engram serve for %s\nMCP (Streamable HTTP, Authorization: Bearer TOKEN): %s/mcp\nweb UI (a human token): %s/ui/\n(Ctrl-C or SIGTERM stops it)\n", db, base, base)
		}); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		}
		return shutdownServe(h, hs, c.drain)
	}
}

// newServeHandler is the door over store, with engram mcp's servers and
// engram ui's pages.
func newServeHandler(store *memory.Store, c *serveConfig, log *slog.Logger) (*serve.Handler, error) {
	o := c.opts
	o.Tokens, o.Logger, o.ReadTools, o.SyncStore = accesstoken.Of(store), log, readTools, store
	if o.MaxEdit <= 0 {
		o.MaxEdit = serve.DefaultMaxEdit // the tools' cap as the handler's
	}
	for _, origin := range strings.Split(c.origins, ",") {
		if origin = strings.TrimSpace(origin); origin != "" {
			o.Origins = append(o.Origins, origin)
		}
	}
	for _, p := range strings.Split(c.trustedProxies, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.TrustedProxies = append(o.TrustedProxies, p)
		}
	}
	if c.metricsTokenFile != "" {
		tok, err := serve.ReadMetricsToken(c.metricsTokenFile)
		if err != nil {
			return nil, err
		}
		o.MetricsToken = tok
	}
	o.MCPServer = func(ctx context.Context, agent string, readOnly bool) (*mcp.Server, error) {
		var only []string
		if readOnly {
			only = readTools
		}
		srv, listed, err := newMCPServerOnly(store, agent, only, &tools.Options{MaxEditChars: o.MaxEdit})
		if err != nil {
			return nil, err
		}
		go watchResources(ctx, srv, store, agent, listed, resourcePoll)
		return srv, nil
	}
	o.SearchCache = store.SearchCacheStats
	o.Ready = func() bool {
		done, cancel := context.WithCancel(context.Background())
		cancel() // answer at once: prewarmed or not
		return store.WaitPrewarm(done) == nil
	}
	o.UI = func(ctx context.Context, human string) (http.Handler, error) {
		return newServeUI(store, human, log)
	}
	return serve.New(&o)
}

// newHTTPServer bounds what one connection can hold: headers must arrive
// within 10 s and a request body within a minute (serve.BodyReadTimeout,
// from the end of any wait for its turn; no slowloris), idle
// keep-alive connections close after two; there is no write timeout, as
// an MCP event stream lasts as long as its session.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: serve.BodyReadTimeout,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// shutdownServe drains the door (requests in flight finish, sessions
// close) and then the HTTP server.
func shutdownServe(h *serve.Handler, hs *http.Server, drain time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := h.Shutdown(ctx)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	if serr := hs.Shutdown(sctx); serr != nil && !errors.Is(serr, context.DeadlineExceeded) {
		err = errors.Join(err, fmt.Errorf("serve: shut down: %w", serr))
	}
	return err
}

// byteSize is a flag's size in bytes: a whole number, optionally followed
// by KiB, MiB or GiB (or K, M, G: the same powers of 1024).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("%q: want a size in bytes, such as 1048576, 500MiB or 2GiB", s)
	}
	*b = byteSize(n * mult)
	return nil
}

func hostPort(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// serveUI is engram ui's app for one person behind serve's login: serve
// has checked the person's token, so every request is let in with the
// app's own cookie, which the app hands out for its login URL and which
// never reaches the browser.
type serveUI struct {
	*ui.Server
	cookie *http.Cookie
}

func newServeUI(store *memory.Store, human string, log *slog.Logger) (*serveUI, error) {
	srv, err := ui.New(store, &ui.Options{Person: human, Logger: log, BasePath: serve.UIPath})
	if err != nil {
		return nil, err
	}
	// The app's own login: its URL answers with its cookie.
	u, err := url.Parse(srv.URL("http://engram.invalid"))
	if err != nil {
		srv.Close()
		return nil, err
	}
	rec := &headerRecorder{h: http.Header{}}
	srv.ServeHTTP(rec, &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, Header: http.Header{}})
	cookies := (&http.Response{Header: rec.h}).Cookies()
	if len(cookies) != 1 {
		srv.Close()
		return nil, fmt.Errorf("serve: the web UI's login gave %d cookies, want 1 (status %d)", len(cookies), rec.status)
	}
	return &serveUI{Server: srv, cookie: &http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value}}, nil
}

func (s *serveUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = r.Clone(r.Context())
	r.AddCookie(s.cookie)
	s.Server.ServeHTTP(w, r)
}

// headerRecorder keeps a response's header and status, dropping its body.
type headerRecorder struct {
	h      http.Header
	status int
}

func (r *headerRecorder) Header() http.Header         { return r.h }
func (r *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *headerRecorder) WriteHeader(code int)        { r.status = code }
