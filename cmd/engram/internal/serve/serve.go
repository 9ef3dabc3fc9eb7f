package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/cmd/engram/internal/mcpguard"
	"github.com/engram-go/engram/internal/accesstoken"
	"github.com/engram-go/engram/internal/tokenbucket"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
	"github.com/engram-go/engram/syncrepo"
)

// Tokens is what the door asks of the store's access tokens and login
// links: an *accesstoken.Tokens.
type Tokens interface {
	Verify(ctx context.Context, secret string) (accesstoken.Token, error)
	Get(ctx context.Context, id int64) (accesstoken.Token, error)
	// UseLoginLink consumes a one-time login link of the web UI.
	UseLoginLink(ctx context.Context, secret string) (accesstoken.Token, error)
}

// SyncStore is the store /sync serves (*memory.Store): the handle of each
// token's agent, and its change signal.
type SyncStore interface {
	Agent(id string) *memory.Agent
	BlocksChanged() <-chan struct{}
}

// DefaultMaxEdit is Options.MaxEdit's default: 100,000 characters or
// operations, one burst of a token's /sync operations.
const DefaultMaxEdit = syncrepo.DefaultMaxMessageOps

// Options configure a Handler. Tokens and MCPServer are required; zero
// fields otherwise mean the documented defaults.
type Options struct {
	Tokens Tokens
	// MCPServer makes the MCP server agent's sessions share: those of its
	// read-only tokens (which should offer only ReadTools, in its tools
	// and anything naming them, such as a context prompt) or the others.
	// It is called once per agent and readOnly; ctx ends when the
	// Handler shuts down (stop any watcher started for the server then).
	MCPServer func(ctx context.Context, agent string, readOnly bool) (*mcp.Server, error)
	// ReadTools are the tools a read-only token may list and call; any
	// other tool is unknown to its sessions.
	ReadTools []string
	// UI, when set, makes the web app a person uses (called once per
	// human name; closed at shutdown if it is an io.Closer). It gets the
	// requests under UIPath with their full path, so it must be mounted
	// at UIPath. Without it the UI paths answer 404.
	UI func(ctx context.Context, human string) (http.Handler, error)
	// Logger gets the access log (one line per request: token id and
	// name, agent or human, never the secret) and errors. Default:
	// discarded.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (413 beyond). Default 4 MiB.
	MaxBodyBytes int64
	// MaxSessions caps open MCP sessions across agents; a new session
	// beyond it gets 503 with Retry-After. Default 1000.
	MaxSessions int
	// MaxTokenSessions caps the open MCP sessions of one token, so that
	// one client (one that reconnects without closing its sessions, say)
	// cannot take them all; beyond it: 503 with Retry-After. Default a
	// tenth of MaxSessions, at least 1.
	MaxTokenSessions int
	// SessionIdle closes an MCP session with no request for this long.
	// Default 30 minutes.
	SessionIdle time.Duration
	// Rate is each token's sustained requests per second and Burst how
	// many it may make at once; beyond, a request waits for the rate, at
	// most 10 s and with at most as many of the token's requests waiting
	// as the rate lets in in 10 s (at least MaxTokenSessions, at most
	// 1,000); beyond either: 429 with Retry-After. Defaults 50 and 100.
	Rate  float64
	Burst int
	// TokenConcurrency is how many requests of one token are served at
	// once (MCP POSTs, web UI requests but for its event stream); later
	// ones wait for a turn in arrival order, at most TokenQueue of them,
	// and one beyond those gets 429 with Retry-After. So one token's
	// costly requests take their turns on a share of the machine instead
	// of every core, and other agents' latency holds. A POST of
	// notifications only, of at most 16 KiB, takes none; a JSON-RPC
	// batch takes one per call, and one of more calls than
	// TokenConcurrency is refused. Defaults: half of GOMAXPROCS (at least
	// 1), and 16.
	TokenConcurrency int
	TokenQueue       int
	// TokenBytesRate is the request body bytes per second each token may
	// send, sustained, and TokenBytesBurst how many at once (MCP POSTs and
	// web UI requests). A request whose announced body (Content-Length)
	// the token's budget cannot pay for yet waits, holding its turn and
	// before its body is read, until it can; one that would wait more
	// than 10 s gets 429 with Retry-After. A body of no announced length
	// is read at the budget's pace. A request's cost grows with its body
	// (decoding a tool call allocates many times its size), so this
	// bounds what one token's big requests make the process spend after
	// the requests budget (Rate) has let them in. Defaults: 1 MiB a
	// second, and twice MaxBodyBytes; a negative or infinite rate turns
	// the budget off.
	TokenBytesRate  float64
	TokenBytesBurst int64
	// MaxBatch caps the messages of one JSON-RPC batch (a POST whose
	// body is a JSON array). Only a session of protocol version
	// 2025-03-26 or earlier may send one: the protocol has had no
	// batches since 2025-06-18, so any other batch is refused (JSON-RPC
	// -32600) whatever its Mcp-Protocol-Version header says, as is a
	// batch opening a session. A batch of n messages costs n requests of
	// Rate and Burst, paid before any of them runs (429 with Retry-After
	// when they cannot be); a longer one is refused whole (-32600). Its
	// replies stream back as events, one per call. Default 32, and
	// never more than Burst, which no longer batch could ever pay.
	MaxBatch int
	// Origins are browser origins allowed besides the server's own
	// ("https://app.example.com"). A request with any other Origin header
	// gets 403; a request without one (an MCP client, curl) is allowed.
	Origins []string
	// ServerIdle ends an agent's MCP server (and its resource watcher,
	// which polls the store) once it has had no session this long; the
	// next session makes a new one. Default 10 minutes.
	ServerIdle time.Duration
	// UISession is how long a UI login lasts (never past its token's
	// expiry). Default 12 hours.
	UISession time.Duration
	// Ready, when set, answers /readyz: 200 once it reports true (the
	// store's search caches prewarmed, say), 503 before, so that a load
	// balancer sends traffic to a restarted server once it serves at full
	// speed. It must answer at once. Without it /readyz answers 200
	// always, as /healthz does. Both answer 503 while the server shuts
	// down.
	Ready func() bool
	// SearchCache, when set, adds the store's search cache figures to
	// /metrics (engram_search_…).
	SearchCache func() search.CacheStats
	// SyncStore, when set, serves /sync: the automerge-repo WebSocket
	// protocol over the blocks of the token's agent (package syncrepo).
	// Without it /sync answers 404.
	SyncStore SyncStore
	// SyncMaxMessageBytes caps one /sync frame; a bigger one closes the
	// connection (1009). Default MaxBodyBytes.
	SyncMaxMessageBytes int64
	// SyncMaxDocuments caps the documents one /sync connection syncs.
	// Default 256.
	SyncMaxDocuments int
	// SyncMaxTokenConnections caps the open /sync connections of one
	// token: the caps of a connection (documents, refused changes held,
	// the private copy of a document a refused edit takes) would
	// otherwise multiply without bound with a client that keeps opening
	// connections. Beyond it: 503 with Retry-After. Default
	// MaxTokenSessions.
	SyncMaxTokenConnections int
	// MaxEdit is the largest edit one request may make: the automerge
	// operations the changes of one /sync message may apply
	// (syncrepo.Options.MaxMessageOps). MCPServer should give its tools
	// the same bound in characters (tools.Options.MaxEditChars), as engram
	// serve does. Default DefaultMaxEdit.
	MaxEdit int
	// SyncRate and SyncBurst are a /sync connection's frames per second
	// and burst; beyond, its frames wait. Defaults 200 and 400.
	SyncRate  float64
	SyncBurst int
	// SyncOpsRate and SyncOpsBurst are the automerge operations per second
	// (and at once) that the /sync peers of one token, across all its
	// connections, may have the server apply; a peer's changes are
	// measured before they are applied (each connection also refuses
	// changes too big for their block outright), and past the budget its
	// connection waits. SyncMaxTokenHeldBytes caps what the server holds
	// for one token's peers: refused changes, changes waiting for their
	// dependencies, private copies of documents; past it the document is
	// unavailable to the peer that passed it. Defaults
	// syncrepo.DefaultOpsPerSecond, DefaultOpsBurst and
	// DefaultMaxHeldBytes.
	SyncOpsRate           float64
	SyncOpsBurst          int
	SyncMaxTokenHeldBytes int64
	// SyncTokenCheck is how often an open /sync connection checks that its
	// token is still valid. Default 1 second.
	SyncTokenCheck time.Duration
	// AuthFailureBurst is how many failed authentications (an unknown,
	// expired or revoked token or login link, an unknown UI login cookie,
	// a wrong metrics token) one client address may make at once, and
	// AuthFailureRate how many per second it regains. Beyond, a request
	// from that address presenting a credential not seen valid in the
	// last ten minutes gets 429 with Retry-After before anything is looked
	// up. An IPv6 client counts by its /64. Defaults 20 and 0.2 (one
	// every 5 seconds).
	AuthFailureBurst int
	AuthFailureRate  float64
	// AuthFailureGlobalBurst and AuthFailureGlobalRate are the same budget
	// across all addresses: the ceiling on the lookups a guesser spread
	// over many addresses can cause. Defaults 200 and 20.
	AuthFailureGlobalBurst int
	AuthFailureGlobalRate  float64
	// TrustedProxies are the addresses or CIDR prefixes of reverse proxies
	// whose X-Forwarded-For header names the client, for the failed-login
	// limit. Without them the client is the connection's peer address and
	// X-Forwarded-For is ignored: any client can send one.
	//
	// The header is believed from every connection whose peer address is
	// listed, so the listener must be reachable from those addresses only
	// through the proxy: a client that connects directly from a listed
	// address (a local user, with TrustedProxies 127.0.0.1) can name any
	// address in the header, escaping the per-address limit (the global
	// one still holds it) and spending the count of an address it names,
	// which locks that address's tokens not yet seen valid out until the
	// count refills. Failures are counted by the client named together
	// with the proxy that named it, so a direct client on another address
	// of a listed prefix spends only its own count; one on the proxy's
	// own address cannot be told apart. List the proxy's exact address,
	// not a prefix, and do not let other clients reach the port (a
	// firewall, or a listener only the proxy can connect to).
	TrustedProxies []string
	// MetricsToken, when set, serves /metrics (Prometheus text format) to
	// requests with Authorization: Bearer MetricsToken; it must be one word
	// of at least 16 bytes. Without it /metrics answers 404.
	MetricsToken string
}

