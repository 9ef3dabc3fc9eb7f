package search

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/openaihttp"
	"github.com/engram-go/engram/internal/redact"
)

// Defaults of HTTPReranker.
const (
	DefaultRerankTimeout    = 10 * time.Second
	DefaultRerankMaxRetries = 1
)

// HTTPRerankerOptions configure NewHTTPReranker. Zero fields fall back to
// the environment, then to defaults:
//
//	BaseURL  ENGRAM_RERANK_BASE_URL (required)
//	Model    ENGRAM_RERANK_MODEL (none: the field is left out)
//	APIKey   ENGRAM_RERANK_API_KEY (none: no Authorization header)
type HTTPRerankerOptions struct {
	// BaseURL is the API root; the reranker POSTs to BaseURL + "/rerank":
	// "https://api.jina.ai/v1", "https://api.cohere.com/v2", a llama.cpp
	// server started with --reranking ("http://localhost:8080/v1"), or a
	// text-embeddings-inference server ("http://localhost:8080").
	BaseURL string
	Model   string
	APIKey  string
	// Timeout bounds each HTTP attempt (default DefaultRerankTimeout): a
	// search waits for its reranker.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after 429, 5xx or
	// a network error (default DefaultRerankMaxRetries; negative: never).
	MaxRetries int
	// RetryDelay is the first backoff (default 500ms), doubled on every
	// retry up to MaxRetryDelay (default 30s).
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// HTTPClient defaults to a client without its own timeout.
	HTTPClient *http.Client
	// Header holds extra request headers.
	Header http.Header
}

// HTTPReranker is a Reranker calling a POST /rerank endpoint of the shape
// Jina, Cohere (v2), llama.cpp's server and vLLM share: the request
// {"model", "query", "documents", "top_n"}, the answer {"results":
// [{"index", "relevance_score"}]}; the bare array [{"index", "score"}]
// that text-embeddings-inference answers is read too. It is safe for
// concurrent use.
type HTTPReranker struct {
	model  string
	client *openaihttp.Client
}

var _ Reranker = (*HTTPReranker)(nil)

// NewHTTPReranker builds a reranker from opts (nil: all from the
// environment). It fails when no base URL is set or it is malformed.
func NewHTTPReranker(opts *HTTPRerankerOptions) (*HTTPReranker, error) {
	var o HTTPRerankerOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = openaihttp.FirstNonEmpty(o.BaseURL, os.Getenv("ENGRAM_RERANK_BASE_URL"))
	o.Model = openaihttp.FirstNonEmpty(o.Model, os.Getenv("ENGRAM_RERANK_MODEL"))
	o.APIKey = openaihttp.FirstNonEmpty(o.APIKey, os.Getenv("ENGRAM_RERANK_API_KEY"))
	if o.BaseURL == "" {
		return nil, fmt.Errorf("search: http reranker: no base URL: set HTTPRerankerOptions.BaseURL or ENGRAM_RERANK_BASE_URL")
	}
	base := strings.TrimRight(o.BaseURL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("search: http reranker: base URL %q must start with http:// or https://", redact.BaseURL(o.BaseURL, o.APIKey))
	}
	r := &HTTPReranker{model: o.Model, client: &openaihttp.Client{
		URL:              base + "/rerank",
		APIKey:           o.APIKey,
		Header:           o.Header.Clone(),
		Timeout:          o.Timeout,
		MaxRetries:       o.MaxRetries,
		RetryDelay:       o.RetryDelay,
		MaxRetryDelay:    o.MaxRetryDelay,
		HTTP:             o.HTTPClient,
		MaxResponseBytes: 16 << 20,
	}}
	r.client.Defaults(DefaultRerankTimeout, DefaultRerankMaxRetries)
	if o.Model != "" {
		r.client.Detail = "(model " + o.Model + ")"
	}
	return r, nil
}

type rerankRequest struct {
	Model     string   `json:"model,omitempty"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

type rerankResult struct {
	Index          *int     `json:"index"`
	RelevanceScore *float64 `json:"relevance_score"`
	Score          *float64 `json:"score"`
}

// Rerank scores docs against query in one request. Every failure wraps
// ErrReranker (or the context's error).
func (h *HTTPReranker) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(rerankRequest{Model: h.model, Query: query, Documents: docs, TopN: len(docs)})
	if err != nil {
		return nil, fmt.Errorf("%w: encode request: %v", ErrReranker, err)
	}
	var scores []float64
	check := func(raw []byte) (err error) {
		scores, err = h.decode(raw, len(docs))
		return err
	}
	if _, err := h.client.PostCheck(ctx, body, check); err != nil {
		return nil, openaihttp.Wrap(err, ErrReranker, "search: http reranker")
	}
	return scores, nil
}

// decode reads the n scores of a 200 response: every document scored
// once, by index.
func (h *HTTPReranker) decode(raw []byte, n int) ([]float64, error) {
	url := h.client.SafeURL()
	var results []rerankResult
	trimmed := strings.TrimSpace(string(raw))
	if strings.HasPrefix(trimmed, "[") {
		if err := json.Unmarshal(raw, &results); err != nil {
			return nil, fmt.Errorf("POST %s: response is not rerank results: %v (body %s)", url, err, h.client.Quote(raw, 200))
		}
	} else {
		var r struct {
			Results []rerankResult  `json:"results"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("POST %s: response is not rerank results: %v (body %s)", url, err, h.client.Quote(raw, 200))
		}
		if len(r.Error) > 0 && string(r.Error) != "null" {
			return nil, fmt.Errorf("POST %s: error in response: %s", url, h.client.ErrorMessage(raw))
		}
		results = r.Results
	}
	if len(results) != n {
		return nil, fmt.Errorf("POST %s: got %d scores for %d documents", url, len(results), n)
	}
	scores := make([]float64, n)
	seen := make([]bool, n)
	for pos, r := range results {
		if r.Index == nil {
			return nil, fmt.Errorf("POST %s: result %d has no index", url, pos)
		}
		i := *r.Index
		if i < 0 || i >= n {
			return nil, fmt.Errorf("POST %s: result index %d out of range 0..%d", url, i, n-1)
		}
		if seen[i] {
			return nil, fmt.Errorf("POST %s: result index %d appears twice", url, i)
		}
		seen[i] = true
		switch {
		case r.RelevanceScore != nil:
			scores[i] = *r.RelevanceScore
		case r.Score != nil:
			scores[i] = *r.Score
		default:
			return nil, fmt.Errorf("POST %s: result %d has no relevance_score", url, pos)
		}
	}
	return scores, nil
}

// String prints the options as %+v would, with APIKey, the values of
// Header and the base URL's secrets masked.
func (o HTTPRerankerOptions) String() string {
	type plain HTTPRerankerOptions
	p := plain(o)
	p.BaseURL = redact.Target(p.BaseURL)
	p.APIKey = redact.Secret(p.APIKey)
	p.Header = redact.Header(p.Header)
	return fmt.Sprintf("%+v", p)
}

// GoString is String, for %#v.
func (o HTTPRerankerOptions) GoString() string { return o.String() }

// LogValue is String, for log/slog.
func (o HTTPRerankerOptions) LogValue() slog.Value { return slog.StringValue(o.String()) }
