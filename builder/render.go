package builder

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// RenderOptions select the optional parts of a rendered block.
type RenderOptions struct {
	IncludeDescriptions bool
	IncludeSchemas      bool
	ShowCharUsage       bool
}

// RenderBlock renders one block for the system prompt:
//
//	<block:label permission="ReadWrite">
//	Description (with IncludeDescriptions)
//
//	rendered content
//	</block:label>
//
// A block shared with the agent adds shared_from="owner"; ShowCharUsage
// adds chars="used/limit". The label is sanitised to letters, digits, '_',
// '-' and '.', attribute values are escaped, and "<block:" / "</block:" (and
// "<attachment" / "</attachment"), in any case, inside the description or
// content have their "<" written as "&lt;", so no content can open or close
// a tag.
func RenderBlock(m memory.BlockMeta, o RenderOptions) string {
	var b strings.Builder
	writeBlock(&b, m, o)
	return b.String()
}

// writeBlock renders a block into b.
func writeBlock(b *strings.Builder, m memory.BlockMeta, o RenderOptions) {
	label := SanitizeLabel(m.Label)
	b.Grow(len(m.Rendered) + len(m.Description) + 2*len(label) + 64)
	b.WriteString("<block:")
	b.WriteString(label)
	b.WriteString(` permission="`)
	b.WriteString(permissionName(m.Permission))
	b.WriteByte('"')
	if m.SharedFrom != "" {
		b.WriteString(` shared_from="`)
		b.WriteString(escapeAttr(m.SharedFrom))
		b.WriteByte('"')
	}
	if o.ShowCharUsage {
		limit := m.CharLimit
		if limit <= 0 {
			limit = blocks.DefaultCharLimit
		}
		b.WriteString(` chars="`)
		b.WriteString(strconv.Itoa(utf8.RuneCountInString(m.Rendered)))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(limit))
		b.WriteByte('"')
	}
	b.WriteString(">\n")
	parts := 0
	part := func(s string) {
		if parts > 0 {
			b.WriteString("\n\n")
		}
		parts++
		writeEscaped(b, s)
	}
	if o.IncludeDescriptions && strings.TrimSpace(m.Description) != "" {
		part(m.Description)
	}
	if o.IncludeSchemas {
		if schemaJSON := blockSchemaJSON(m.Schema); schemaJSON != "" {
			part("Schema (JSON Schema of the value): " + schemaJSON)
		}
	}
	if m.Rendered != "" {
		part(m.Rendered)
	}
	if parts > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("</block:")
	b.WriteString(label)
	b.WriteByte('>')
}

func permissionName(p blocks.Permission) string {
	if p.Valid() {
		return p.String()
	}
	return blocks.ReadOnly.String()
}

// blockSchemaJSON is the JSON Schema of a structured block, or "" for text
// blocks (a string says nothing) and on failure.
func blockSchemaJSON(s schema.Schema) string {
	if s == nil {
		return ""
	}
	if _, ok := schema.Deref(s).(schema.Text); ok {
		return ""
	}
	js, err := json.Marshal(schema.JSONSchema(s))
	if err != nil {
		return ""
	}
	return string(js)
}

// SanitizeLabel is the name a label has in its tag: blocks.TagLabel. A
// valid label (blocks.CheckLabel; the store accepts no other) is its own
// tag name; a label stored before labels were checked has the bytes the
// rule does not allow written as %XX, so no two blocks share a tag name
// and blocks.LabelFromTag (which the memory tools apply) leads back to it.
func SanitizeLabel(label string) string { return blocks.TagLabel(label) }