// Handler is the door: an http.Handler for /mcp, /sync, /healthz, /readyz, /metrics and the UI.
type Handler struct {
	opts Options
	log  *slog.Logger
	mcp  *mcp.StreamableHTTPHandler

	frameTimeout time.Duration // FrameReadTimeout, but in tests

	bodies bodyPieces // reads bodies and /sync frames of no announced length

	ctx    context.Context // ends at Shutdown: server watchers
	cancel context.CancelFunc

	mu       sync.Mutex
	servers  map[serverKey]*serverEntry
	uis      map[string]http.Handler
	uiLogins map[string]uiLogin            // cookie value → login
	limits   map[int64]*tokenbucket.Bucket // each token's requests
	// rateWaiting counts each token's requests waiting for its rate;
	// rateLast is the latest reservation of a token's (rateSeq numbers
	// them), the only one that may give its request back.
	rateWaiting map[int64]int
	rateLast    map[int64]uint64
	rateSeq     uint64
	bytes       map[int64]*tokenbucket.Bucket // each token's request body bytes
	turns       *turns                        // each token's requests served at once

	sessions   map[string]int64                  // MCP session id → the id of the token that opened it
	newSession sync.Mutex                        // guards opening and openingBy
	opening    int                               // new sessions being created, counted against MaxSessions
	openingBy  map[int64]int                     // the same by token id, counted against MaxTokenSessions
	syncStore  *stampShare                       // Options.SyncStore, stamps shared
	mirrors    *syncrepo.Mirrors                 // documents synced, one copy for all connections
	syncs      map[int64]context.CancelCauseFunc // open /sync connections
	syncsBy    map[int64]int                     // open /sync connections by token id
	budgets    map[int64]*tokenBudget            // what each token's /sync peers may spend
	syncConns  atomic.Int64                      // numbers them
	auth       *authLimit
	metrics    *metrics
	draining   atomic.Bool
	drain      context.Context // ends when Shutdown starts: requests waiting for a turn or bytes give up
	stopDrain  context.CancelFunc
	inflight   atomic.Int64 // requests being served, but for event streams (a WaitGroup may not Add while Shutdown waits)
}

