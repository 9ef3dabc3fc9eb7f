package compress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/engram-go/engram/memory"
)

// ErrSummarizer is wrapped by every OpenAISummarizer failure.
var ErrSummarizer = errors.New("compress: summarizer failed")

// Defaults of OpenAISummarizer.
const (
	DefaultOpenAIBaseURL     = "https://api.openai.com/v1"
	DefaultSummaryModel      = "gpt-4o-mini"
	DefaultSummaryTimeout    = 120 * time.Second
	DefaultSummaryMaxRetries = 4
	DefaultSummaryMaxTokens  = 512
)

// DefaultSummaryPrompt is the system prompt of OpenAISummarizer.
const DefaultSummaryPrompt = `You maintain the running summary of a conversation between a user and an AI agent that uses tools.
You are given the previous summary (possibly empty) and the messages that followed it.
Write the new summary: fold the previous summary and the new messages into one text.
Keep facts, decisions, names, numbers, open questions and the results of tool calls; drop small talk.
Write plain prose or short bullet points, past tense, at most 300 words. Reply with the summary only.`

// OpenAIOptions configure NewOpenAI. Zero fields fall back to the
// environment, then to defaults:
//
//	BaseURL  ENGRAM_SUMMARY_BASE_URL, OPENAI_BASE_URL, DefaultOpenAIBaseURL
//	Model    ENGRAM_SUMMARY_MODEL, OPENAI_MODEL, DefaultSummaryModel
//	APIKey   ENGRAM_SUMMARY_API_KEY, OPENAI_API_KEY (none: no Authorization header)
type OpenAIOptions struct {
	// BaseURL is the API root; the summarizer POSTs to BaseURL +
	// "/chat/completions" (Ollama: "http://localhost:11434/v1").
	BaseURL string
	Model   string
	APIKey  string
	// Prompt replaces DefaultSummaryPrompt.
	Prompt string
	// MaxTokens bounds the reply (default DefaultSummaryMaxTokens; negative:
	// not sent).
	MaxTokens int
	// Timeout bounds each HTTP attempt (default DefaultSummaryTimeout).
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after 429, 5xx or a
	// network error (default DefaultSummaryMaxRetries; negative: never).
	MaxRetries int
	// RetryDelay is the first backoff (default 500ms), doubled on each retry
	// up to MaxRetryDelay (default 30s). A Retry-After header is honoured
	// up to MaxRetryDelay.
	RetryDelay    time.Duration
	MaxRetryDelay time.Duration
	// HTTPClient defaults to a client without its own timeout.
	HTTPClient *http.Client
	// Header holds extra request headers.
	Header http.Header
}

// OpenAISummarizer summarizes through an OpenAI-compatible POST
// /chat/completions endpoint (OpenAI, Ollama, llama.cpp server, vLLM, ...).
// It is safe for concurrent use.
type OpenAISummarizer struct {
	url, model, apiKey, prompt string
	maxTokens                  int
	timeout                    time.Duration
	retries                    int
	delay, maxDelay            time.Duration
	client                     *http.Client
	header                     http.Header
}

