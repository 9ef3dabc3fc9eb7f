package openaihttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server answers the i-th request (0-based) with handlers[min(i, last)].
func server(t *testing.T, handlers ...http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(calls.Add(1)) - 1
		handlers[min(i, len(handlers)-1)](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func status(code int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	var got atomic.Value
	ok := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(fmt.Sprintf("%s %s %s %s %s", r.Method, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("X-Org"), b))
		io.WriteString(w, `{"ok":true}`)
	}
	srv, calls := server(t,
		status(http.StatusServiceUnavailable, `{"error":{"message":"busy","type":"server_error"}}`),
		status(http.StatusTooManyRequests, `{"error":"slow down"}`),
		ok)
	c := &Client{URL: srv.URL, APIKey: "k", Header: http.Header{"X-Org": {"o"}}, MaxRetries: 3, RetryDelay: time.Millisecond}
	raw, err := c.Post(context.Background(), []byte(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"ok":true}` || calls.Load() != 3 {
		t.Fatalf("got %q after %d calls", raw, calls.Load())
	}
	if want := `POST Bearer k application/json o {"x":1}`; got.Load() != want {
		t.Fatalf("request %q, want %q", got.Load(), want)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	srv, calls := server(t,
		status(http.StatusTooManyRequests, "", "Retry-After", "0.2"),
		status(http.StatusOK, "{}"))
	c := &Client{URL: srv.URL, MaxRetries: 1, RetryDelay: time.Millisecond, MaxRetryDelay: 5 * time.Second}
	start := time.Now()
	if _, err := c.Post(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || calls.Load() != 2 {
		t.Fatalf("retried after %v (%d calls), want >= 200ms", d, calls.Load())
	}

	// MaxRetryDelay caps the server's wish.
	srv2, _ := server(t,
		status(http.StatusServiceUnavailable, "", "Retry-After", "3600"),
		status(http.StatusOK, "{}"))
	c2 := &Client{URL: srv2.URL, MaxRetries: 1, RetryDelay: time.Millisecond, MaxRetryDelay: 10 * time.Millisecond}
	start = time.Now()
	if _, err := c2.Post(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second { // the server asked for an hour
		t.Fatalf("waited %v despite MaxRetryDelay", d)
	}
}

func TestNonRetryable(t *testing.T) {
	srv, calls := server(t, status(http.StatusBadRequest, `{"error":{"message":"bad input","type":"invalid_request_error"}}`))
	c := &Client{URL: srv.URL, MaxRetries: 5, RetryDelay: time.Millisecond, Detail: "(model m)"}
	_, err := c.Post(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err %v (%T), want *Error", err, err)
	}
	if e.Op != OpStatus || e.StatusCode != 400 || e.Retryable || e.Attempts != 1 || calls.Load() != 1 {
		t.Fatalf("got %+v after %d calls", e, calls.Load())
	}
	if want := "POST " + srv.URL + " (model m): HTTP 400: bad input (invalid_request_error)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestExhaustedRetries(t *testing.T) {
	srv, calls := server(t, status(http.StatusBadGateway, "upstream down"))
	c := &Client{URL: srv.URL, MaxRetries: 2, RetryDelay: time.Millisecond}
	_, err := c.Post(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) || !e.Retryable || e.StatusCode != 502 || e.Attempts != 3 || calls.Load() != 3 {
		t.Fatalf("err %v (%+v) after %d calls", err, e, calls.Load())
	}
	if !strings.HasSuffix(err.Error(), `HTTP 502: "upstream down" (after 3 attempts)`) {
		t.Fatalf("message %q", err)
	}
}

func TestNetworkErrorRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := &Client{URL: url, MaxRetries: 1, RetryDelay: time.Millisecond}
	_, err := c.Post(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) || e.Op != OpSend || !e.Retryable || e.Attempts != 2 {
		t.Fatalf("err %v (%+v)", err, e)
	}
}

func TestCheckNotRetried(t *testing.T) {
	srv, calls := server(t, status(http.StatusOK, "not json"))
	bad := errors.New("bad body")
	c := &Client{URL: srv.URL, MaxRetries: 3, RetryDelay: time.Millisecond}
	_, err := c.PostCheck(context.Background(), nil, func(raw []byte) error {
		return fmt.Errorf("%w %s", bad, c.Quote(raw, 3))
	})
	if !errors.Is(err, bad) || err.Error() != `bad body "not…"` || calls.Load() != 1 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	srv, calls := server(t, status(http.StatusServiceUnavailable, `{"message":"later"}`))
	c := &Client{URL: srv.URL, MaxRetries: 5, RetryDelay: time.Minute, MaxRetryDelay: time.Minute}
	// The deadline leaves the first attempt time to finish on a loaded
	// machine and still ends long before the minute's back-off.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Post(ctx, nil)
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("Post returned after %v", d)
	}
	var ce *CanceledError
	if !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) || ce.Last == nil || calls.Load() != 1 {
		t.Fatalf("err %v (%T) after %d calls", err, err, calls.Load())
	}
	if !strings.Contains(err.Error(), "while waiting to retry: POST "+srv.URL+": HTTP 503: later") {
		t.Fatalf("message %q", err)
	}
}

func TestAttemptTimeoutIsNotCallersDeadline(t *testing.T) {
	block := make(chan struct{})
	srv, _ := server(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	defer close(block)
	c := &Client{URL: srv.URL, Timeout: 20 * time.Millisecond}
	_, err := c.Post(context.Background(), nil)
	var e *Error
	if !errors.As(err, &e) || e.Op != OpSend || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v (%T)", err, err)
	}
}

func TestParseRetryAfter(t *testing.T) {
	for h, want := range map[string]time.Duration{
		"":                              0,
		" 2 ":                           2 * time.Second,
		"0.5":                           500 * time.Millisecond,
		"-1":                            0,
		"NaN":                           0,
		"99999":                         time.Hour,
		"garbage":                       0,
		"Mon, 02 Jan 2006 15:04:05 GMT": 0,
	} {
		if got := ParseRetryAfter(h); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", h, got, want)
		}
	}
	future := time.Now().Add(time.Minute).UTC().Format(http.TimeFormat)
	if got := ParseRetryAfter(future); got <= 50*time.Second || got > time.Minute {
		t.Errorf("ParseRetryAfter(%q) = %v", future, got)
	}
}

func TestErrorMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"m","type":"t","code":42}}`: "m (t)",
		`{"error":{"message":"m"}}`:                      "m",
		`{"error":"ollama says"}`:                        "ollama says",
		`{"message":"top"}`:                              "top",
		"  \n":                                           "empty body",
		"plain":                                          `"plain"`,
		strings.Repeat("é", 200):                         `"` + strings.Repeat("é", 150) + `…"`,
	} {
		if got := ErrorMessage([]byte(body)); got != want {
			t.Errorf("ErrorMessage(%.20q) = %q, want %q", body, got, want)
		}
	}
	c := &Client{Clip: func(s string, n int) string { return "<" + s[:1] + ">" }}
	if got := c.ErrorMessage([]byte("xyz")); got != `"<x>"` {
		t.Errorf("Client.ErrorMessage with Clip = %q", got)
	}
}

func TestFirstNonEmpty(t *testing.T) {
	if got := FirstNonEmpty("", "a", "b"); got != "a" {
		t.Fatal(got)
	}
	if got := FirstNonEmpty("", ""); got != "" {
		t.Fatal(got)
	}
}

func TestWrap(t *testing.T) {
	sentinel := errors.New("pkg: failed")
	last := &Error{Op: OpStatus, URL: "u", StatusCode: 503, Message: "busy"}
	err := Wrap(&CanceledError{Cause: context.Canceled, Last: last}, sentinel, "pkg: client")
	if !errors.Is(err, context.Canceled) || errors.Is(err, sentinel) ||
		err.Error() != "pkg: client: context canceled (while waiting to retry: pkg: failed: POST u: HTTP 503: busy)" {
		t.Fatalf("canceled while waiting: %v", err)
	}
	err = Wrap(&CanceledError{Cause: context.Canceled}, sentinel, "pkg: client")
	if !errors.Is(err, context.Canceled) || err.Error() != "pkg: client: context canceled" {
		t.Fatalf("canceled: %v", err)
	}
	last.Attempts = 2
	err = Wrap(last, sentinel, "pkg: client")
	var e *Error
	if !errors.Is(err, sentinel) || !errors.As(err, &e) || err.Error() != "pkg: failed: POST u: HTTP 503: busy (after 2 attempts)" {
		t.Fatalf("attempt error: %v", err)
	}
}

func TestClientDefaults(t *testing.T) {
	for _, tc := range []struct {
		timeout              time.Duration
		retries, wantRetries int
		wantTimeout          time.Duration
	}{
		{0, 0, 3, 5 * time.Second},
		{-time.Second, -1, 0, 5 * time.Second},
		{time.Second, 2, 2, time.Second},
	} {
		c := &Client{Timeout: tc.timeout, MaxRetries: tc.retries}
		c.Defaults(5*time.Second, 3)
		if c.Timeout != tc.wantTimeout || c.MaxRetries != tc.wantRetries {
			t.Errorf("Defaults on {%v, %d}: {%v, %d}, want {%v, %d}", tc.timeout, tc.retries, c.Timeout, c.MaxRetries, tc.wantTimeout, tc.wantRetries)
		}
	}
}