type serverKey struct {
	agent    string
	readOnly bool
}

// serverEntry is an agent's MCP server and what ends it when it has had
// no session for Options.ServerIdle: its resource watcher polls the store
// for as long as it lives.
type serverEntry struct {
	srv       *mcp.Server
	cancel    context.CancelFunc
	idleSince time.Time // zero while it has sessions or was just asked for
}

// New returns the door over opts.
func New(opts *Options) (*Handler, error) {
	if opts == nil || opts.Tokens == nil || opts.MCPServer == nil {
		return nil, fmt.Errorf("%w: Tokens and MCPServer are required", ErrInvalidOptions)
	}
	o := *opts
	for _, r := range []struct {
		name string
		v    float64
	}{{"Rate", o.Rate}, {"TokenBytesRate", o.TokenBytesRate}, {"SyncRate", o.SyncRate}, {"SyncOpsRate", o.SyncOpsRate},
		{"AuthFailureRate", o.AuthFailureRate}, {"AuthFailureGlobalRate", o.AuthFailureGlobalRate}} {
		if math.IsNaN(r.v) {
			return nil, fmt.Errorf("%w: %s is NaN", ErrInvalidOptions, r.name)
		}
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 1000
	}
	if o.MaxTokenSessions <= 0 {
		o.MaxTokenSessions = max(1, o.MaxSessions/10)
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = 30 * time.Minute
	}
	if o.Rate <= 0 {
		o.Rate = 50
	}
	if o.Burst <= 0 {
		o.Burst = 100
	}
	if o.TokenConcurrency <= 0 {
		o.TokenConcurrency = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if o.TokenQueue <= 0 {
		o.TokenQueue = 16
	}
	if o.TokenBytesRate == 0 {
		o.TokenBytesRate = 1 << 20
	}
	if o.TokenBytesBurst <= 0 {
		o.TokenBytesBurst = 2 * min(o.MaxBodyBytes, math.MaxInt64/2)
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = defaultMaxBatch
	}
	if o.ServerIdle <= 0 {
		o.ServerIdle = 10 * time.Minute
	}
	if o.UISession <= 0 {
		o.UISession = 12 * time.Hour
	}
	if o.SyncMaxMessageBytes <= 0 {
		o.SyncMaxMessageBytes = o.MaxBodyBytes
	}
	if o.MaxEdit <= 0 {
		o.MaxEdit = DefaultMaxEdit
	}
	if o.SyncOpsRate <= 0 {
		o.SyncOpsRate = syncrepo.DefaultOpsPerSecond
	}
	if o.SyncOpsBurst <= 0 {
		o.SyncOpsBurst = syncrepo.DefaultOpsBurst
	}
	if o.SyncMaxTokenHeldBytes <= 0 {
		o.SyncMaxTokenHeldBytes = syncrepo.DefaultMaxHeldBytes
	}
	if o.SyncMaxTokenConnections <= 0 {
		o.SyncMaxTokenConnections = o.MaxTokenSessions
	}
	if o.SyncTokenCheck <= 0 {
		o.SyncTokenCheck = time.Second
	}
	if o.AuthFailureBurst <= 0 {
		o.AuthFailureBurst = 20
	}
	if o.AuthFailureRate <= 0 {
		o.AuthFailureRate = 0.2
	}
	if o.AuthFailureGlobalBurst <= 0 {
		o.AuthFailureGlobalBurst = 200
	}
	if o.AuthFailureGlobalRate <= 0 {
		o.AuthFailureGlobalRate = 20
	}
	for _, origin := range o.Origins {
		if u, err := url.Parse(origin); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("%w: origin %q is not scheme://host[:port]", ErrInvalidOptions, origin)
		}
	}
	if o.MetricsToken != "" && (len(o.MetricsToken) < minMetricsToken || strings.ContainsFunc(o.MetricsToken, unicode.IsSpace)) {
		return nil, fmt.Errorf("%w: MetricsToken must be one word of at least %d bytes", ErrInvalidOptions, minMetricsToken)
	}
	al, err := newAuthLimit(&o)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	drain, stopDrain := context.WithCancel(context.Background())
	h := &Handler{opts: o, log: log, ctx: ctx, cancel: cancel, drain: drain, stopDrain: stopDrain,
		servers: map[serverKey]*serverEntry{}, uis: map[string]http.Handler{}, uiLogins: map[string]uiLogin{}, limits: map[int64]*tokenbucket.Bucket{}, rateWaiting: map[int64]int{}, rateLast: map[int64]uint64{}, bytes: map[int64]*tokenbucket.Bucket{}, turns: newTurns(o.TokenConcurrency, o.TokenQueue),
		sessions: map[string]int64{}, openingBy: map[int64]int{}, syncs: map[int64]context.CancelCauseFunc{}, syncsBy: map[int64]int{}, budgets: map[int64]*tokenBudget{},
		auth: al, metrics: newMetrics(), frameTimeout: FrameReadTimeout}
	h.mcp = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
			return rec.server
		}
		return nil
	}, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: o.MaxBodyBytes, SessionTimeout: o.SessionIdle, Logger: log})
	if o.SyncStore != nil {
		// Half the sessions' poll period: a change is seen at most that
		// much later than by a session's own query.
		h.syncStore = &stampShare{src: storeStamps{o.SyncStore}, every: 50 * time.Millisecond, memo: map[string]*stampRead{}}
		h.mirrors = syncrepo.NewMirrors()
	}
	go h.sweep(time.Second)
	return h, nil
}

