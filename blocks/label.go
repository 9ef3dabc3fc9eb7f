package blocks

import (
	"fmt"
	"strings"
)

// SkillLabelPrefix starts the label of a skill: a Working block holding
// instructions the agent loads on demand (workspace imports
// skills/NAME/SKILL.md as "skill.NAME"). Unless pinned, a skill's body is
// not rendered: the builder lists skills by name and description, and the
// memory tools' load_skill returns the body.
const SkillLabelPrefix = "skill."

// MaxLabelLen is the longest block label, in bytes.
const MaxLabelLen = 64

// LabelRule describes the labels CheckLabel accepts, for error messages
// and tool descriptions.
const LabelRule = "1-64 ASCII letters, digits, '_', '-' or '.', starting with a letter, digit or '_'"

// CheckLabel reports whether label is a valid block label: LabelRule. The
// rule makes a label its own tag name (<block:LABEL>), so what the model
// sees is exactly what it passes back to the memory tools, and no two
// blocks can look alike in a prompt. The error wraps ErrInvalidLabel and
// names the label and the rule.
func CheckLabel(label string) error {
	if label == "" {
		return fmt.Errorf("%w: empty label; a label is %s", ErrInvalidLabel, LabelRule)
	}
	if len(label) > MaxLabelLen {
		return fmt.Errorf("%w: label %q is %d bytes long; a label is %s", ErrInvalidLabel, label, len(label), LabelRule)
	}
	if c := label[0]; c == '-' || c == '.' {
		return fmt.Errorf("%w: label %q starts with %q; a label is %s", ErrInvalidLabel, label, c, LabelRule)
	}
	for i := 0; i < len(label); i++ {
		if !labelByte(label[i]) {
			return fmt.Errorf("%w: label %q has %q at byte %d; a label is %s (e.g. %q)",
				ErrInvalidLabel, label, rune(label[i]), i, LabelRule, SuggestLabel(label))
		}
	}
	return nil
}

func labelByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// SuggestLabel maps any name (a file or skill name, say) onto a valid
// label: disallowed characters become '_', runs of them one '_', and the
// result is cut to MaxLabelLen. Different names can map to one label;
// callers that import many names must check for clashes.
func SuggestLabel(name string) string {
	var b strings.Builder
	under := false
	for i := 0; i < len(name) && b.Len() < MaxLabelLen; i++ {
		c := name[i]
		if labelByte(c) && !(b.Len() == 0 && (c == '-' || c == '.')) {
			b.WriteByte(c)
			under = false
			continue
		}
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// TagLabel is the name a label has inside a tag: a valid label as it is;
// a label stored before labels were checked (CheckLabel) with every byte
// the rule does not allow written as %XX. '%' never occurs in a valid
// label, so the mapping is one-to-one and LabelFromTag inverts it.
func TagLabel(label string) string {
	if CheckLabel(label) == nil {
		return label
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(label); i++ {
		c := label[i]
		if labelByte(c) && !(i == 0 && (c == '-' || c == '.')) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	if label == "" {
		return "%"
	}
	return b.String()
}

// LabelFromTag inverts TagLabel: the stored label of a name as it appears
// in a <block:NAME> tag (and as a model passes it back).
func LabelFromTag(name string) string {
	if !strings.Contains(name, "%") {
		return name
	}
	if name == "%" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] == '%' && i+2 < len(name) {
			if v, ok := unhex(name[i+1]); ok {
				if w, ok := unhex(name[i+2]); ok {
					b.WriteByte(v<<4 | w)
					i += 2
					continue
				}
			}
		}
		b.WriteByte(name[i])
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
