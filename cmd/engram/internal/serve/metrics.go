package serve

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engram-go/engram/search"
)

// latencyBuckets are the upper bounds, in seconds, of the tool call
// histogram: 1 ms (a cached read) to 10 s (a search waiting on an
// embedder).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// metrics are the door's counters. Labels take only values the door
// chooses (doors, status codes it writes, tool names its servers have),
// never a token, agent or client address: a scrape stays small and tells
// nothing about who uses the store.
type metrics struct {
	mu           sync.Mutex
	requests     map[[2]string]uint64 // door, status
	authFailures map[string]uint64    // door
	authLimited  map[string]uint64    // address or global
	rateLimited  map[string]uint64    // door
	rateWaits    map[string]uint64    // door
	turnWaits    map[string]uint64    // door
	turnRefusals map[string]uint64    // door
	bytesWaits   map[string]uint64    // door
	bytesLimited map[string]uint64    // door
	tools        map[string]*histogram
}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; one more for +Inf
	sum    float64
}

func newMetrics() *metrics {
	return &metrics{requests: map[[2]string]uint64{}, authFailures: map[string]uint64{}, authLimited: map[string]uint64{},
		rateLimited: map[string]uint64{}, rateWaits: map[string]uint64{}, turnWaits: map[string]uint64{}, turnRefusals: map[string]uint64{}, bytesWaits: map[string]uint64{}, bytesLimited: map[string]uint64{}, tools: map[string]*histogram{}}
}

// door names the part of the server a path belongs to.
func door(path string) string {
	switch {
	case path == "/mcp":
		return "mcp"
	case path == "/sync":
		return "sync"
	case path == "/healthz":
		return "healthz"
	case path == "/readyz":
		return "readyz"
	case path == "/metrics":
		return "metrics"
	case path == "/" || path == UIPath || strings.HasPrefix(path, UIPath+"/"):
		return "ui"
	}
	return "other"
}

func (m *metrics) request(path string, status int) {
	m.mu.Lock()
	m.requests[[2]string{door(path), strconv.Itoa(status)}]++
	m.mu.Unlock()
}

// inc counts one more of key in c, one of the counters by a label.
func (m *metrics) inc(c map[string]uint64, key string) {
	m.mu.Lock()
	c[key]++
	m.mu.Unlock()
}

func (m *metrics) authFailure(path string)  { m.inc(m.authFailures, door(path)) }
func (m *metrics) limited(scope string)     { m.inc(m.authLimited, scope) }
func (m *metrics) rateLimit(path string)    { m.inc(m.rateLimited, door(path)) }
func (m *metrics) rateWaited(path string)   { m.inc(m.rateWaits, door(path)) }
func (m *metrics) turnWaited(path string)   { m.inc(m.turnWaits, door(path)) }
func (m *metrics) turnRefused(path string)  { m.inc(m.turnRefusals, door(path)) }
func (m *metrics) bytesWaited(path string)  { m.inc(m.bytesWaits, door(path)) }
func (m *metrics) bytesRefused(path string) { m.inc(m.bytesLimited, door(path)) }

func (m *metrics) observe(tool string, d time.Duration) {
	s := d.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, s)
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.tools[tool]
	if !ok {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.tools[tool] = h
	}
	h.counts[i]++
	h.sum += s
}

// timeTools records each tools/call the server answers (a result, an
// isError one included) in the latency histogram of its tool. A call the
// server refuses (an unknown tool) is left out, so a client cannot add
// label values.
func (m *metrics) timeTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		start := time.Now()
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && err == nil {
			m.observe(p.Name, time.Since(start))
		}
		return res, err
	}
}

// gauges are the door's levels at a scrape.
type gauges struct {
	sessions, syncs, servers, logins, limitedAddrs int
	cache                                          *search.CacheStats // Options.SearchCache's, when set
}