// ServeHTTP routes a request after the checks every path shares: draining,
// the Host rule on a loopback listener, the Origin rule, the access log.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	lw := &logWriter{ResponseWriter: w, status: http.StatusOK}
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		lw.body = &seenBody{ReadCloser: r.Body}
		r.Body = lw.body
	}
	rec := &accessRecord{}
	r = r.WithContext(context.WithValue(r.Context(), recKey{}, rec))
	defer func() { h.logRequest(r, lw, rec, start) }()
	// A GET event stream (an MCP session's, the web UI page's) or a /sync
	// WebSocket lasts as long as its session, page or peer: shutdown closes those rather than
	// waiting for them, so such a request stops counting as in flight
	// once its response turns out to be a stream.
	if !(r.Method == http.MethodGet && (r.URL.Path == "/mcp" || r.URL.Path == "/sync")) {
		h.inflight.Add(1)
		var once sync.Once
		done := func() { once.Do(func() { h.inflight.Add(-1) }) }
		defer done()
		if r.Method == http.MethodGet {
			lw.onStream = done
		}
	}
	if h.draining.Load() {
		lw.Header().Set("Connection", "close")
		lw.Header().Set("Retry-After", "1")
		http.Error(lw, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if !hostAllowed(r) {
		http.Error(lw, "403 forbidden: Host "+strconv.Quote(r.Host)+" is not a loopback name or address, and this server listens on loopback (a DNS-rebound page?); use localhost or 127.0.0.1", http.StatusForbidden)
		return
	}
	if !h.originAllowed(r) {
		http.Error(lw, "403 forbidden: cross-origin request (Origin "+strconv.Quote(r.Header.Get("Origin"))+" is not this server)", http.StatusForbidden)
		return
	}
	switch {
	case r.URL.Path == "/healthz":
		lw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		lw.Header().Set("Cache-Control", "no-store")
		io.WriteString(lw, "ok\n")
	case r.URL.Path == "/readyz":
		lw.Header().Set("Cache-Control", "no-store")
		if h.opts.Ready != nil && !h.opts.Ready() {
			lw.Header().Set("Retry-After", "1")
			http.Error(lw, "not ready: prewarming", http.StatusServiceUnavailable)
			return
		}
		lw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(lw, "ready\n")
	case r.URL.Path == "/mcp":
		h.serveMCP(lw, r)
	case r.URL.Path == "/sync":
		h.serveSync(lw, r)
	case r.URL.Path == "/metrics":
		h.serveMetrics(lw, r)
	default:
		h.serveUI(lw, r)
	}
}

// serveMCP authenticates the bearer token and hands the request to the
// SDK's Streamable HTTP handler with the token's agent's server.
func (h *Handler) serveMCP(w http.ResponseWriter, r *http.Request) {
	// Set before the SDK's bearer middleware, which adds WWW-Authenticate
	// only with OAuth metadata; deleted again once the token is accepted.
	w.Header().Set("WWW-Authenticate", `Bearer realm="engram"`)
	if !h.admit(w, r, bearerToken(r)) {
		return
	}
	auth.RequireBearerToken(h.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Del("WWW-Authenticate")
			rec := r.Context().Value(recKey{}).(*accessRecord)
			// A request past a cap (sessions) is refused only once its
			// rate lets it in: at once while the token's burst lasts, and
			// paced to its rate after, so that a client retrying each
			// refusal at once cannot make the door refuse it as fast as
			// it asks.
			ok, waited := h.allow(w, r, rec.token.ID)
			if !ok {
				return
			}
			if waited && !h.stillValid(w, r, bearerToken(r)) {
				return
			}
			if r.Method == http.MethodPost {
				done, ok := h.admitPost(w, r, rec)
				if !ok {
					return
				}
				defer done()
			}
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
				// A new session: open ones and those being opened count
				// against the cap. The count is reserved rather than the
				// creation locked, so a slow request body holds up no one.
				tok := rec.token.ID
				h.newSession.Lock()
				if msg, full := h.sessionsFull(tok); full {
					h.newSession.Unlock()
					w.Header().Set("Retry-After", "5")
					http.Error(w, msg, http.StatusServiceUnavailable)
					return
				}
				h.opening++
				h.openingBy[tok]++
				h.newSession.Unlock()
				defer func() {
					h.newSession.Lock()
					h.opening--
					if h.openingBy[tok]--; h.openingBy[tok] == 0 {
						delete(h.openingBy, tok)
					}
					h.newSession.Unlock()
				}()
				h.mcp.ServeHTTP(w, r)
				if id := w.Header().Get("Mcp-Session-Id"); id != "" {
					h.mu.Lock()
					h.sessions[id] = rec.token.ID
					h.mu.Unlock()
				}
				return
			}
			h.mcp.ServeHTTP(w, r)
		})).ServeHTTP(w, r)
}

// sessionsFull reports whether a new MCP session of token tok is past
// MaxSessions or MaxTokenSessions, counting open sessions and those being
// opened, and the refusal's message if so. Caller holds h.newSession.
func (h *Handler) sessionsFull(tok int64) (string, bool) {
	n := h.sessionCount() + h.opening
	mine := h.tokenSessionCount(tok) + h.openingBy[tok]
	switch {
	case mine >= h.opts.MaxTokenSessions:
		return fmt.Sprintf("503 too many sessions for this token (%d open); close its idle sessions (DELETE /mcp) or retry later", mine), true
	case n >= h.opts.MaxSessions:
		return fmt.Sprintf("503 too many sessions (%d open); close idle sessions or retry later", n), true
	}
	return "", false
}

// earlyBodyBytes is the largest announced body a POST /mcp reads before
// it waits for its token's turn. Read, a body costs no more than the
// request's rate already bounds, and it shows what the request is: a
// request of notifications only (notifications/cancelled among them)
// takes no turn, so it cannot wait behind the call it cancels; and over
// HTTP/1.1 the server notices that a client went away only once the body
// has been read, so a waiter whose client gave up leaves the line and its
// call never runs. A longer body is read only after its turn and its
// bytes are paid for.
const earlyBodyBytes = 16 << 10

