package search

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/openaihttp"
	"github.com/engram-go/engram/internal/redact"
	"github.com/engram-go/engram/internal/vecmath"
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
	model    string
	dims     int
	sendDims bool
	batch    int
	client   *openaihttp.Client
}

// NewOpenAI builds an embedder from opts (nil: all from the environment).
// It fails when the base URL is malformed or the dimensions are unknown.
func NewOpenAI(opts *OpenAIOptions) (*OpenAIEmbedder, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = openaihttp.FirstNonEmpty(o.BaseURL, os.Getenv("ENGRAM_EMBED_BASE_URL"), os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	o.Model = openaihttp.FirstNonEmpty(o.Model, os.Getenv("ENGRAM_EMBED_MODEL"), DefaultOpenAIModel)
	o.APIKey = openaihttp.FirstNonEmpty(o.APIKey, os.Getenv("ENGRAM_EMBED_API_KEY"), os.Getenv("OPENAI_API_KEY"))
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
		return nil, fmt.Errorf("search: openai embedder: base URL %q must start with http:// or https://", redact.BaseURL(o.BaseURL, o.APIKey))
	}
	e := &OpenAIEmbedder{
		model:    o.Model,
		dims:     o.Dimensions,
		sendDims: o.SendDimensions,
		batch:    o.BatchSize,
		client: &openaihttp.Client{
			URL:              base + "/embeddings",
			APIKey:           o.APIKey,
			Header:           o.Header.Clone(),
			Timeout:          o.Timeout,
			MaxRetries:       o.MaxRetries,
			RetryDelay:       o.RetryDelay,
			MaxRetryDelay:    o.MaxRetryDelay,
			HTTP:             o.HTTPClient,
			MaxResponseBytes: 256 << 20,
		},
	}
	if e.batch <= 0 {
		e.batch = DefaultBatchSize
	}
	e.client.Defaults(DefaultEmbedTimeout, DefaultMaxRetries)
	return e, nil
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
	var vecs [][]float32
	check := func(raw []byte) (err error) {
		vecs, err = e.decode(raw, len(texts))
		return err
	}
	if _, err := e.client.PostCheck(ctx, body, check); err != nil {
		return nil, openaihttp.Wrap(err, ErrEmbedder, "search: openai embedder")
	}
	return vecs, nil
}

// decode reads the n embeddings of a 200 response. Its errors are wrapped
// in ErrEmbedder by openaihttp.Wrap.
func (e *OpenAIEmbedder) decode(raw []byte, n int) ([][]float32, error) {
	url := e.client.SafeURL()
	var r embedResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("POST %s: response is not JSON embeddings: %v (body %s)", url, err, e.client.Quote(raw, 200))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return nil, fmt.Errorf("POST %s: error in response: %s", url, e.client.ErrorMessage(raw))
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("POST %s: got %d embeddings for %d texts", url, len(r.Data), n)
	}
	vecs := make([][]float32, n)
	for pos, d := range r.Data {
		i := pos
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("POST %s: embedding index %d out of range 0..%d", url, i, n-1)
		}
		if vecs[i] != nil {
			return nil, fmt.Errorf("POST %s: embedding index %d appears twice", url, i)
		}
		if err := vecmath.Check(d.Embedding, e.dims); err != nil {
			return nil, fmt.Errorf("POST %s: embedding %d %v (model %s)", url, i, err, e.model)
		}
		vecs[i] = d.Embedding
	}
	return vecs, nil
}

// String prints the options as %+v would, with APIKey, the values of
// Header and the base URL's secrets masked: options an application logs
// (fmt's %v, %+v, %#v; slog through LogValue) never carry the key.
func (o OpenAIOptions) String() string {
	type plain OpenAIOptions // without this method
	p := plain(o)
	p.BaseURL = redact.Target(p.BaseURL)
	p.APIKey = redact.Secret(p.APIKey)
	p.Header = redact.Header(p.Header)
	return fmt.Sprintf("%+v", p)
}

// GoString is String, for %#v.
func (o OpenAIOptions) GoString() string { return o.String() }

// LogValue is String, for log/slog (whose JSON handler would otherwise
// marshal every field).
func (o OpenAIOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }
