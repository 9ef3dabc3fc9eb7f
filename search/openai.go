package search

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Defaults of the OpenAI-compatible embedder.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultOpenAIModel   = "text-embedding-3-small"
	DefaultBatchSize     = 64
	DefaultEmbedTimeout  = 60 * time.Second
	DefaultMaxRetries    = 4
)

// knownDimensions are native output sizes of common embedding models, used
// when OpenAIOptions.Dimensions and ENGRAM_EMBED_DIMS are not set.
var knownDimensions = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
	"nomic-embed-text":       768,
	"mxbai-embed-large":      1024,
	"all-minilm":             384,
	"snowflake-arctic-embed": 1024,
	"bge-m3":                 1024,
}

// OpenAIOptions configure NewOpenAI. Zero fields fall back to the
// environment, then to defaults:
//
//	BaseURL     ENGRAM_EMBED_BASE_URL, OPENAI_BASE_URL, DefaultOpenAIBaseURL
//	Model       ENGRAM_EMBED_MODEL, DefaultOpenAIModel
//	APIKey      ENGRAM_EMBED_API_KEY, OPENAI_API_KEY (none: no Authorization header)
//	Dimensions  ENGRAM_EMBED_DIMS, the model's known size
type OpenAIOptions struct {
	// BaseURL is the API root; the embedder POSTs to BaseURL + "/embeddings".
	// For Ollama use "http://localhost:11434/v1"; for llama.cpp's server
	// "http://localhost:8080/v1".
	BaseURL string
	Model   string
	APIKey  string
	// Dimensions is the vector size the model returns. Required for models
	// not in the built-in table (text-embedding-3-*, ada-002,
	// nomic-embed-text, mxbai-embed-large, all-minilm, ...).
	Dimensions int
	// SendDimensions adds "dimensions": Dimensions to each request, asking
	// models that support it (OpenAI text-embedding-3-*) for shortened
	// vectors. Off by default: other servers may reject the field.
	SendDimensions bool
	// BatchSize is the most texts per request (default 64).
	BatchSize int
	// Timeout bounds each HTTP attempt (default 60s).
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after 429, 5xx or a
	// network error (default 4; negative: never).
	MaxRetries int
	// RetryDelay is the first backoff (default 500ms), doubled on every retry
	// up to MaxRetryDelay (default 30s). A Retry-After header is honoured up
	// to MaxRetryDelay.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// HTTPClient defaults to a client without its own timeout (Timeout
	// applies per attempt through the context).
	HTTPClient *http.Client
	// Header holds extra request headers (e.g. an organisation id).
	Header http.Header
}

// OpenAIEmbedder calls an OpenAI-compatible POST /embeddings endpoint
// (OpenAI, Ollama, llama.cpp server, vLLM, LocalAI, ...). It is safe for
// concurrent use.
type OpenAIEmbedder struct {
	url, model, apiKey string
	dims               int
	sendDims           bool
	batch              int
	timeout            time.Duration
	retries            int
	delay, maxDelay    time.Duration
	client             *http.Client
	header             http.Header
}

