package toolrules

import (
	"strings"
	"time"
	"unicode"
)

// Heading is the first line of a rendered rules section.
const Heading = "# Tool Execution Rules"

// Render returns the tool-rules section of a system prompt: Heading, a blank
// line, then one "- sentence" line per rule, without a trailing newline.
//
// Rules are listed in a fixed kind order (StartConstraint, ExitLoop,
// ContinueLoop, MaxCalls, RequiresPrior, RequiresFollowing,
// RequiredBeforeExit, ExclusiveGroup, Cooldown, RequiresConsent), then by
// tool name, ties in input order. Identical rules (after removing repeated
// tools within a rule) are listed once. Rules of unknown kind are left out,
// since no Engine could enforce them (Validate reports them). No rules, or
// none of a known kind, render as "".
//
// Tool names are written as Markdown code spans. A name containing
// backticks gets a longer fence, and control characters (newlines, tabs)
// become spaces, so no name can end the span or the list item.
func Render(rules []Rule) string {
	var b strings.Builder
	for _, r := range canonical(rules) {
		s := r.String()
		if s == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(Heading)
			b.WriteString("\n")
		}
		b.WriteString("\n- ")
		b.WriteString(s)
	}
	return b.String()
}

// codeSpan writes name as a CommonMark code span that renders back to name
// (with control characters replaced by spaces).
func codeSpan(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, name)
	longest, run := 0, 0
	for i := 0; i < len(name); i++ {
		if name[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	// CommonMark strips one space from each side when both are present (and
	// the content is not all spaces); pad so that stripping restores name.
	pad := ""
	if name != "" && (name[0] == '`' || name[len(name)-1] == '`' ||
		(name[0] == ' ' && name[len(name)-1] == ' ' && strings.Trim(name, " ") != "")) {
		pad = " "
	}
	return fence + pad + name + pad + fence
}

// codeList renders tools as "`a`", "`a` and `b`", "`a`, `b` and `c`".
func codeList(tools []string, conj string) string {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = codeSpan(t)
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " " + conj + " " + parts[len(parts)-1]
}

// formatDuration is time.Duration.String without zero trailing units:
// "30s", "1m30s", "2m", "1h", "1h30m", "500ms".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