// NewOpenAI builds a summarizer from opts (nil: all from the environment).
// It fails when the base URL is malformed.
func NewOpenAI(opts *OpenAIOptions) (*OpenAISummarizer, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = firstNonEmpty(o.BaseURL, os.Getenv("ENGRAM_SUMMARY_BASE_URL"), os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	o.Model = firstNonEmpty(o.Model, os.Getenv("ENGRAM_SUMMARY_MODEL"), os.Getenv("OPENAI_MODEL"), DefaultSummaryModel)
	o.APIKey = firstNonEmpty(o.APIKey, os.Getenv("ENGRAM_SUMMARY_API_KEY"), os.Getenv("OPENAI_API_KEY"))
	base := strings.TrimRight(o.BaseURL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("%w: openai summarizer: base URL %q must start with http:// or https://", ErrInvalid, o.BaseURL)
	}
	s := &OpenAISummarizer{
		url:       base + "/chat/completions",
		model:     o.Model,
		apiKey:    o.APIKey,
		prompt:    firstNonEmpty(o.Prompt, DefaultSummaryPrompt),
		maxTokens: o.MaxTokens,
		timeout:   o.Timeout,
		retries:   o.MaxRetries,
		delay:     o.RetryDelay,
		maxDelay:  o.MaxRetryDelay,
		client:    o.HTTPClient,
		header:    o.Header.Clone(),
	}
	if s.maxTokens == 0 {
		s.maxTokens = DefaultSummaryMaxTokens
	}
	if s.timeout <= 0 {
		s.timeout = DefaultSummaryTimeout
	}
	if s.retries == 0 {
		s.retries = DefaultSummaryMaxRetries
	} else if s.retries < 0 {
		s.retries = 0
	}
	if s.delay <= 0 {
		s.delay = 500 * time.Millisecond
	}
	if s.maxDelay <= 0 {
		s.maxDelay = 30 * time.Second
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	return s, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// Model returns the chat model's name.
func (s *OpenAISummarizer) Model() string { return s.model }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// Transcript renders the summarizer's user message: the previous summary
// and the new messages, one "role: content" paragraph each.
func Transcript(previous string, msgs []memory.Message) string {
	var b strings.Builder
	b.WriteString("Previous summary:\n")
	if strings.TrimSpace(previous) == "" {
		b.WriteString("(none)\n")
	} else {
		b.WriteString(strings.TrimSpace(previous))
		b.WriteByte('\n')
	}
	b.WriteString("\nNew messages:\n")
	for _, m := range msgs {
		b.WriteByte('\n')
		b.WriteString(string(m.Role))
		if m.Name != "" {
			b.WriteString(" (" + m.Name + ")")
		}
		b.WriteString(": ")
		b.WriteString(strings.TrimSpace(m.Content))
		for _, tc := range m.ToolCalls {
			b.WriteString("\n  [called " + tc.Name)
			if len(tc.Arguments) > 0 {
				b.WriteString(" " + string(tc.Arguments))
			}
			b.WriteString("]")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Summarize implements Summarizer. Failures wrap ErrSummarizer (or the
// context's error).
func (s *OpenAISummarizer) Summarize(ctx context.Context, previous string, msgs []memory.Message) (string, error) {
	req := chatRequest{
		Model: s.model,
		Messages: []chatMessage{
			{Role: "system", Content: s.prompt},
			{Role: "user", Content: Transcript(previous, msgs)},
		},
	}
	if s.maxTokens > 0 {
		req.MaxTokens = s.maxTokens
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("%w: encode request: %v", ErrSummarizer, err)
	}
	delay := s.delay
	for attempt := 0; ; attempt++ {
		text, retryAfter, err := s.post(ctx, body)
		if err == nil {
			return text, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("compress: openai summarizer: %w", context.Cause(ctx))
		}
		if retryAfter < 0 || attempt >= s.retries {
			if attempt > 0 {
				return "", fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return "", err
		}
		wait := min(max(delay, retryAfter), s.maxDelay)
		delay = min(delay*2, s.maxDelay)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", fmt.Errorf("compress: openai summarizer: %w (while waiting to retry: %v)", context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// post makes one attempt. retryAfter < 0 means the error is permanent;
// otherwise it is the server's requested wait (0 if none).
func (s *OpenAISummarizer) post(ctx context.Context, body []byte) (text string, retryAfter time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return "", -1, fmt.Errorf("%w: build request: %v", ErrSummarizer, err)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if s.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.apiKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("%w: POST %s: %v", ErrSummarizer, s.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return "", 0, fmt.Errorf("%w: POST %s: read response: %v", ErrSummarizer, s.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("%w: POST %s (model %s): HTTP %d: %s", ErrSummarizer, s.url, s.model, resp.StatusCode, errorMessage(raw))
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return "", parseRetryAfter(resp.Header.Get("Retry-After")), err
		}
		return "", -1, err
	}
	var r chatResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", -1, fmt.Errorf("%w: POST %s: response is not a chat completion: %v (body %s)", ErrSummarizer, s.url, err, clip(raw, 200))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return "", -1, fmt.Errorf("%w: POST %s: error in response: %s", ErrSummarizer, s.url, errorMessage(raw))
	}
	if len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
		return "", -1, fmt.Errorf("%w: POST %s: response has no message content (body %s)", ErrSummarizer, s.url, clip(raw, 200))
	}
	out := strings.TrimSpace(*r.Choices[0].Message.Content)
	if out == "" {
		return "", -1, fmt.Errorf("%w: POST %s: model %s returned an empty summary (finish_reason %q)", ErrSummarizer, s.url, s.model, r.Choices[0].FinishReason)
	}
	return out, 0, nil
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
	return clip(raw, 300)
}

func clip(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = clipRunes(s, n)
	}
	return strconv.Quote(s)
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
