package searchindex_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// rerankCorpus holds three archival entries that FTS ranks
// steam-steam-steam, steam, Babbage's steam engine, and opens an Index
// with opts.
func rerankCorpus(t *testing.T, opts *searchindex.IndexOptions) *searchindex.Index {
	t.Helper()
	db := openDB(t)
	for _, c := range []string{"steam steam steam", "steam", "Babbage designed a steam engine"} {
		insertArchival(t, db, archivalRow{Agent: "a", Content: c})
	}
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func contents(rs []search.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Content
	}
	return out
}

// babbageFirst answers a /rerank request scoring documents that name
// Babbage 0.9, others 0.1, in the Jina/Cohere shape.
func babbageFirst(t *testing.T, seen *rerankRequest) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req rerankRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		if seen != nil {
			*seen = req
			seen.auth = r.Header.Get("Authorization")
			seen.path = r.URL.Path
		}
		type res struct {
			Index int     `json:"index"`
			Score float64 `json:"relevance_score"`
		}
		var out []res
		for i := len(req.Documents) - 1; i >= 0; i-- { // any order: by index
			s := 0.1
			if strings.Contains(req.Documents[i], "Babbage") {
				s = 0.9
			}
			out = append(out, res{i, s})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"results": out})
	}
}

type rerankRequest struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
	auth      string
	path      string
}

func TestRerankerReorders(t *testing.T) {
	ctx := context.Background()
	var seen rerankRequest
	srv := httptest.NewServer(babbageFirst(t, &seen))
	defer srv.Close()
	rr, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: srv.URL + "/v1", Model: "rr-1", APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	// Off by default: the fused (BM25) order.
	plain := rerankCorpus(t, nil)
	rs, err := plain.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
	if err != nil || len(rs) != 3 || rs[2].Content != "Babbage designed a steam engine" || rs[0].Source.RerankRank != 0 {
		t.Fatalf("without a reranker: %q, %v", contents(rs), err)
	}
	plainScores := []float64{rs[0].Score, rs[1].Score, rs[2].Score}
	x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr})
	rs, err = x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Content != "Babbage designed a steam engine" || rs[0].Score != 0.9 ||
		rs[0].Source.RerankRank != 1 || rs[0].Source.Rerank != 0.9 || rs[0].Source.FTSRank != 3 {
		t.Fatalf("reranked: %q %+v", contents(rs), rs[0].Source)
	}
	// Ties keep the fused order.
	if rs[1].Content != "steam steam steam" || rs[2].Content != "steam" || rs[2].Source.RerankRank != 3 {
		t.Errorf("tied candidates reordered: %q", contents(rs))
	}
	if seen.Query != "steam" || seen.Model != "rr-1" || seen.TopN != 3 || len(seen.Documents) != 3 ||
		seen.auth != "Bearer k" || seen.path != "/v1/rerank" {
		t.Errorf("request %+v", seen)
	}
	// MinScore is on the fused scale, checked before reranking: the two
	// entries above it are reranked (scores 0.1, below it) and returned.
	floor := plainScores[1]
	rs, err = x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).MinScore(floor))
	if err != nil || len(rs) != 2 || rs[0].Source.RerankRank != 1 || rs[1].Score != 0.1 || len(seen.Documents) != 2 {
		t.Fatalf("MinScore %v with a reranker: %q %v, scored %q", floor, contents(rs), err, seen.Documents)
	}
	// Depth 1: only the first is scored; the second follows.
	x = rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankDepth: 1})
	rs, err = x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).Limit(2))
	if err != nil || len(seen.Documents) != 1 || len(rs) != 2 || rs[0].Source.RerankRank != 1 || rs[1].Source.RerankRank != 0 {
		t.Fatalf("depth 1: %q %v, scored %q", contents(rs), err, seen.Documents)
	}
}