// admitPost lets an MCP POST go on to the SDK: its body within the cap,
// its turns taken (one, one per call of a batch, none for a body of
// notifications and responses only), its bytes paid for, its body read
// (then in r.Body) and a batch admitted. It returns what ends the turns,
// or answers and reports false.
func (h *Handler) admitPost(w http.ResponseWriter, r *http.Request, rec *accessRecord) (func(), bool) {
	if h.refuseOverCap(w, r) {
		return nil, false
	}
	id := rec.token.ID
	var body []byte
	var msg rpcMessage // body's, when it is one message
	msgOK := false
	early := r.ContentLength >= 0 && r.ContentLength <= earlyBodyBytes
	turns := 1
	if early {
		// The read counts against the token's queue: a client that
		// sends its bodies slowly holds no more of them than waiters.
		reading, err := h.turns.read(id)
		if err != nil {
			h.refuseBusy(w, r, id)
			return nil, false
		}
		var ok bool
		body, ok = h.readBody(w, r)
		reading()
		if !ok {
			return nil, false
		}
		if isBatch(body) {
			if turns, ok = h.admitBatch(w, r, rec, body); !ok {
				return nil, false
			}
		} else if msg, msgOK = readMessage(body); msgOK && !msg.isRequest() {
			turns = 0
		}
	}
	done := func() {}
	var turnWaited bool
	if turns > 0 {
		var ok bool
		if done, turnWaited, ok = h.takeTurns(w, r, id, turns); !ok {
			return nil, false
		}
	}
	bytesWaited, ok := h.payBytes(w, r, id, turns > 0)
	if !ok || (turnWaited || bytesWaited) && !h.stillValid(w, r, bearerToken(r)) {
		// A token revoked while its request waited runs nothing more.
		done()
		return nil, false
	}
	if !early {
		// The wait for a turn and for bytes ran on the server's read
		// deadline, which is meant for the body alone.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(BodyReadTimeout))
		var ok bool
		if body, ok = h.readBody(w, r); !ok {
			done()
			return nil, false
		}
		if !isBatch(body) {
			msg, msgOK = readMessage(body)
		} else {
			n, ok := h.admitBatch(w, r, rec, body)
			if !ok {
				done()
				return nil, false
			}
			if n > 1 && h.opts.TokenConcurrency > 1 {
				// Its calls run side by side: a turn for each, taken
				// again at the back of the line.
				done()
				var waited bool
				if done, waited, ok = h.takeTurns(w, r, id, n); !ok {
					return nil, false
				}
				if waited && !h.stillValid(w, r, bearerToken(r)) {
					done()
					return nil, false
				}
			}
		}
	}
	if msgOK && h.answerMissingParams(w, msg) {
		done()
		return nil, false
	}
	return done, true
}

// refuseOverCap answers 413, and reports true, when r's body announces
// more than MaxBodyBytes: refused unread, before any turn or byte budget.
func (h *Handler) refuseOverCap(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength <= h.opts.MaxBodyBytes {
		return false
	}
	http.Error(w, fmt.Sprintf("request body exceeds %d bytes", h.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge)
	return true
}

// BodyReadTimeout is how long a request body may take to arrive once the
// door reads it; engram serve's http.Server has it as its ReadTimeout.
// A POST that waited for its turn is given it again from the end of its
// wait.
const BodyReadTimeout = time.Minute

// rpcMessage is what the door reads of one JSON-RPC message. Its keys
// match exactly, as the go-sdk's decoder matches them ("ID" is not "id",
// where encoding/json would take either), so the door never judges a
// message other than the SDK will run it; its params are read only for
// whether they were given, without copying them (they may be most of a
// 4 MiB body).
type rpcMessage struct {
	jsonrpc string
	id      json.RawMessage
	method  *string
	params  bool // given, and not null
}

// readMessage reads body as one JSON-RPC message: a JSON object, with
// nothing after it; duplicate keys keep the last value. It reports false
// for anything else.
func readMessage(body []byte) (rpcMessage, bool) {
	var m rpcMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return m, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return m, false
		}
		switch tok {
		case "jsonrpc":
			err = dec.Decode(&m.jsonrpc)
		case "id":
			m.id = nil
			err = dec.Decode(&m.id)
		case "method":
			m.method = nil
			err = dec.Decode(&m.method)
		default:
			var p paramsPresence // skipped, not copied
			err = dec.Decode(&p)
			if tok == "params" {
				m.params = p.given
			}
		}
		if err != nil {
			return m, false
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return m, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, false
	}
	return m, true
}

// isRequest reports whether m is a request (a method and an id), which
// the SDK answers and may run at length, rather than a notification or a
// response.
func (m rpcMessage) isRequest() bool {
	return m.method != nil && len(m.id) > 0 && string(m.id) != "null"
}

// needsParams are the methods a client must send params with.
var needsParams = []string{"initialize", "tools/call", "resources/read", "resources/subscribe", "resources/unsubscribe",
	"prompts/get", "completion/complete", "logging/setLevel", "subscriptions/listen"}

