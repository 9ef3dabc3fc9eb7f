package compress

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/engram-go/engram/internal/openaihttp"
	"github.com/engram-go/engram/memory"
)

// DefaultConsolidatePrompt is the system prompt of OpenAIConsolidator's
// merges.
const DefaultConsolidatePrompt = `You keep an AI agent's long-term memory clean. You are given archival memory entries that look like near-duplicates, oldest first, each with its id.
Answer with one JSON object and nothing else:
{"action": "merge", "content": "<one entry that keeps every fact of all of them>", "reason": "<why>"}
or {"action": "supersede", "keep": <id of the entry that is right>, "reason": "<why the others are outdated or wrong>"}
or {"action": "keep", "reason": "<why they must stay separate>"}.
Never invent facts. Prefer "keep" when unsure.`

// DefaultRewritePrompt is the system prompt of OpenAIConsolidator's block
// rewrites.
const DefaultRewritePrompt = `You keep an AI agent's memory blocks within their size limit. Rewrite the block you are given shorter, keeping every fact, name, number and instruction; drop repetition and filler.
Answer with one JSON object and nothing else: {"text": "<the rewritten block>", "reason": "<what you removed>"}.`

// OpenAIConsolidator is a memory.ConsolidationModel over an
// OpenAI-compatible POST /chat/completions endpoint, configured as
// NewOpenAI's summarizer (the same options and environment). Its failures
// wrap memory.ErrModel; consolidation records them and changes nothing.
type OpenAIConsolidator struct {
	s *OpenAISummarizer
}

// NewOpenAIConsolidator builds a consolidation model from opts (nil: all
// from the environment; Prompt is ignored).
func NewOpenAIConsolidator(opts *OpenAIOptions) (*OpenAIConsolidator, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.Prompt = DefaultConsolidatePrompt
	if o.MaxTokens == 0 {
		o.MaxTokens = 1024
	}
	s, err := NewOpenAI(&o)
	if err != nil {
		return nil, err
	}
	return &OpenAIConsolidator{s: s}, nil
}

// Name implements memory.ConsolidationModel.
func (c *OpenAIConsolidator) Name() string { return c.s.model }

// ask sends system and user and decodes the reply's JSON object into v.
func (c *OpenAIConsolidator) ask(ctx context.Context, system, user string, v any) error {
	req := chatRequest{Model: c.s.model, Messages: []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}}}
	if c.s.maxTokens > 0 {
		req.MaxTokens = c.s.maxTokens
	}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%w: encode request: %v", memory.ErrModel, err)
	}
	var text string
	check := func(raw []byte) (err error) {
		text, err = c.s.decode(raw)
		return err
	}
	if _, err := c.s.client.PostCheck(ctx, body, check); err != nil {
		return openaihttp.Wrap(err, memory.ErrModel, "compress: openai consolidator")
	}
	// Models wrap JSON in prose or a code fence: take the outermost object.
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return fmt.Errorf("%w: model %s answered no JSON object: %s", memory.ErrModel, c.s.model, clipRunes(text, 200))
	}
	dec := json.NewDecoder(strings.NewReader(text[i : j+1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: model %s answered malformed JSON: %v: %s", memory.ErrModel, c.s.model, err, clipRunes(text, 200))
	}
	return nil
}

// MergeEntries implements memory.ConsolidationModel.
func (c *OpenAIConsolidator) MergeEntries(ctx context.Context, entries []memory.ArchivalEntry) (memory.ModelMerge, error) {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString("[id " + strconv.FormatInt(e.ID, 10) + "] " + strings.TrimSpace(e.Content) + "\n")
	}
	var ans struct {
		Action  string          `json:"action"`
		Content string          `json:"content"`
		Keep    json.RawMessage `json:"keep"`
		Reason  string          `json:"reason"`
	}
	if err := c.ask(ctx, DefaultConsolidatePrompt, b.String(), &ans); err != nil {
		return memory.ModelMerge{}, err
	}
	m := memory.ModelMerge{Action: ans.Action, Content: ans.Content, Reason: ans.Reason}
	if len(ans.Keep) > 0 && string(ans.Keep) != "null" {
		k, err := strconv.ParseInt(strings.Trim(string(ans.Keep), `"`), 10, 64)
		if err != nil {
			return memory.ModelMerge{}, fmt.Errorf("%w: model %s: keep %s is not an entry id", memory.ErrModel, c.s.model, clipRunes(string(ans.Keep), 40))
		}
		m.Keep = k
	}
	return m, nil
}

// RewriteBlock implements memory.ConsolidationModel.
func (c *OpenAIConsolidator) RewriteBlock(ctx context.Context, label, text string, limit int) (string, string, error) {
	var ans struct {
		Text   string `json:"text"`
		Reason string `json:"reason"`
	}
	user := fmt.Sprintf("Block %q, limit %d characters, now %d:\n\n%s", label, limit, len([]rune(text)), text)
	if err := c.ask(ctx, DefaultRewritePrompt, user, &ans); err != nil {
		return "", "", err
	}
	return ans.Text, ans.Reason, nil
}
