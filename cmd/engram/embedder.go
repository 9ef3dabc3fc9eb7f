package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/engram-go/engram/internal/openaihttp"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// The environment variables of the OpenAI-compatible embedder, in the order
// search.NewOpenAI reads them.
const (
	envBaseURL  = "ENGRAM_EMBED_BASE_URL"
	envBaseURL2 = "OPENAI_BASE_URL"
	envKey      = "ENGRAM_EMBED_API_KEY"
	envKey2     = "OPENAI_API_KEY"
)

// errEmbedderUnavailable is a recorded embedder the CLI cannot rebuild in
// this environment: a command that searches fails with it, one that does
// not runs without vectors.
var errEmbedderUnavailable = errors.New("the store's embedder is not available")

// openAIEmbedder builds the OpenAI-compatible embedder from the
// environment, with model and dims when the store recorded them. With
// neither a key nor a base URL it fails at once, naming what to set: the
// default endpoint (api.openai.com) answers every keyless request with 401,
// after retries.
func openAIEmbedder(model string, dims int) (search.Embedder, error) {
	base := firstEnv(envBaseURL, envBaseURL2)
	key := firstEnv(envKey, envKey2)
	if key == "" && (base == "" || isOpenAIHost(base)) {
		if base == "" && strings.HasPrefix(model, "text-embedding-") {
			// OpenAI's own models: the key is what is missing.
			return nil, fmt.Errorf("%s is an OpenAI model: it needs an API key for api.openai.com: %s (or %s) is not set", model, envKey, envKey2)
		}
		if base == "" {
			return nil, fmt.Errorf("the OpenAI-compatible embedder needs %s (or %s) for api.openai.com, or %s for another server (Ollama: http://localhost:11434/v1): neither is set",
				envKey, envKey2, envBaseURL)
		}
		return nil, fmt.Errorf("the OpenAI-compatible embedder at %s needs an API key: %s (or %s) is not set", redact.Target(base), envKey, envKey2)
	}
	e, err := search.NewOpenAI(&search.OpenAIOptions{Model: model, Dimensions: dims})
	if err != nil {
		return nil, err
	}
	return &reachEmbedder{OpenAIEmbedder: e, base: cmpOr(base, search.DefaultOpenAIBaseURL), keyed: key != ""}, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// reachEmbedder is the OpenAI-compatible embedder with the CLI's two
// checks: a server nothing listens at fails the first request at once (the
// client retries network errors for 7.5 s, for a server restarting, which a
// person at a terminal rarely has), and a rejected key says which variable
// holds it. Once the server answered, requests go straight through.
type reachEmbedder struct {
	*search.OpenAIEmbedder
	base    string
	keyed   bool
	reached atomic.Bool
}

func (e *reachEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if !e.reached.Load() {
		if err := e.dial(ctx); err != nil {
			return nil, err
		}
	}
	v, err := e.OpenAIEmbedder.Embed(ctx, texts)
	var he *openaihttp.Error
	if errors.As(err, &he) && he.Op == openaihttp.OpStatus && (he.StatusCode == http.StatusUnauthorized || he.StatusCode == http.StatusForbidden) {
		what := fmt.Sprintf("check %s (or %s)", envKey, envKey2)
		if !e.keyed {
			what = fmt.Sprintf("set %s (or %s): none is set", envKey, envKey2)
		}
		return nil, fmt.Errorf("%w\nthe embedding server %s refused the request's API key (HTTP %d): %s", err, redact.Target(e.base), he.StatusCode, what)
	}
	if err == nil {
		e.reached.Store(true)
	}
	return v, err
}

// dial opens (and closes) a TCP connection to the base URL's host, unless
// a proxy is configured for it (the proxy is what the client reaches).
func (e *reachEmbedder) dial(ctx context.Context) error {
	u, err := url.Parse(e.base)
	if err != nil {
		return nil // NewOpenAI accepted it; the request reports it
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: the embedding server %s is unreachable (%v): start it, or point %s at one",
			search.ErrEmbedder, redact.Target(e.base), dialReason(err), envBaseURL)
	}
	c.Close()
	return nil
}

// dialReason is the end of a dial error: "connection refused", "no such
// host", "i/o timeout".
func dialReason(err error) string {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return "no such host " + dns.Name
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// recordedEmbedder rebuilds the embedder s's vectors were made with (nil
// when none is recorded): offline-hash-v1/N, or an OpenAI-compatible model
// ("MODEL/DIMS") configured from the environment. An embedder it cannot
// rebuild is an error wrapping errEmbedderUnavailable that says why.
func recordedEmbedder(ctx context.Context, s *memory.Store) (search.Embedder, string, error) {
	name, dims, err := s.Admin().RecordedEmbedder(ctx)
	if err != nil || name == "" {
		return nil, "", err
	}
	e, err := embedderNamed(name, dims)
	return e, name, err
}

// embedderNamed rebuilds the embedder whose Name and Dimensions a store
// or a dump records.
func embedderNamed(name string, dims int) (search.Embedder, error) {
	if dims < 1 || dims > search.MaxDimensions {
		// A hand-edited dump can record any number; an offline embedder
		// of that size would be built before the index refused it.
		return nil, fmt.Errorf("%w: its vectors are from %q with %d dimensions (want 1..%d)", errEmbedderUnavailable, name, dims, search.MaxDimensions)
	}
	if n, ok := strings.CutPrefix(name, "offline-hash-v1/"); ok && n == strconv.Itoa(dims) {
		return search.NewOffline(dims), nil
	}
	i := strings.LastIndex(name, "/")
	if i <= 0 || name[i+1:] != strconv.Itoa(dims) {
		return nil, fmt.Errorf("%w: its vectors are from %q (%d dimensions), which the CLI cannot compute", errEmbedderUnavailable, name, dims)
	}
	e, err := openAIEmbedder(name[:i], dims)
	if err != nil {
		return nil, fmt.Errorf("%w: its vectors are from %s: %w", errEmbedderUnavailable, name, err)
	}
	return e, nil
}