// A failed reranking leaves the fused order (counted, logged), or with
// RerankStrict fails the search with ErrReranker; a search whose context
// ends while the reranker runs fails with the context's error.
func TestRerankerFailures(t *testing.T) {
	// slow answers once the client gave up (the server's Close, which
	// waits for handlers, runs after stop is closed).
	stop := make(chan struct{})
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}
	defer close(stop)
	body := func(code int, s string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(s))
		}
	}
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		timeout time.Duration
		want    string // in the error
	}{
		{"status 500", body(500, `{"error":{"message":"model crashed"}}`), 0, "model crashed"},
		{"status 401", body(401, `{"error":"bad key"}`), 0, "401"},
		{"timeout", slow, 50 * time.Millisecond, "deadline"},
		{"not json", body(200, `<html>`), 0, "not rerank results"},
		{"too few", body(200, `{"results":[{"index":0,"relevance_score":1}]}`), 0, "1 scores for 3"},
		{"index out of range", body(200, `{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":1},{"index":7,"relevance_score":1}]}`), 0, "out of range"},
		{"index twice", body(200, `{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":1},{"index":1,"relevance_score":1}]}`), 0, "twice"},
		{"no index", body(200, `{"results":[{"relevance_score":1},{"index":0,"relevance_score":1},{"index":1,"relevance_score":1}]}`), 0, "no index"},
		{"no score", body(200, `{"results":[{"index":0},{"index":1,"relevance_score":1},{"index":2,"relevance_score":1}]}`), 0, "no relevance_score"},
		{"score not a number", body(200, `{"results":[{"index":0,"relevance_score":"high"},{"index":1,"relevance_score":1},{"index":2,"relevance_score":1}]}`), 0, "not rerank results"},
		{"error body", body(200, `{"results":[],"error":{"message":"overloaded"}}`), 0, "overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			srv := httptest.NewServer(tc.h)
			defer func() { go srv.Close() }()
			rr, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: srv.URL, Timeout: tc.timeout, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			rs, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
			if err != nil || len(rs) != 3 || rs[0].Content != "steam steam steam" || rs[0].Source.RerankRank != 0 {
				t.Fatalf("fallback: %q, %v", contents(rs), err)
			}
			if x.RerankFailures() != 1 || !strings.Contains(logged.String(), "reranking failed") || !strings.Contains(logged.String(), tc.want) {
				t.Errorf("failures %d, log %q (want %q)", x.RerankFailures(), logged.String(), tc.want)
			}
			strict := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankStrict: true})
			_, err = strict.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
			if !errors.Is(err, search.ErrReranker) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("strict: %v, want ErrReranker with %q", err, tc.want)
			}
		})
	}

	t.Run("context cancelled", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(slow))
		defer func() { go srv.Close() }()
		rr, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
			t.Fatalf("search with an ended context: %v after %v", err, time.Since(start))
		}
		if x.RerankFailures() != 0 {
			t.Errorf("a cancelled search counted as a reranker failure")
		}
	})
}

// A Reranker whose scores do not fit the candidates (count, NaN) fails
// like an HTTP one.
type fixedReranker []float64

func (f fixedReranker) Rerank(context.Context, string, []string) ([]float64, error) { return f, nil }

func TestRerankerBadScores(t *testing.T) {
	nan := 0.0
	nan /= nan
	for _, f := range []fixedReranker{{1, 2}, {1, 2, nan}} {
		x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: f, RerankStrict: true})
		if _, err := x.Search(context.Background(), "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS)); !errors.Is(err, search.ErrReranker) {
			t.Errorf("scores %v: %v, want ErrReranker", f, err)
		}
	}
}

func TestNewHTTPRerankerNeedsURL(t *testing.T) {
	t.Setenv("ENGRAM_RERANK_BASE_URL", "")
	if _, err := search.NewHTTPReranker(nil); err == nil {
		t.Error("no base URL accepted")
	}
	if _, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: "ftp://x"}); err == nil {
		t.Error("ftp base URL accepted")
	}
	if s := (search.HTTPRerankerOptions{APIKey: "sekrit-123456"}).String(); strings.Contains(s, "sekrit-123456") {
		t.Errorf("String shows the key: %s", s)
	}
}

