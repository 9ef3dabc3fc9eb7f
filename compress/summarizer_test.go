package compress_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engram-go/engram/compress"
	"github.com/engram-go/engram/memory"
)

func TestExtractive(t *testing.T) {
	msgs := []memory.Message{
		{Role: memory.RoleSystem, Content: "System text is skipped."},
		{Role: memory.RoleUser, Content: "  Please find the Q3 report. It is somewhere in docs.\nSecond line."},
		{Role: memory.RoleAssistant, ToolCalls: []memory.ToolCall{{ID: "1", Name: "search"}, {ID: "2", Name: "open\nfile"}}},
		{Role: memory.RoleTool, Name: "search", Content: "Found /docs/q3.pdf (2 MB)\nmore output"},
		{Role: memory.RoleTool, Content: ""},
		{Role: memory.RoleAssistant, Content: "The report shows 12% growth! Anything else?"},
	}
	got, err := compress.Extractive{}.Summarize(context.Background(), "- user: earlier thing.", msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"- user: earlier thing.",
		"- user: Please find the Q3 report.",
		"- assistant called search, open file",
		"- tool search: Found /docs/q3.pdf (2 MB)",
		"- assistant: The report shows 12% growth!",
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	again, _ := compress.Extractive{}.Summarize(context.Background(), "- user: earlier thing.", msgs)
	if again != got {
		t.Fatal("not deterministic")
	}
}

func TestExtractiveBounds(t *testing.T) {
	var msgs []memory.Message
	for i := range 100 {
		msgs = append(msgs, memory.Message{Role: memory.RoleUser, Content: strings.Repeat("word ", 10+i) + "end."})
	}
	e := compress.Extractive{MaxChars: 500, LineChars: 60}
	got, _ := e.Summarize(context.Background(), "", msgs)
	if n := utf8.RuneCountInString(got); n > 500 {
		t.Fatalf("%d runes", n)
	}
	lines := strings.Split(got, "\n")
	if lines[0] != "- (earlier events omitted)" {
		t.Fatalf("first line %q", lines[0])
	}
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 60 {
			t.Fatalf("long line %q", l)
		}
	}
	// Folding the result again keeps it bounded and drops one marker.
	got2, _ := e.Summarize(context.Background(), got, msgs[:3])
	if utf8.RuneCountInString(got2) > 500 || strings.Count(got2, "omitted") != 1 {
		t.Fatalf("refold: %q", got2)
	}
}

// chatServer is an OpenAI-compatible /chat/completions stub.
type chatServer struct {
	calls   atomic.Int32
	failN   int32 // fail this many first calls
	status  int   // with this status
	reply   string
	lastReq map[string]any
	auth    string
}

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.calls.Add(1)
	if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
		http.Error(w, "bad path "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.lastReq = nil
	json.Unmarshal(body, &s.lastReq)
	s.auth = r.Header.Get("Authorization")
	if n <= s.failN {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(s.status)
		io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": s.reply}, "finish_reason": "stop"}},
	})
}

func TestOpenAISummarizer(t *testing.T) {
	srv := &chatServer{reply: "  The user asked for the report.  "}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s, err := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL + "/v1/", Model: "tiny", APIKey: "k", RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Summarize(context.Background(), "before", []memory.Message{{Role: memory.RoleUser, Content: "find the report"}})
	if err != nil {
		t.Fatal(err)
	}
	if got != "The user asked for the report." || s.Model() != "tiny" || srv.auth != "Bearer k" {
		t.Fatalf("got %q model %q auth %q", got, s.Model(), srv.auth)
	}
	msgs := srv.lastReq["messages"].([]any)
	user := msgs[1].(map[string]any)["content"].(string)
	if srv.lastReq["model"] != "tiny" || !strings.Contains(user, "Previous summary:\nbefore") || !strings.Contains(user, "user: find the report") {
		t.Fatalf("request %v", srv.lastReq)
	}
}

func TestOpenAISummarizerRetries(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusBadGateway} {
		srv := &chatServer{reply: "ok", failN: 2, status: status}
		ts := httptest.NewServer(srv)
		s, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL + "/v1", RetryDelay: time.Millisecond})
		got, err := s.Summarize(context.Background(), "", nil)
		ts.Close()
		if err != nil || got != "ok" || srv.calls.Load() != 3 {
			t.Fatalf("status %d: %q %v after %d calls", status, got, err, srv.calls.Load())
		}
	}
	// Out of retries: the error names the status and the server's message.
	srv := &chatServer{failN: 100, status: http.StatusServiceUnavailable}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL + "/v1", RetryDelay: time.Millisecond, MaxRetries: 2})
	_, err := s.Summarize(context.Background(), "", nil)
	if !errors.Is(err, compress.ErrSummarizer) || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "slow down") || !strings.Contains(err.Error(), "after 3 attempts") {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAISummarizerPermanentErrors(t *testing.T) {
	srv := &chatServer{failN: 100, status: http.StatusUnauthorized}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	s, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL + "/v1", RetryDelay: time.Millisecond})
	_, err := s.Summarize(context.Background(), "", nil)
	if !errors.Is(err, compress.ErrSummarizer) || !strings.Contains(err.Error(), "HTTP 401") || srv.calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls", err, srv.calls.Load())
	}
	empty := &chatServer{reply: "   "}
	ts2 := httptest.NewServer(empty)
	defer ts2.Close()
	s2, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts2.URL + "/v1"})
	if _, err := s2.Summarize(context.Background(), "", nil); !errors.Is(err, compress.ErrSummarizer) || !strings.Contains(err.Error(), "empty summary") {
		t.Fatalf("err = %v", err)
	}
	if _, err := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: "ftp://x"}); !errors.Is(err, compress.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAISummarizerTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(block)
	s, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL, Timeout: 20 * time.Millisecond, MaxRetries: -1})
	start := time.Now()
	_, err := s.Summarize(context.Background(), "", nil)
	if !errors.Is(err, compress.ErrSummarizer) || time.Since(start) > 30*time.Second { // the server blocks until the test ends
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	s2, _ := compress.NewOpenAI(&compress.OpenAIOptions{BaseURL: ts.URL, RetryDelay: time.Millisecond})
	if _, err := s2.Summarize(ctx, "", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestOpenAISummarizerEnv(t *testing.T) {
	srv := &chatServer{reply: "env ok"}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	t.Setenv("ENGRAM_SUMMARY_BASE_URL", "")
	t.Setenv("OPENAI_BASE_URL", ts.URL+"/v1")
	t.Setenv("ENGRAM_SUMMARY_MODEL", "env-model")
	t.Setenv("ENGRAM_SUMMARY_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "openai-key")
	s, err := compress.NewOpenAI(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Summarize(context.Background(), "", nil); err != nil {
		t.Fatal(err)
	}
	if srv.lastReq["model"] != "env-model" || srv.auth != "Bearer openai-key" {
		t.Fatalf("model %v auth %q", srv.lastReq["model"], srv.auth)
	}
	// A named model in RecursiveSummarization uses this summarizer.
	st := openStore(t)
	in := storedHistory(t, st, "ann", 3, "active")
	in.MaxMessages = 2
	r, err := compress.RecursiveSummarization{SummarizationModel: "named-model"}.Compress(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary == nil || r.Summary.Content != "env ok" || r.Summary.Model != "named-model" || srv.lastReq["model"] != "named-model" {
		t.Fatalf("%+v %v", r.Summary, srv.lastReq["model"])
	}
}