// readBody reads a POST's body, at most MaxBodyBytes (413 beyond), and
// leaves it in r for the SDK. It reports false when it has answered.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	// Read into a buffer of the announced size (the caller refused one
	// past the cap): a big body is then one allocation, not a doubling
	// series of them (a body past earlyBodyBytes is read with its token's
	// turn held, so only that many are read at once). A body of no
	// announced length is read in pooled pieces (bodyPieces).
	var (
		body []byte
		err  error
	)
	limited := http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	if n := r.ContentLength; n > 0 {
		var buf bytes.Buffer
		buf.Grow(int(n) + bytes.MinRead)
		_, err = buf.ReadFrom(limited)
		body = buf.Bytes()
	} else {
		body, err = h.bodies.readAll(limited)
	}
	if err != nil {
		var mbe *http.MaxBytesError
		var refused *bytesBudgetError
		switch {
		case errors.As(err, &mbe):
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		case errors.As(err, &refused):
			h.refuseBytes(w, r, refused.id, refused.wait)
		case errors.Is(err, errBytesWaitEnded):
			if h.drain.Err() != nil {
				w.Header().Set("Connection", "close")
			}
			http.Error(w, "503 "+err.Error(), http.StatusServiceUnavailable)
		default:
			http.Error(w, "failed to read the request body", http.StatusBadRequest)
		}
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// answerMissingParams answers a call without params (or with null params)
// to a method that needs them as engram mcp does over stdio: a JSON-RPC
// error -32602 under the call's id. The SDK answers the first with a
// plain-text HTTP 400, which leaves the call unanswered, and the second
// with -32600. It reports whether it answered.
func (h *Handler) answerMissingParams(w http.ResponseWriter, msg rpcMessage) bool {
	if msg.jsonrpc != "2.0" || !msg.isRequest() || !slices.Contains(needsParams, *msg.method) || msg.params {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.id, "error": map[string]any{
		"code": jsonrpc.CodeInvalidParams, "message": `invalid params: this method needs "params" (an object), none or null was sent`}})
	return true
}

// paramsPresence records whether a message's params were given (and not
// null) without copying them: they may be most of a 4 MiB body.
type paramsPresence struct{ given bool }

func (p *paramsPresence) UnmarshalJSON(b []byte) error {
	p.given = string(b) != "null"
	return nil
}

// verify is the SDK's TokenVerifier: the store's token, which must be an
// agent's, and its agent's server in the request's context. The TokenInfo
// UserID is the token's id, so the SDK refuses (403) a session to any
// other token, even one of the same agent.
func (h *Handler) verify(ctx context.Context, secret string, r *http.Request) (*auth.TokenInfo, error) {
	t, err := h.opts.Tokens.Verify(ctx, secret)
	rec, _ := ctx.Value(recKey{}).(*accessRecord)
	switch {
	case errors.Is(err, accesstoken.ErrInvalid), errors.Is(err, accesstoken.ErrExpired), errors.Is(err, accesstoken.ErrRevoked):
		h.authFailed(r, secret, err.Error())
		return nil, fmt.Errorf("%w: the bearer token is unknown, expired or revoked", auth.ErrInvalidToken)
	case err != nil:
		h.log.Error("serve: verify token", "err", err)
		return nil, errors.New("internal error checking the token")
	case t.Agent == "":
		if rec != nil {
			rec.refused = fmt.Sprintf("token %d is a human's (web UI), not an agent's", t.ID)
		}
		return nil, fmt.Errorf("%w: a human's token opens the web UI, not /mcp", auth.ErrInvalidToken)
	}
	h.authSucceeded(r, secret)
	if rec != nil {
		rec.token = &t
	}
	srv, err := h.server(serverKey{agent: t.Agent, readOnly: t.ReadOnly})
	if err != nil {
		h.log.Error("serve: make MCP server", "agent", t.Agent, "err", err)
		return nil, errors.New("internal error opening the agent's memory")
	}
	if rec != nil {
		rec.server = srv
	}
	return &auth.TokenInfo{UserID: "token:" + strconv.FormatInt(t.ID, 10), Expiration: t.ExpiresAt,
		Extra: map[string]any{"agent": t.Agent, "token_name": t.Name}}, nil
}

// server returns key's MCP server, made on first use.
func (h *Handler) server(key serverKey) (*mcp.Server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.servers[key]; ok {
		e.idleSince = time.Time{}
		return e.srv, nil
	}
	ctx, cancel := context.WithCancel(h.ctx)
	s, err := h.opts.MCPServer(ctx, key.agent, key.readOnly)
	if err != nil {
		cancel()
		return nil, err
	}
	s.AddReceivingMiddleware(mcpguard.Middleware, initializeOnce, h.metrics.timeTools)
	if key.readOnly {
		s.AddReceivingMiddleware(onlyTools(h.opts.ReadTools))
	}
	h.servers[key] = &serverEntry{srv: s, cancel: cancel}
	return s, nil
}

const alreadyInitialized = "invalid request: the session is already initialized; start a new session (initialize without Mcp-Session-Id) instead"

// initializeOnce answers a second initialize on a session with JSON-RPC
// -32600 Invalid Request under the call's id, as the TypeScript SDK and
// engram mcp over stdio do: the go-sdk returns a plain error, which its
// Streamable HTTP transport sends with code 0 (no code at all).
func initializeOnce(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: alreadyInitialized}
			}
			res, err := next(ctx, method, req)
			// Two initializes racing on one session both pass the check
			// above; the SDK refuses the loser with its plain error.
			var we *jsonrpc.Error
			if err != nil && !errors.As(err, &we) {
				err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: alreadyInitialized + " (" + err.Error() + ")"}
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// onlyTools hides every tool but allowed: tools/list leaves the others
// out and tools/call answers them as unknown, whatever tools the server
// has (one added later stays hidden until it is allowed).
func onlyTools(allowed []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); !ok || !slices.Contains(allowed, p.Name) {
					name := ""
					if ok {
						name = p.Name
					}
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q (this token is read-only)", name)}
				}
			}
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				kept := lr.Tools[:0:0]
				for _, t := range lr.Tools {
					if slices.Contains(allowed, t.Name) {
						kept = append(kept, t)
					}
				}
				lr.Tools = kept
			}
			return res, err
		}
	}
}

// sweep closes, every period until shutdown, the MCP sessions whose token
// was revoked or expired since they opened, so a revocation also ends the
// event streams that no new request would check. Requests already check
// the token each time.
func (h *Handler) sweep(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.closeRevoked(h.ctx)
		h.endRevokedLogins(h.ctx, time.Now())
		h.dropIdleServers(time.Now())
		h.auth.prune(time.Now())
	}
}

