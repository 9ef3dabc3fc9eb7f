package compress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/engram-go/engram/internal/openaihttp"
	"github.com/engram-go/engram/internal/redact"
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
	model, prompt string
	maxTokens     int
	client        *openaihttp.Client
}

// NewOpenAI builds a summarizer from opts (nil: all from the environment).
// It fails when the base URL is malformed.
func NewOpenAI(opts *OpenAIOptions) (*OpenAISummarizer, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = openaihttp.FirstNonEmpty(o.BaseURL, os.Getenv("ENGRAM_SUMMARY_BASE_URL"), os.Getenv("OPENAI_BASE_URL"), DefaultOpenAIBaseURL)
	o.Model = openaihttp.FirstNonEmpty(o.Model, os.Getenv("ENGRAM_SUMMARY_MODEL"), os.Getenv("OPENAI_MODEL"), DefaultSummaryModel)
	o.APIKey = openaihttp.FirstNonEmpty(o.APIKey, os.Getenv("ENGRAM_SUMMARY_API_KEY"), os.Getenv("OPENAI_API_KEY"))
	base := strings.TrimRight(o.BaseURL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("%w: openai summarizer: base URL %q must start with http:// or https://", ErrInvalid, redact.BaseURL(o.BaseURL, o.APIKey))
	}
	s := &OpenAISummarizer{
		model:     o.Model,
		prompt:    openaihttp.FirstNonEmpty(o.Prompt, DefaultSummaryPrompt),
		maxTokens: o.MaxTokens,
		client: &openaihttp.Client{
			URL:              base + "/chat/completions",
			APIKey:           o.APIKey,
			Header:           o.Header.Clone(),
			Timeout:          o.Timeout,
			MaxRetries:       o.MaxRetries,
			RetryDelay:       o.RetryDelay,
			MaxRetryDelay:    o.MaxRetryDelay,
			HTTP:             o.HTTPClient,
			MaxResponseBytes: 16 << 20,
			Detail:           "(model " + o.Model + ")",
			Clip:             clipLong,
		},
	}
	if s.maxTokens == 0 {
		s.maxTokens = DefaultSummaryMaxTokens
	}
	s.client.Defaults(DefaultSummaryTimeout, DefaultSummaryMaxRetries)
	return s, nil
}

// clipLong shortens a response body longer than n bytes to n runes for an
// error message.
func clipLong(s string, n int) string {
	if len(s) > n {
		return clipRunes(s, n)
	}
	return s
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
	var text string
	check := func(raw []byte) (err error) {
		text, err = s.decode(raw)
		return err
	}
	if _, err := s.client.PostCheck(ctx, body, check); err != nil {
		return "", openaihttp.Wrap(err, ErrSummarizer, "compress: openai summarizer")
	}
	return text, nil
}

// decode reads the summary of a 200 response. Its errors are wrapped in
// ErrSummarizer by openaihttp.Wrap.
func (s *OpenAISummarizer) decode(raw []byte) (string, error) {
	url := s.client.SafeURL()
	var r chatResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("POST %s: response is not a chat completion: %v (body %s)", url, err, s.client.Quote(raw, 200))
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		return "", fmt.Errorf("POST %s: error in response: %s", url, s.client.ErrorMessage(raw))
	}
	if len(r.Choices) == 0 || r.Choices[0].Message.Content == nil {
		return "", fmt.Errorf("POST %s: response has no message content (body %s)", url, s.client.Quote(raw, 200))
	}
	out := strings.TrimSpace(*r.Choices[0].Message.Content)
	if out == "" {
		return "", fmt.Errorf("POST %s: model %s returned an empty summary (finish_reason %q)", url, s.model, r.Choices[0].FinishReason)
	}
	return out, nil
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
