package compress

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/memory"
)

// Defaults of Extractive.
const (
	DefaultExtractiveMaxChars  = 2000
	DefaultExtractiveLineChars = 200
)

// omittedLine replaces the oldest lines of an extractive summary that no
// longer fit.
const omittedLine = "- (earlier events omitted)"

// Extractive is a deterministic, offline Summarizer: one line per message,
// holding the first sentence of user messages, assistant replies and tool
// results, and the names of the tools called. Lines of the previous summary
// come first; when the whole exceeds MaxChars the oldest lines give way.
// The same input always gives the same output.
type Extractive struct {
	// MaxChars bounds the summary (runes); 0 means DefaultExtractiveMaxChars.
	MaxChars int
	// LineChars bounds each line (runes); 0 means DefaultExtractiveLineChars.
	LineChars int
}

// Model returns "extractive".
func (Extractive) Model() string { return "extractive" }

// Summarize implements Summarizer.
func (e Extractive) Summarize(ctx context.Context, previous string, msgs []memory.Message) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	maxChars := e.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultExtractiveMaxChars
	}
	lineChars := e.LineChars
	if lineChars <= 0 {
		lineChars = DefaultExtractiveLineChars
	}
	var lines []string
	for _, l := range strings.Split(previous, "\n") {
		if l = strings.TrimSpace(l); l != "" && l != omittedLine {
			lines = append(lines, l)
		}
	}
	for _, m := range msgs {
		lines = append(lines, extractLines(m, lineChars)...)
	}
	// Keep the newest lines that fit, marking the cut.
	total := 0
	start := len(lines)
	for start > 0 {
		n := utf8.RuneCountInString(lines[start-1]) + 1
		if total+n > maxChars {
			break
		}
		total += n
		start--
	}
	out := lines[start:]
	if start > 0 {
		for len(out) > 0 && total+len(omittedLine)+1 > maxChars {
			total -= utf8.RuneCountInString(out[0]) + 1
			out = out[1:]
		}
		out = append([]string{omittedLine}, out...)
	}
	return strings.Join(out, "\n"), nil
}

func extractLines(m memory.Message, lineChars int) []string {
	var out []string
	add := func(prefix, text string) {
		if s := firstSentence(text); s != "" {
			out = append(out, clipRunes("- "+prefix+": "+s, lineChars))
		}
	}
	switch m.Role {
	case memory.RoleUser:
		add("user", m.Content)
	case memory.RoleAssistant:
		add("assistant", m.Content)
		if len(m.ToolCalls) > 0 {
			names := make([]string, 0, len(m.ToolCalls))
			for _, tc := range m.ToolCalls {
				names = append(names, oneLine(tc.Name))
			}
			out = append(out, clipRunes("- assistant called "+strings.Join(names, ", "), lineChars))
		}
	case memory.RoleTool:
		name := oneLine(m.Name)
		if name == "" {
			name = "tool"
		} else {
			name = "tool " + name
		}
		add(name, m.Content)
	}
	return out
}

// firstSentence returns the first sentence (or first line) of s, on one
// line.
func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	for i, r := range s {
		if r == '.' || r == '!' || r == '?' {
			rest := s[i+1:]
			if rest == "" || unicode.IsSpace(rune(rest[0])) {
				s = s[:i+1]
				break
			}
		}
	}
	return oneLine(strings.TrimSpace(s))
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
}

// clipRunes cuts s to at most n runes, ending with "…" when cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	i, c := 0, 0
	for j := range s {
		if c == n-1 {
			i = j
			break
		}
		c++
	}
	return s[:i] + "…"
}