// escapeAttr escapes an attribute value: & < > " and control characters.
func escapeAttr(s string) string {
	if !strings.ContainsAny(s, `&<>"`) && strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case unicode.IsControl(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// EscapeTags returns s with the "<" of every tag the builder writes —
// "<block:", "<attachment", "<memory", "<recalled_memories",
// "<environment", "<context_", "<prior_context", "<file_context" and their
// closing forms, compared with Unicode case folding — written as "&lt;". The escaping is one-to-one: an "&" that would make
// the text read as such an escape ("&lt;block:", "&amp;lt;block:", ...)
// is itself written as "&amp;", so "</block:x>" and "&lt;/block:x>" stay
// different in the prompt. NUL bytes become U+FFFD.
func EscapeTags(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	writeEscaped(&b, s)
	return b.String()
}

func needsEscape(s string) bool {
	for i := strings.IndexAny(s, "<&\x00"); i >= 0; {
		if s[i] == 0 || tagAt(s, i) || escapeAt(s, i) {
			return true
		}
		j := strings.IndexAny(s[i+1:], "<&\x00")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// writeEscaped writes EscapeTags(s) to b. It finds the next '<', '&' and
// NUL with strings.IndexByte (vectorized)
// and rescans for a byte only once it is passed: strings.IndexAny over a
// set walks byte by byte, and this runs over every block on every build.
func writeEscaped(b *strings.Builder, s string) {
	next := func(c byte, from int) int {
		if k := strings.IndexByte(s[from:], c); k >= 0 {
			return from + k
		}
		return len(s)
	}
	lt, amp, nul := next('<', 0), next('&', 0), next(0, 0)
	pos := 0
	for {
		i := min(lt, amp, nul)
		if i == len(s) {
			b.WriteString(s[pos:])
			return
		}
		b.WriteString(s[pos:i])
		switch {
		case s[i] == 0:
			b.WriteString("\uFFFD")
			nul = next(0, i+1)
		case s[i] == '<':
			if tagAt(s, i) {
				b.WriteString("&lt;")
			} else {
				b.WriteByte('<')
			}
			lt = next('<', i+1)
		default: // '&'
			if escapeAt(s, i) {
				b.WriteString("&amp;")
			} else {
				b.WriteByte('&')
			}
			amp = next('&', i+1)
		}
		pos = i + 1
	}
}

// escapeAt reports whether s[i] (an '&') starts what an escaped tag looks
// like: "&" then any number of "amp;", then "lt;" and a reserved tag.
func escapeAt(s string, i int) bool {
	j := i + 1
	for strings.HasPrefix(s[j:], "amp;") {
		j += len("amp;")
	}
	if !strings.HasPrefix(s[j:], "lt;") {
		return false
	}
	// tagAt looks after the character at its index, here the ';' of "lt;".
	return tagAt(s, j+len("lt;")-1)
}

// tagAt reports whether s[i] (a '<') starts one of the reserved tags.
func tagAt(s string, i int) bool {
	j := i + 1
	if j < len(s) && s[j] == '/' {
		j++
	}
	rest := s[j:]
	for _, t := range reservedTags {
		if hasFoldPrefix(rest, t) {
			return true
		}
	}
	return false
}

// reservedTags are the names (prefixes) of the tags the builder writes
// around memory and context; content may not open or close any of them.
var reservedTags = [...]string{"block:", "attachment", "memory", "recalled_memories", "environment",
	"context_", "prior_context", "file_context"}

// hasFoldPrefix reports whether s starts with prefix under Unicode simple
// case folding (so "BLOCK:" and "bloc\u212a:" with a Kelvin sign match).
func hasFoldPrefix(s, prefix string) bool {
	for _, pr := range prefix {
		if s == "" {
			return false
		}
		r, size := utf8.DecodeRuneInString(s)
		if r != pr && !foldEq(r, pr) {
			return false
		}
		s = s[size:]
	}
	return true
}

func foldEq(a, b rune) bool {
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// writeAttachment renders one attachment.
func writeAttachment(b *strings.Builder, a Attachment) {
	b.WriteString(`<attachment key="`)
	b.WriteString(escapeAttr(a.Key))
	b.WriteString("\">\n")
	if a.Content != "" {
		writeEscaped(b, a.Content)
		b.WriteByte('\n')
	}
	b.WriteString("</attachment>")
}