// The bare-array answer of text-embeddings-inference ([{index, score}]).
func TestHTTPRerankerBareArray(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"index":1,"score":0.5},{"index":0,"score":0.25}]`))
	}))
	defer srv.Close()
	rr, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := rr.Rerank(context.Background(), "q", []string{"a", "b"})
	if err != nil || len(got) != 2 || got[0] != 0.25 || got[1] != 0.5 {
		t.Fatalf("%v, %v", got, err)
	}
}

// countingReranker records how many texts each call scored.
type countingReranker struct{ sizes []int }

func (c *countingReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	c.sizes = append(c.sizes, len(docs))
	return make([]float64, len(docs)), nil
}

// TestRerankDepthBounds: RerankDepth is how many candidates each leg
// supplies and the reranker scores. A huge one made the text cache's
// top-k allocation overflow (limit+1) and the search panic; a negative one
// turned the configured reranker off without a word. Both are refused by
// NewIndex; 0 is the default and 1..MaxRerankDepth are used as given.
func TestRerankDepthBounds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		depth   int
		wantErr bool
		scored  int // candidates the reranker sees (the corpus has 3)
	}{
		{0, false, 3},
		{1, false, 1},
		{2, false, 2},
		{searchindex.MaxRerankDepth, false, 3},
		{searchindex.MaxRerankDepth + 1, true, 0},
		{1 << 40, true, 0},
		{math.MaxInt, true, 0},
		{-1, true, 0},
		{math.MinInt, true, 0},
	} {
		for _, cache := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/cache=%v", tc.depth, cache), func(t *testing.T) {
				rr := &countingReranker{}
				opts := &searchindex.IndexOptions{Reranker: rr, RerankDepth: tc.depth, TextCacheBytes: -1}
				if cache {
					opts.TextCacheBytes = 0
				}
				db := openDB(t)
				for _, c := range []string{"steam steam steam", "steam", "Babbage designed a steam engine"} {
					insertArchival(t, db, archivalRow{Agent: "a", Content: c})
				}
				insertMessage(t, db, "a", "user", "no match here", baseTime)
				x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, opts)
				if tc.wantErr {
					if err == nil {
						t.Fatalf("RerankDepth %d accepted", tc.depth)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				if cache {
					if err := x.WarmTextCache(ctx); err != nil {
						t.Fatal(err)
					}
				}
				rs, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
				if err != nil {
					t.Fatal(err)
				}
				if len(rs) != 3 || len(rr.sizes) != 1 || rr.sizes[0] != tc.scored {
					t.Fatalf("%d results, reranker calls %v, want one of %d", len(rs), rr.sizes, tc.scored)
				}
			})
		}
	}
}

// TestBadBaseURLHidesSecrets: a base URL that is not http(s) is refused
// with an error naming it, masked. redact.Target masks what has "://", so
// a URL whose scheme was forgotten or mistyped ("user:pass@host",
// "http:/user:pass@host") was printed whole, password included, and so
// was the API key pasted into the base URL's variable.
func TestBadBaseURLHidesSecrets(t *testing.T) {
	for _, base := range []string{
		"ada:SECRET@rerank.example.com/v1",
		"http:/ada:SECRET@rerank.example.com/v1",
		"http//ada:SECRET@rerank.example.com",
		"SECRETKEY",
		"localhost:8080/v1?key=SECRET",
	} {
		_, err := search.NewHTTPReranker(&search.HTTPRerankerOptions{BaseURL: base, APIKey: "SECRETKEY"})
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("reranker, base %q: err = %v", base, err)
		}
		_, err = search.NewOpenAI(&search.OpenAIOptions{BaseURL: base, APIKey: "SECRETKEY", Model: "m", Dimensions: 3})
		if err == nil || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("embedder, base %q: err = %v", base, err)
		}
	}
}

// flakyReranker fails while fail is set and counts its calls.
type flakyReranker struct {
	calls atomic.Int64
	fail  atomic.Bool
}

func (c *flakyReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	c.calls.Add(1)
	if c.fail.Load() {
		return nil, errors.New("connection refused")
	}
	out := make([]float64, len(docs))
	for i := range out {
		out[i] = float64(i) // reverses the fused order
	}
	return out, nil
}

// A reranker that is down cost every search its timeout and retries (20 s
// with the HTTP defaults): after a failure searches skip it for the
// back-off, doubled for each failure in a row, and a success resets it.
func TestRerankerBackoff(t *testing.T) {
	ctx := context.Background()
	rr := &flakyReranker{}
	rr.fail.Store(true)
	x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankBackoff: time.Minute})
	now := time.Unix(1_000_000, 0)
	searchindex.SetClock(x, func() time.Time { return now })
	find := func() []search.Result {
		t.Helper()
		rs, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS))
		if err != nil || len(rs) != 3 {
			t.Fatalf("search: %d results, %v", len(rs), err)
		}
		return rs
	}
	for _, step := range []struct {
		advance  time.Duration
		calls    int64
		failures int64
	}{
		{0, 1, 1},                 // fails: skipped for a minute
		{30 * time.Second, 1, 1},  // skipped
		{31 * time.Second, 2, 2},  // asked again, fails: two minutes
		{119 * time.Second, 2, 2}, // skipped
		{2 * time.Second, 3, 3},   // fails again: four minutes
		{3 * time.Minute, 3, 3},   // skipped
	} {
		now = now.Add(step.advance)
		find()
		if rr.calls.Load() != step.calls || x.RerankFailures() != step.failures {
			t.Fatalf("after %v: %d calls, %d failures; want %d, %d", step.advance, rr.calls.Load(), x.RerankFailures(), step.calls, step.failures)
		}
	}
	rr.fail.Store(false)
	now = now.Add(2 * time.Minute)
	if rs := find(); rs[0].Source.RerankRank != 1 || rr.calls.Load() != 4 {
		t.Fatalf("after the back-off: rerank rank %d, %d calls", rs[0].Source.RerankRank, rr.calls.Load())
	}
	// The success reset the streak: one failure skips a minute again.
	rr.fail.Store(true)
	find()
	now = now.Add(61 * time.Second)
	find()
	if rr.calls.Load() != 6 {
		t.Fatalf("after a success and a failure: %d calls, want 6 (a one-minute back-off)", rr.calls.Load())
	}
	// Strict searches always ask.
	strict := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankStrict: true})
	for range 2 {
		if _, err := strict.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS)); !errors.Is(err, search.ErrReranker) {
			t.Fatalf("strict: %v", err)
		}
	}
	if rr.calls.Load() != 8 {
		t.Fatalf("strict searches: %d calls, want 8", rr.calls.Load())
	}
}

// A long back-off (a reranker one would rather not retry for a long time)
// must not overflow into no pause at all: doubled past time.Duration's
// range, or added to the clock past what UnixNano represents, the pause
// used to end before it began and every search asked the failing
// reranker again.
func TestRerankerBackoffLong(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		backoff time.Duration
		second  bool // wait out the first pause: the second doubles it
	}{
		{"100 years", 100 * 365 * 24 * time.Hour, true},
		{"max duration", time.Duration(math.MaxInt64), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rr := &flakyReranker{}
			rr.fail.Store(true)
			x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankBackoff: tc.backoff})
			now := time.Unix(1_000_000, 0)
			searchindex.SetClock(x, func() time.Time { return now })
			for i := range 6 {
				now = now.Add(time.Hour)
				if _, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS)); err != nil {
					t.Fatal(err)
				}
				if i == 0 && tc.second {
					// Let a second failure in a row double the pause.
					now = now.Add(tc.backoff - time.Hour)
				}
			}
			if n := rr.calls.Load(); n > 2 {
				t.Fatalf("the failing reranker was asked %d times in 6 searches within its back-off", n)
			}
		})
	}
}

// barrierReranker fails once n calls are in it at once, and counts them.
type barrierReranker struct {
	calls atomic.Int64
	all   chan struct{}
	n     int64
	once  sync.Once
}

func (b *barrierReranker) Rerank(ctx context.Context, _ string, _ []string) ([]float64, error) {
	if b.calls.Add(1) == b.n {
		b.once.Do(func() { close(b.all) })
	}
	select {
	case <-b.all:
	case <-time.After(5 * time.Second):
	}
	return nil, errors.New("connection refused")
}

// Searches that fail together in one outage are one failure, not a
// streak: five concurrent searches hitting a reranker that is down used
// to double the back-off four times at once (16 times its length).
func TestRerankerBackoffConcurrentFailures(t *testing.T) {
	ctx := context.Background()
	const n = 5
	rr := &barrierReranker{all: make(chan struct{}), n: n}
	x := rerankCorpus(t, &searchindex.IndexOptions{Reranker: rr, RerankBackoff: time.Minute})
	var mu sync.Mutex
	now := time.Unix(1_000_000, 0)
	searchindex.SetClock(x, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := x.RerankFailures(); got != n {
		t.Fatalf("%d failures counted, want %d", got, n)
	}
	mu.Lock()
	now = now.Add(time.Minute + time.Second)
	mu.Unlock()
	if _, err := x.Search(ctx, "steam", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS)); err != nil {
		t.Fatal(err)
	}
	if got := rr.calls.Load(); got != n+1 {
		t.Fatalf("a minute after one outage's concurrent failures: %d calls, want %d (the back-off grew past a minute)", got, n+1)
	}
}