// NewOpenAI builds an embedder from opts (nil: all from the environment).
// It fails when the base URL is malformed or the dimensions are unknown.
func NewOpenAI(opts *OpenAIOptions) (*OpenAIEmbedder, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = firstNonEmpty(o.BaseURL, os.Getenv("ENGRAM_EMBED_BASE_URL"), os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	o.Model = firstNonEmpty(o.Model, os.Getenv("ENGRAM_EMBED_MODEL"), DefaultOpenAIModel)
	o.APIKey = firstNonEmpty(o.APIKey, os.Getenv("ENGRAM_EMBED_API_KEY"), os.Getenv("OPENAI_API_KEY"))
	if o.Dimensions == 0 {
		if s := os.Getenv("ENGRAM_EMBED_DIMS"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("search: openai embedder: ENGRAM_EMBED_DIMS=%q is not a positive integer", s)
			}
			o.Dimensions = n
		}
	}
	if o.Dimensions == 0 {
		o.Dimensions = knownDimensions[strings.TrimSuffix(o.Model, ":latest")]
	}
	if o.Dimensions <= 0 {
		return nil, fmt.Errorf("search: openai embedder: dimensions of model %q unknown: set OpenAIOptions.Dimensions or ENGRAM_EMBED_DIMS", o.Model)
	}
	base := strings.TrimRight(o.BaseURL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("search: openai embedder: base URL %q must start with http:// or https://", o.BaseURL)
	}
	e := &OpenAIEmbedder{
		url:      base + "/embeddings",
		model:    o.Model,
		apiKey:   o.APIKey,
		dims:     o.Dimensions,
		sendDims: o.SendDimensions,
		batch:    o.BatchSize,
		timeout:  o.Timeout,
		retries:  o.MaxRetries,
		delay:    o.RetryDelay,
		maxDelay: o.MaxRetryDelay,
		client:   o.HTTPClient,
		header:   o.Header.Clone(),
	}
	if e.batch <= 0 {
		e.batch = DefaultBatchSize
	}
	if e.timeout <= 0 {
		e.timeout = DefaultEmbedTimeout
	}
	if e.retries == 0 {
		e.retries = DefaultMaxRetries
	} else if e.retries < 0 {
		e.retries = 0
	}
	if e.delay <= 0 {
		e.delay = 500 * time.Millisecond
	}
	if e.maxDelay <= 0 {
		e.maxDelay = 30 * time.Second
	}
	if e.client == nil {
		e.client = &http.Client{}
	}
	return e, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Dimensions returns the configured vector size.
func (e *OpenAIEmbedder) Dimensions() int { return e.dims }

// Name returns "<model>/<dims>": the vector space, whichever server
// computes it.
func (e *OpenAIEmbedder) Name() string { return fmt.Sprintf("%s/%d", e.model, e.dims) }

// Embed embeds texts in batches of BatchSize, one request per batch, in
// order. Empty texts are sent as a single space (OpenAI rejects empty
// input). Every failure wraps ErrEmbedder (or the context's error).
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		end := min(start+e.batch, len(texts))
		vecs, err := e.embedBatch(ctx, texts[start:end])
		if err != nil {
			if end-start < len(texts) {
				return nil, fmt.Errorf("%w (texts %d..%d of %d)", err, start, end-1, len(texts))
			}
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

type embedRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions int      `json:"dimensions,omitempty"`
}

type embedResponse struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Error json.RawMessage `json:"error"`
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	req := embedRequest{Model: e.model, Input: make([]string, len(texts))}
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			t = " "
		}
		req.Input[i] = t
	}
	if e.sendDims {
		req.Dimensions = e.dims
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%w: encode request: %v", ErrEmbedder, err)
	}
	delay := e.delay
	for attempt := 0; ; attempt++ {
		vecs, retryAfter, err := e.post(ctx, body, len(texts))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("search: openai embedder: %w", context.Cause(ctx))
		}
		if retryAfter < 0 || attempt >= e.retries {
			if attempt > 0 {
				return nil, fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return nil, err
		}
		wait := max(delay, retryAfter)
		wait = min(wait, e.maxDelay)
		delay = min(delay*2, e.maxDelay)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("search: openai embedder: %w (while waiting to retry: %v)", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// post makes one attempt. retryAfter < 0 means the error is permanent;
// otherwise it is the server's requested wait (0 if none).
func (e *OpenAIEmbedder) post(ctx context.Context, body []byte, n int) (vecs [][]float32, retryAfter time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("%w: build request: %v", ErrEmbedder, err)
	}
	for k, v := range e.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.apiKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// Network errors and attempt timeouts are worth retrying.
		return nil, 0, fmt.Errorf("%w: POST %s: %v", ErrEmbedder, e.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: POST %s: read response: %v", ErrEmbedder, e.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		msg := errorMessage(raw)
		err := fmt.Errorf("%w: POST %s: HTTP %d: %s", ErrEmbedder, e.url, resp.StatusCode, msg)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, parseRetryAfter(resp.Header.Get("Retry-After")), err
		}
		return nil, -1, err
	}
	var r embedResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, -1, fmt.Errorf("%w: POST %s: response is not JSON embeddings: %v (body %q)", ErrEmbedder, e.url, err, clip(raw, 200))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return nil, -1, fmt.Errorf("%w: POST %s: error in response: %s", ErrEmbedder, e.url, errorMessage(raw))
	}
	if len(r.Data) != n {
		return nil, -1, fmt.Errorf("%w: POST %s: got %d embeddings for %d texts", ErrEmbedder, e.url, len(r.Data), n)
	}
	vecs = make([][]float32, n)
	for pos, d := range r.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n {
			return nil, -1, fmt.Errorf("%w: POST %s: embedding index %d out of range 0..%d", ErrEmbedder, e.url, i, n-1)
		}
		if vecs[i] != nil {
			return nil, -1, fmt.Errorf("%w: POST %s: embedding index %d appears twice", ErrEmbedder, e.url, i)
		}
		if err := checkVector(d.Embedding, e.dims); err != nil {
			return nil, -1, fmt.Errorf("%w: POST %s: embedding %d %v (model %s)", ErrEmbedder, e.url, i, err, e.model)
		}
		vecs[i] = d.Embedding
	}
	return vecs, 0, nil
}

// errorMessage extracts a readable message from an error body: OpenAI's
// {"error":{"message":...}}, Ollama's {"error":"..."}, or the raw text.
func errorMessage(raw []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var obj struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    any    `json:"code"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			if obj.Type != "" {
				return obj.Message + " (" + obj.Type + ")"
			}
			return obj.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return "empty body"
	}
	return strconv.Quote(clip(raw, 300))
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return truncateUTF8(string(b), n) + "…"
	}
	return string(b)
}

// parseRetryAfter reads a Retry-After header: delta seconds or an HTTP date.
func parseRetryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil {
		if secs <= 0 || secs != secs {
			return 0
		}
		return time.Duration(min(secs, 3600) * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