// write renders the Prometheus text exposition format (version 0.0.4).
func (m *metrics) write(w io.Writer, g gauges) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	family := func(name, typ, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}
	sample := func(name string, v float64, labels ...string) {
		b.WriteString(name)
		if len(labels) > 0 {
			b.WriteByte('{')
			for i := 0; i < len(labels); i += 2 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
			}
			b.WriteByte('}')
		}
		b.WriteByte(' ')
		b.WriteString(formatFloat(v))
		b.WriteByte('\n')
	}
	family("engram_serve_requests_total", "counter", "HTTP requests answered, by door (mcp, ui, sync, healthz, readyz, metrics, other) and status code.")
	for _, k := range sortedKeys(m.requests, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) }) {
		sample("engram_serve_requests_total", float64(m.requests[k]), "door", k[0], "code", k[1])
	}
	// counter writes a counter of one label, a sample per value.
	counter := func(name, help, label string, c map[string]uint64) {
		family(name, "counter", help)
		for _, k := range sortedKeys(c, strings.Compare) {
			sample(name, float64(c[k]), label, k)
		}
	}
	counter("engram_serve_auth_failures_total", "Refused credentials (unknown, expired or revoked token or login link, unknown login cookie, wrong metrics token), by door.", "door", m.authFailures)
	counter("engram_serve_auth_limited_total", "Requests answered 429 by the failed-login limit before any lookup, by the limit hit (address or global).", "scope", m.authLimited)
	counter("engram_serve_rate_limited_total", "Requests answered 429 by a token's rate limit (MaxTokenSessions of its requests waiting for it already, or a wait past 10 s), by door.", "door", m.rateLimited)
	counter("engram_serve_rate_waits_total", "Requests that waited for their token's rate to let them in, by door.", "door", m.rateWaits)
	counter("engram_serve_turn_waits_total", "Requests that waited for a turn of their token (TokenConcurrency of its requests were being served), by door.", "door", m.turnWaits)
	counter("engram_serve_turn_refused_total", "Requests answered 429 because their token's queue for turns was full, by door.", "door", m.turnRefusals)
	counter("engram_serve_bytes_waits_total", "Requests that waited for their token's budget of request bytes to pay for their bodies, by door.", "door", m.bytesWaits)
	counter("engram_serve_bytes_limited_total", "Requests answered 429 because their token's budget of request bytes could not pay for their bodies within the longest wait, by door.", "door", m.bytesLimited)
	family("engram_serve_mcp_sessions", "gauge", "Open MCP sessions, and sessions being opened.")
	sample("engram_serve_mcp_sessions", float64(g.sessions))
	family("engram_serve_mcp_servers", "gauge", "Agents' MCP servers alive (one per agent and access).")
	sample("engram_serve_mcp_servers", float64(g.servers))
	family("engram_serve_sync_connections", "gauge", "Open /sync WebSocket connections.")
	sample("engram_serve_sync_connections", float64(g.syncs))
	family("engram_serve_ui_logins", "gauge", "Web UI logins held.")
	sample("engram_serve_ui_logins", float64(g.logins))
	family("engram_serve_auth_limited_addresses", "gauge", "Client addresses whose failed-login budget is not full.")
	sample("engram_serve_auth_limited_addresses", float64(g.limitedAddrs))
	family("engram_serve_mcp_tool_duration_seconds", "histogram", "MCP tool calls answered, by tool: time in the tool (searches, edits, reads).")
	for _, tool := range sortedKeys(m.tools, strings.Compare) {
		h := m.tools[tool]
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i]
			sample("engram_serve_mcp_tool_duration_seconds_bucket", float64(cum), "tool", tool, "le", formatFloat(le))
		}
		cum += h.counts[len(latencyBuckets)]
		sample("engram_serve_mcp_tool_duration_seconds_bucket", float64(cum), "tool", tool, "le", "+Inf")
		sample("engram_serve_mcp_tool_duration_seconds_sum", h.sum, "tool", tool)
		sample("engram_serve_mcp_tool_duration_seconds_count", float64(cum), "tool", tool)
	}
	if c := g.cache; c != nil {
		writeSearchCache(family, sample, c)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSearchCache renders the store's search cache figures.
func writeSearchCache(family func(name, typ, help string), sample func(name string, v float64, labels ...string), c *search.CacheStats) {
	flag := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	both := func(name, typ, help string, text, vector float64) {
		family(name, typ, help)
		sample(name, text, "cache", "text")
		sample(name, vector, "cache", "vector")
	}
	both("engram_search_cache_bytes", "gauge", "Bytes each in-process search cache charges against its bound.", float64(c.TextBytes), float64(c.VectorBytes))
	both("engram_search_cache_limit_bytes", "gauge", "Each search cache's bound in bytes (0: none).", float64(c.TextLimit), float64(c.VectorLimit))
	both("engram_search_cache_partial", "gauge", "1 when a cache holds only the partitions of the agents searched lately (the store outgrew its bound).", flag(c.TextPartial), flag(c.VectorPartial))
	both("engram_search_cache_partitions", "gauge", "Partitions (one per agent and content type) a partial cache holds.", float64(c.TextPartitions), float64(c.VectorPartitions))
	both("engram_search_cache_evictions_total", "counter", "Partitions a partial cache evicted to stay within its bound.", float64(c.TextEvictions), float64(c.VectorEvictions))
	both("engram_search_cache_legs_total", "counter", "Search legs a cache answered (full-text legs ranked, vector searches run); the rest ran in SQL.", float64(c.TextLegs), float64(c.VectorLegs))
	family("engram_search_text_partition_loads_total", "counter", "Text cache partitions loaded at an agent's first search (or by prewarming), from a part another process stored or from the rows.")
	sample("engram_search_text_partition_loads_total", float64(c.TextLoadsStored), "from", "stored")
	sample("engram_search_text_partition_loads_total", float64(c.TextLoadsRows), "from", "rows")
	family("engram_search_text_stats_passes_total", "counter", "Passes reading a partial text cache's store-wide bm25 statistics (SQLite: FTS5's vocabulary; PostgreSQL: every row).")
	sample("engram_search_text_stats_passes_total", float64(c.TextStatsPasses))
	family("engram_search_text_stats_drops_total", "counter", "Statistics dropped by writes the cache could not follow (PostgreSQL: that type ranks in SQL until the next pass).")
	sample("engram_search_text_stats_drops_total", float64(c.TextStatsDrops))
	family("engram_search_text_stats_drift", "gauge", "Rows whose changes by other processes the text cache's statistics follow approximately until its next pass.")
	sample("engram_search_text_stats_drift", float64(c.TextStatsDrift))
	family("engram_search_prewarming", "gauge", "1 while the search caches prewarm (/readyz answers 503).")
	sample("engram_search_prewarming", flag(c.Prewarming))
}

func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}

