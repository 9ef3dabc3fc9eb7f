package search_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/search"
)

// fakeServer answers /v1/embeddings like OpenAI: each input's vector is
// [len(input), index+1, 1, ...], data returned in reverse order so the
// client must sort by index.
type fakeServer struct {
	dims     int
	requests atomic.Int32
	mu       sync.Mutex
	batches  []int
	handler  func(w http.ResponseWriter, r *http.Request, n int32) bool // true: handled
}

func (f *fakeServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := f.requests.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if f.handler != nil && f.handler(w, r, n) {
			return
		}
		if got := r.Header.Get("Authorization"); got != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad key `+got+`","type":"auth"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "test-model" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.batches = append(f.batches, len(req.Input))
		f.mu.Unlock()
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i := len(req.Input) - 1; i >= 0; i-- {
			v := make([]float32, f.dims)
			v[0] = float32(len(req.Input[i]))
			v[1] = float32(i + 1)
			data = append(data, item{"embedding", i, v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestEmbedder(t *testing.T, url string, mod func(*search.OpenAIOptions)) *search.OpenAIEmbedder {
	o := &search.OpenAIOptions{
		BaseURL: url + "/v1/", Model: "test-model", APIKey: "sk-test", Dimensions: 4,
		RetryDelay: time.Millisecond, MaxRetryDelay: 20 * time.Millisecond, MaxRetries: 2,
	}
	if mod != nil {
		mod(o)
	}
	e, err := search.NewOpenAI(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestOpenAISuccessAndBatching(t *testing.T) {
	f := &fakeServer{dims: 4}
	srv := f.start(t)
	e := newTestEmbedder(t, srv.URL, func(o *search.OpenAIOptions) { o.BatchSize = 3 })
	if e.Name() != "test-model/4" || e.Dimensions() != 4 {
		t.Fatalf("name %q dims %d", e.Name(), e.Dimensions())
	}
	texts := []string{"a", "bb", "ccc", "dddd", "", "ffffff", "ggggggg"}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors", len(vecs))
	}
	for i, v := range vecs {
		wantLen := float32(len(texts[i]))
		if texts[i] == "" {
			wantLen = 1 // sent as " "
		}
		if v[0] != wantLen || v[1] != float32(i%3+1) {
			t.Errorf("vector %d = %v (out of order?)", i, v)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fmt.Sprint(f.batches) != "[3 3 1]" {
		t.Errorf("batches %v", f.batches)
	}
	if vecs, err := e.Embed(context.Background(), nil); err != nil || len(vecs) != 0 || f.requests.Load() != 3 {
		t.Errorf("empty input: %v, %v, %d requests", vecs, err, f.requests.Load())
	}
}

func TestOpenAIRetry429(t *testing.T) {
	f := &fakeServer{dims: 4}
	f.handler = func(w http.ResponseWriter, r *http.Request, n int32) bool {
		if n == 1 {
			w.Header().Set("Retry-After", "0.05")
			http.Error(w, `{"error":{"message":"rate limited","type":"rate_limit"}}`, http.StatusTooManyRequests)
			return true
		}
		return false
	}
	srv := f.start(t)
	e := newTestEmbedder(t, srv.URL, func(o *search.OpenAIOptions) { o.MaxRetryDelay = time.Second })
	start := time.Now()
	vecs, err := e.Embed(context.Background(), []string{"hello"})
	if err != nil || len(vecs) != 1 {
		t.Fatal(vecs, err)
	}
	if f.requests.Load() != 2 {
		t.Errorf("%d requests", f.requests.Load())
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("Retry-After not honoured: retried after %v", d)
	}
}

func TestOpenAIErrors(t *testing.T) {
	tests := []struct {
		name     string
		handler  func(w http.ResponseWriter, r *http.Request, n int32) bool
		wantMsg  string
		requests int32
	}{
		{"500 exhausts retries", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return true
		}, "HTTP 500: overloaded (after 3 attempts)", 3},
		{"400 not retried", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			http.Error(w, `{"error":"model not found"}`, http.StatusBadRequest)
			return true
		}, "HTTP 400: model not found", 1},
		{"bad JSON", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			w.Write([]byte(`<html>gateway</html>`))
			return true
		}, "response is not JSON embeddings", 1},
		{"error body with 200", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			w.Write([]byte(`{"error":{"message":"quota exceeded"}}`))
			return true
		}, "error in response: quota exceeded", 1},
		{"wrong count", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2,3,4]}]}`))
			return true
		}, "got 1 embeddings for 2 texts", 1},
		{"wrong dims", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2,3]}]}`))
			return true
		}, "has 3 dimensions, want 4", 1},
		{"duplicate index", func(w http.ResponseWriter, r *http.Request, n int32) bool {
			w.Write([]byte(`{"data":[{"index":0,"embedding":[1,2,3,4]},{"index":0,"embedding":[1,2,3,4]}]}`))
			return true
		}, "index 0 appears twice", 1},
		{"auth", nil, "HTTP 401: bad key", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{dims: 4, handler: tc.handler}
			srv := f.start(t)
			e := newTestEmbedder(t, srv.URL, func(o *search.OpenAIOptions) {
				if tc.handler == nil {
					o.APIKey = "wrong"
				}
			})
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, search.ErrEmbedder) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %v, want ErrEmbedder containing %q", err, tc.wantMsg)
			}
			if got := f.requests.Load(); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
		})
	}
}

func TestOpenAIContextCancel(t *testing.T) {
	block := make(chan struct{})
	f := &fakeServer{dims: 4, handler: func(w http.ResponseWriter, r *http.Request, n int32) bool {
		select {
		case <-block:
		case <-r.Context().Done():
		}
		return true
	}}
	srv := f.start(t)
	defer close(block)
	e := newTestEmbedder(t, srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, []string{"a"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 30*time.Second { // the server blocks forever
		t.Fatalf("took %v", d)
	}
	// Cancelled while waiting to retry.
	f2 := &fakeServer{dims: 4, handler: func(w http.ResponseWriter, r *http.Request, n int32) bool {
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}}
	srv2 := f2.start(t)
	e2 := newTestEmbedder(t, srv2.URL, func(o *search.OpenAIOptions) { o.MaxRetryDelay = time.Minute })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := e2.Embed(ctx2, []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retry wait: err = %v", err)
	}
}

func TestOpenAIOptionsFromEnv(t *testing.T) {
	t.Setenv("ENGRAM_EMBED_BASE_URL", "")
	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	t.Setenv("ENGRAM_EMBED_MODEL", "nomic-embed-text")
	t.Setenv("ENGRAM_EMBED_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("ENGRAM_EMBED_DIMS", "")
	e, err := search.NewOpenAI(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name() != "nomic-embed-text/768" {
		t.Errorf("name %q", e.Name())
	}
	t.Setenv("ENGRAM_EMBED_MODEL", "my-custom-model")
	if _, err := search.NewOpenAI(nil); err == nil || !strings.Contains(err.Error(), "ENGRAM_EMBED_DIMS") {
		t.Errorf("unknown dims: %v", err)
	}
	t.Setenv("ENGRAM_EMBED_DIMS", "1024")
	if e, err := search.NewOpenAI(nil); err != nil || e.Dimensions() != 1024 {
		t.Errorf("dims from env: %v", err)
	}
	if _, err := search.NewOpenAI(&search.OpenAIOptions{BaseURL: "localhost:8080", Dimensions: 3}); err == nil {
		t.Error("base URL without scheme accepted")
	}
}
