package openaihttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/redact"
)

// Defaults used when the matching Client field is zero.
const (
	DefaultRetryDelay       = 500 * time.Millisecond
	DefaultMaxRetryDelay    = 30 * time.Second
	DefaultMaxResponseBytes = 256 << 20
)

var defaultHTTP = &http.Client{}

// Client POSTs JSON bodies to one URL. Its fields are read-only once Post
// is called; it is then safe for concurrent use.
type Client struct {
	// URL is the endpoint, e.g. "https://api.openai.com/v1/embeddings".
	URL string
	// APIKey, if set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Header holds extra request headers. Content-Type, Accept and
	// Authorization are set after it.
	Header http.Header
	// Timeout bounds each attempt (zero or negative: no bound of its own).
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after 429, 5xx or
	// a network error (zero or negative: never).
	MaxRetries int
	// RetryDelay is the first backoff (default DefaultRetryDelay), doubled
	// on each retry up to MaxRetryDelay (default DefaultMaxRetryDelay). A
	// Retry-After header is honoured up to MaxRetryDelay.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// HTTP sends the requests (default: a client without its own timeout,
	// not shared with http.DefaultClient).
	HTTP *http.Client
	// MaxResponseBytes bounds how much of a response is read (default
	// DefaultMaxResponseBytes).
	MaxResponseBytes int64
	// Detail, if set, follows the URL in the messages of HTTP status errors,
	// e.g. "(model gpt-4o-mini)".
	Detail string
	// Clip shortens s to about n bytes for an error message (default
	// ClipBytes).
	Clip func(s string, n int) string
}

// Post sends body and returns the body of a 200 response. Failures are an
// *Error (the last attempt's) or a *CanceledError when ctx ends.
func (c *Client) Post(ctx context.Context, body []byte) ([]byte, error) {
	return c.PostCheck(ctx, body, nil)
}

// PostCheck is Post with check run on every 200 response body: an error
// from check ends Post at once (it is not retried) as an *Error with Op
// OpCheck that wraps it.
func (c *Client) PostCheck(ctx context.Context, body []byte, check func(raw []byte) error) ([]byte, error) {
	delay := c.RetryDelay
	if delay <= 0 {
		delay = DefaultRetryDelay
	}
	maxDelay := c.MaxRetryDelay
	if maxDelay <= 0 {
		maxDelay = DefaultMaxRetryDelay
	}
	for attempt := 0; ; attempt++ {
		raw, err := c.attempt(ctx, body, check)
		if err == nil {
			return raw, nil
		}
		if ctx.Err() != nil {
			return nil, &CanceledError{Cause: context.Cause(ctx)}
		}
		if !err.Retryable || attempt >= c.MaxRetries {
			final := *err
			final.Attempts = attempt + 1
			return nil, &final
		}
		wait := min(max(delay, err.RetryAfter), maxDelay)
		delay = min(delay*2, maxDelay)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &CanceledError{Cause: context.Cause(ctx), Last: err}
		case <-t.C:
		}
	}
}

// attempt makes one request.
func (c *Client) attempt(ctx context.Context, body []byte, check func([]byte) error) ([]byte, *Error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		// url.Parse's error quotes the URL and, for a bad escape, the
		// characters after the '%': a password's. Neither is shown.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ErrInvalidURL
		}
		return nil, &Error{Op: OpBuild, URL: c.SafeURL(), Err: err}
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	if len(c.Header) > 0 {
		hc = c.dropHeaderOnRedirect(hc)
	}
	resp, err := hc.Do(req)
	if err != nil {
		// Network errors and attempt timeouts are worth retrying.
		// net/http masks a userinfo password in its *url.Error, not a key
		// in the query.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.Target(ue.URL)
		}
		return nil, &Error{Op: OpSend, URL: c.SafeURL(), Err: err, Retryable: true}
	}
	defer resp.Body.Close()
	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, &Error{Op: OpRead, URL: c.SafeURL(), Err: err, Retryable: true}
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Op: OpStatus, URL: c.SafeURL(), Detail: c.Detail, StatusCode: resp.StatusCode, Message: c.ErrorMessage(raw)}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			e.Retryable = true
			e.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"))
		}
		return nil, e
	}
	if check != nil {
		if err := check(raw); err != nil {
			return nil, &Error{Op: OpCheck, URL: c.SafeURL(), Err: err}
		}
	}
	return raw, nil
}

// dropHeaderOnRedirect returns a copy of hc that, on a redirect to another
// host, sends none of c.Header: net/http drops Authorization there, but
// copies every other header, and Header may hold a key (Azure's
// "api-key"). hc's own CheckRedirect (or net/http's limit of 10) still
// applies.
func (c *Client) dropHeaderOnRedirect(hc *http.Client) *http.Client {
	cp := *hc
	next := hc.CheckRedirect
	cp.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !strings.EqualFold(req.URL.Hostname(), via[0].URL.Hostname()) {
			for k := range c.Header {
				req.Header.Del(k)
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &cp
}

// SafeURL is URL as messages show it: a password in the userinfo and the
// query's values (an api-key) masked by redact.Target.
func (c *Client) SafeURL() string {
	return redact.Target(c.URL)
}

// ErrorMessage is the package function ErrorMessage with c.Clip, and with
// the client's secrets masked (see Quote).
func (c *Client) ErrorMessage(raw []byte) string {
	return c.hide(errorMessage([]byte(c.hide(string(raw))), c.clip()))
}

// Quote returns raw shortened to about n bytes by c.Clip, quoted. The
// client's secrets (APIKey, the values of Header, the URL's password and
// query values) are masked first: a server or proxy may echo what it was
// sent ("Incorrect API key provided: Bearer sk-..."), and the body is
// quoted into errors and logs.
func (c *Client) Quote(raw []byte, n int) string {
	return quote([]byte(c.hide(string(raw))), n, c.clip())
}

// hide masks the client's secrets in s. Values shorter than 4 bytes are
// left alone: masking them would mask ordinary text and hide nothing.
func (c *Client) hide(s string) string {
	var secrets []string
	add := func(v string) {
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	add(c.APIKey)
	for _, vs := range c.Header {
		for _, v := range vs {
			add(v)
			add(strings.TrimPrefix(v, "Bearer "))
		}
	}
	if u, err := url.Parse(c.URL); err == nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
			add(url.PathEscape(pw))
			add(url.QueryEscape(pw))
		}
		for k, vs := range u.Query() {
			if redact.Harmless(k) {
				continue
			}
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
	}
	// Longest first, so a secret holding another is masked whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, redact.Mask)
	}
	return s
}

func (c *Client) clip() func(string, int) string {
	if c.Clip != nil {
		return c.Clip
	}
	return ClipBytes
}

// ParseRetryAfter reads a Retry-After header: delta seconds (at most an
// hour) or an HTTP date. It returns 0 for an empty, malformed or past value.
func ParseRetryAfter(h string) time.Duration {
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

// Defaults fills in what a client's options left unset: Timeout, when
// zero or negative, becomes timeout; MaxRetries, when zero, becomes
// retries, and when negative (an option's "never") 0.
func (c *Client) Defaults(timeout time.Duration, retries int) {
	if c.Timeout <= 0 {
		c.Timeout = timeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = retries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
}

// FirstNonEmpty returns the first of s that is not "", or "".
func FirstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