// escapeLabel escapes a label value as the text format wants: backslash,
// double quote and line feed.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	var b strings.Builder
	for _, c := range []byte(s) {
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// minMetricsToken is the shortest metrics token New takes: it is a
// credential, guessed like any other.
const minMetricsToken = 16

// ReadMetricsToken reads a metrics token from the file at path (what
// engram serve --metrics-token-file names, so the secret stays out of
// the process list): its content without surrounding white space.
func ReadMetricsToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: metrics token: %w", ErrInvalidOptions, err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < minMetricsToken || strings.ContainsFunc(tok, unicode.IsSpace) {
		return "", fmt.Errorf("%w: metrics token in %s: want one word of at least %d bytes (openssl rand -hex 32)", ErrInvalidOptions, path, minMetricsToken)
	}
	return tok, nil
}

// serveMetrics answers /metrics to the bearer of Options.MetricsToken;
// without one configured, /metrics does not exist (404).
func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if h.opts.MetricsToken == "" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	secret := bearerToken(r)
	if !h.admit(w, r, secret) {
		return
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(h.opts.MetricsToken)) != 1 {
		h.authFailed(r, secret, "wrong or missing metrics token")
		w.Header().Set("WWW-Authenticate", `Bearer realm="engram metrics"`)
		http.Error(w, "401 unauthorized: /metrics takes the metrics token (Authorization: Bearer)", http.StatusUnauthorized)
		return
	}
	h.authSucceeded(r, secret)
	var g gauges
	g.sessions = h.Sessions()
	g.servers = h.Servers()
	h.mu.Lock()
	g.syncs, g.logins = len(h.syncs), len(h.uiLogins)
	h.mu.Unlock()
	g.limitedAddrs = h.auth.addresses()
	if h.opts.SearchCache != nil {
		c := h.opts.SearchCache()
		g.cache = &c
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := h.metrics.write(w, g); err != nil {
		h.log.Debug("serve: write metrics", "err", err)
	}
}