func (h *Handler) closeRevoked(ctx context.Context) {
	live := map[string]*mcp.ServerSession{}
	servers := h.allServers()
	for _, s := range servers {
		for ss := range s.Sessions() {
			live[ss.ID()] = ss
		}
	}
	h.mu.Lock()
	byToken := map[int64][]string{}
	for id, tok := range h.sessions {
		if live[id] == nil {
			delete(h.sessions, id) // closed already
			continue
		}
		byToken[tok] = append(byToken[tok], id)
	}
	h.mu.Unlock()
	now := time.Now()
	for tok, ids := range byToken {
		t, err := h.opts.Tokens.Get(ctx, tok)
		if err != nil && !errors.Is(err, memory.ErrNotFound) {
			continue // the store is busy or down: the next sweep decides
		}
		if err == nil && tokenValid(t, now) {
			continue
		}
		for _, id := range ids {
			h.log.Info("serve: closing the session of a revoked or expired token", "token_id", tok, "session", short(id))
			live[id].Close()
		}
	}
}

// tokenValid reports whether t, as the store read it, is neither revoked
// nor expired at now: what keeps an MCP session, a UI login or a /sync
// connection open.
func tokenValid(t accesstoken.Token, now time.Time) bool {
	return t.RevokedAt.IsZero() && (t.ExpiresAt.IsZero() || now.Before(t.ExpiresAt))
}

// allServers lists the MCP servers made so far.
func (h *Handler) allServers() []*mcp.Server {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*mcp.Server, 0, len(h.servers))
	for _, e := range h.servers {
		out = append(out, e.srv)
	}
	return out
}

// dropIdleServers ends the servers that have had no session for
// ServerIdle. A server is reset to busy by every request for it (server),
// so one is never dropped between a request's lookup and the session it
// opens.
func (h *Handler) dropIdleServers(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, e := range h.servers {
		busy := false
		for range e.srv.Sessions() {
			busy = true
			break
		}
		switch {
		case busy:
			e.idleSince = time.Time{}
		case e.idleSince.IsZero():
			e.idleSince = now
		case now.Sub(e.idleSince) >= h.opts.ServerIdle:
			e.cancel()
			delete(h.servers, key)
		}
	}
}

// Servers is the number of agents' MCP servers alive (for tests and
// diagnostics).
func (h *Handler) Servers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// sessionCount is the number of open MCP sessions.
func (h *Handler) sessionCount() int {
	servers := h.allServers()
	n := 0
	for _, s := range servers {
		for range s.Sessions() {
			n++
		}
	}
	return n
}

// tokenSessionCount is the number of open MCP sessions of token id.
func (h *Handler) tokenSessionCount(id int64) int {
	live := map[string]bool{}
	for _, s := range h.allServers() {
		for ss := range s.Sessions() {
			live[ss.ID()] = true
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for sid, tok := range h.sessions {
		if tok == id && live[sid] {
			n++
		}
	}
	return n
}

// Sessions is the number of MCP sessions open or being opened: what the
// cap counts.
func (h *Handler) Sessions() int {
	h.newSession.Lock()
	defer h.newSession.Unlock()
	return h.sessionCount() + h.opening
}

// hostAllowed applies the MCP rule against DNS rebinding, as the SDK does
// for /mcp, to every path: a request that came in on a loopback address
// must name a loopback host ("localhost" or a loopback IP, any port). A
// page of another site whose name was rebound to 127.0.0.1 sends that
// name. A listener on another address serves any Host.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	return isLoopback(r.Host)
}

// isLoopback reports whether a host or host:port is "localhost" or a
// loopback IP (the SDK's rule).
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// originAllowed applies the MCP rule against DNS rebinding and cross-site
// requests: no Origin header (a program, not a browser page) or the
// server's own origin or a configured one.
func (h *Handler) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, o := range h.opts.Origins {
		if strings.EqualFold(strings.TrimRight(o, "/"), u.Scheme+"://"+u.Host) {
			return true
		}
	}
	return false
}

// allow takes one request from token id's bucket. A request the bucket
// cannot let in yet waits for its request, as one short of bytes waits
// for them (payBytes): refused at once, a client that retries at once
// makes the server read and refuse a request many times a second, and
// one token's flood of refusals took the CPU other agents' calls need;
// waiting, the client is paced to its rate at the cost of a connection.
// The request is taken as the wait begins (later ones queue behind it)
// and given back if the wait ends early and nothing was taken after it.
// At most rateWaiters of a token's requests wait, none longer than
// maxRateWait: beyond either, 429 with Retry-After. A POST whose body is
// small (earlyBodyBytes) is read as its wait begins, so that a client
// that goes while it waits is noticed (net/http watches the connection
// only once the body is read): it gets 503 and its call never runs, as
// does a request whose server starts shutting down. It reports whether
// the request may go on, and whether it waited (its token was checked
// before the wait; a caller checks it again).
func (h *Handler) allow(w http.ResponseWriter, r *http.Request, id int64) (ok, waited bool) {
	return h.takeRate(w, r, id, 1, "429 too many requests for this token; retry after the Retry-After seconds")
}

// takeRate takes n requests from token id's bucket (see allow), or
// answers refusal as the 429's message.
func (h *Handler) takeRate(w http.ResponseWriter, r *http.Request, id int64, n float64, refusal string) (ok, waited bool) {
	rate, burst := h.opts.Rate, float64(h.opts.Burst)
	h.mu.Lock()
	now := time.Now()
	b, found := h.limits[id]
	if !found {
		b = tokenbucket.Full(burst, now)
		h.limits[id] = b
	}
	wait := b.WaitFor(now, n, rate, burst)
	waiting := wait > 0 && wait <= maxRateWait && h.rateWaiting[id] < h.rateWaiters()
	var mine uint64
	if wait <= 0 || waiting {
		b.ChargeN(now, n, rate, burst)
	}
	if waiting {
		h.rateWaiting[id]++
		h.rateSeq++
		mine = h.rateSeq
		h.rateLast[id] = mine
	}
	h.mu.Unlock()
	if wait <= 0 {
		return true, false
	}
	if !waiting {
		h.metrics.rateLimit(r.URL.Path)
		w.Header().Set("Retry-After", retryAfter(min(wait, time.Hour)))
		http.Error(w, refusal, http.StatusTooManyRequests)
		return false, false
	}
	h.metrics.rateWaited(r.URL.Path)
	start := time.Now()
	msg, ok, answered := "", true, false
	if r.Method == http.MethodPost && r.ContentLength > 0 && r.ContentLength <= earlyBodyBytes {
		_, ok = h.readBody(w, r) // answers a body that fails to arrive
		answered = !ok
	}
	if ok {
		msg, ok = h.waitStart(r, wait-time.Since(start), "its token's rate")
	}
	h.mu.Lock()
	if h.rateWaiting[id]--; h.rateWaiting[id] <= 0 {
		delete(h.rateWaiting, id)
	}
	if h.rateLast[id] == mine {
		if !ok {
			// Given back only by the token's latest reservation: one
			// before it would let a newcomer use the slot a later
			// waiter's deadline was counted after, so more would pass
			// than the rate.
			h.limits[id].ChargeN(time.Now(), -n, rate, burst)
		}
		delete(h.rateLast, id)
	}
	h.mu.Unlock()
	if !ok && !answered {
		if h.drain.Err() != nil {
			w.Header().Set("Connection", "close")
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
	}
	return ok, true
}

// rateWaiters is how many of one token's requests may wait for its rate
// at once: as many as its rate lets in over maxRateWait (a wait longer
// than that is refused anyway), at least MaxTokenSessions, at most
// maxRateWaiters. Each costs a goroutine, its connection and at most
// earlyBodyBytes of body (about 26 KiB besides the body, measured).
func (h *Handler) rateWaiters() int {
	n := h.opts.Rate * maxRateWait.Seconds()
	if !(n < maxRateWaiters) { // NaN or infinite included
		n = maxRateWaiters
	}
	return max(h.opts.MaxTokenSessions, int(math.Ceil(n)))
}

// maxRateWait is the longest a request waits for its token's rate; one
// that would wait longer gets 429 with Retry-After. maxRateWaiters caps
// rateWaiters.
const (
	maxRateWait    = 10 * time.Second
	maxRateWaiters = 1000
)

// stillValid checks again, after a wait for its rate, the bearer token
// r was let in with: one revoked or expired meanwhile gets 401, as it
// would have had it arrived then.
func (h *Handler) stillValid(w http.ResponseWriter, r *http.Request, secret string) bool {
	_, err := h.opts.Tokens.Verify(r.Context(), secret)
	if !errors.Is(err, accesstoken.ErrInvalid) && !errors.Is(err, accesstoken.ErrExpired) && !errors.Is(err, accesstoken.ErrRevoked) {
		return true // valid, or unknown after being valid before the wait
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="engram", error="invalid_token"`)
	http.Error(w, "401 the bearer token is unknown, expired or revoked", http.StatusUnauthorized)
	return false
}

// takeTurns waits for n turns of token id (Options.TokenConcurrency; n
// is capped at it) and returns what ends them and whether it waited, or
// answers (429 with Retry-After when the token's queue is full) and
// reports false. A caller whose request waited checks its credential
// again.
func (h *Handler) takeTurns(w http.ResponseWriter, r *http.Request, id int64, n int) (done func(), waited, ok bool) {
	// A request waiting for its turn gives up when the server shuts
	// down: it has not started, and the drain would wait for it.
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	defer context.AfterFunc(h.drain, stop)()
	done, err := h.turns.take(ctx, id, n, func() { waited = true; h.metrics.turnWaited(r.URL.Path) })
	switch {
	case errors.Is(err, errTokenBusy):
		h.refuseBusy(w, r, id)
		return nil, false, false
	case err != nil && h.drain.Err() != nil:
		w.Header().Set("Connection", "close")
		http.Error(w, "503 server shutting down", http.StatusServiceUnavailable)
		return nil, false, false
	case err != nil:
		// The client went away while it waited.
		http.Error(w, "503 request ended while waiting for its turn", http.StatusServiceUnavailable)
		return nil, false, false
	}
	return done, waited, true
}

// refuseBusy answers 429: token id has TokenQueue requests waiting (or
// reading before they wait) already.
func (h *Handler) refuseBusy(w http.ResponseWriter, r *http.Request, id int64) {
	h.metrics.turnRefused(r.URL.Path)
	if rec, ok := r.Context().Value(recKey{}).(*accessRecord); ok {
		rec.refused = fmt.Sprintf("token %d has %d requests running and %d waiting", id, h.opts.TokenConcurrency, h.opts.TokenQueue)
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, fmt.Sprintf("429 too many requests of this token at once (%d running, %d waiting); retry after the Retry-After seconds", h.opts.TokenConcurrency, h.opts.TokenQueue), http.StatusTooManyRequests)
}

// Shutdown drains the door: new requests get 503, requests in flight
// finish (until ctx ends), then every MCP session is closed (ending its
// event stream) and every UI closed. Call it before http.Server.Shutdown,
// which then finds no request that never ends.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.draining.Store(true)
	h.stopDrain()
	var err error
	for h.inflight.Load() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("serve: shutdown: %d requests still in flight: %w", h.inflight.Load(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	servers := h.allServers()
	h.mu.Lock()
	uis := make([]http.Handler, 0, len(h.uis))
	for _, u := range h.uis {
		uis = append(uis, u)
	}
	h.mu.Unlock()
	for _, s := range servers {
		for ss := range s.Sessions() {
			ss.Close()
		}
	}
	for _, u := range uis {
		if c, ok := u.(io.Closer); ok {
			c.Close()
		}
	}
	h.mu.Lock()
	for _, cancel := range h.syncs {
		cancel(errShutdown)
	}
	h.mu.Unlock()
	h.cancel()
	return err
}

// Listening checks the address serve is about to use and returns a
// warning for a people-facing log when it is reachable from other
// machines without TLS, else "".
func Listening(addr net.Addr, tls bool) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() || tls {
		return ""
	}
	return fmt.Sprintf("listening on %s without TLS: tokens and memory cross the network in clear text; use --tls-cert/--tls-key or a TLS reverse proxy", tcp)
}
