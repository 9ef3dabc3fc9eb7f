package schema

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Reserved log entry fields, present in every entry.
const (
	LogTimestamp = "timestamp"
	LogMessage   = "message"
)

func (t Text) check(path string) error {
	if t.Viewport != nil {
		if t.Viewport.Start < 1 {
			return invalid(joinPath(path, "viewport.start"), "must be at least 1, got %d", t.Viewport.Start)
		}
		if t.Viewport.Lines < 1 {
			return invalid(joinPath(path, "viewport.lines"), "must be at least 1, got %d", t.Viewport.Lines)
		}
	}
	return nil
}

// Validate checks that value is a valid UTF-8 string.
func (t Text) Validate(value any) error {
	return validateText("", value)
}

func validateText(path string, value any) error {
	s, ok := value.(string)
	if !ok {
		return invalid(path, "text block wants a string, got %s", typeName(value))
	}
	if !utf8.ValidString(s) {
		return invalid(path, "text is not valid UTF-8")
	}
	return nil
}

func checkFields(path string, fields []FieldDef, reserved ...string) error {
	seen := make(map[string]bool, len(fields))
	for _, r := range reserved {
		seen[r] = true
	}
	for _, f := range fields {
		if err := f.check(path); err != nil {
			return err
		}
		if seen[f.Name] {
			return invalid(joinPath(path, f.Name), "duplicate or reserved field name")
		}
		seen[f.Name] = true
	}
	return nil
}

func (m Map) check(path string) error { return checkFields(path, m.Fields) }

// Validate checks a whole map value: every key a declared field, every
// required field present, every value of its field's type.
func (m Map) Validate(value any) error {
	_, err := m.coerceAll("", value)
	return err
}

// CoerceField checks one field's value and returns its canonical form.
func (m Map) CoerceField(name string, v any) (any, error) {
	f, ok := m.Field(name)
	if !ok {
		return nil, invalid(name, "unknown field (known: %s)", fieldNames(m.Fields))
	}
	if v == nil && f.Required {
		return nil, invalid(name, "required field cannot be cleared")
	}
	return f.coerceAt("", v)
}

func (m Map) coerceAll(path string, value any) (map[string]any, error) {
	in, ok := value.(map[string]any)
	if !ok {
		return nil, invalid(path, "map block wants an object, got %s", typeName(value))
	}
	for k := range in {
		if _, ok := m.Field(k); !ok {
			return nil, invalid(joinPath(path, k), "unknown field (known: %s)", fieldNames(m.Fields))
		}
	}
	out := make(map[string]any, len(in))
	for _, f := range m.Fields {
		v, present := in[f.Name]
		if !present && f.Default != nil {
			v = f.Default
		}
		c, err := f.coerceAt(path, v)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out[f.Name] = c
		}
	}
	return out, nil
}

func fieldNames(fs []FieldDef) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (l List) check(path string) error {
	switch l.ItemType() {
	case FieldText, FieldString, FieldNumber, FieldInteger, FieldBoolean, FieldTimestamp:
	default:
		return invalid(joinPath(path, "item"), "list items cannot be of type %q", l.Item)
	}
	if l.MaxItems < 0 {
		return invalid(joinPath(path, "max_items"), "must not be negative")
	}
	return nil
}

// Validate checks a whole list value ([]any) against the item type and
// MaxItems.
func (l List) Validate(value any) error {
	items, ok := toSlice(value)
	if !ok {
		return invalid("", "list block wants a list, got %s", typeName(value))
	}
	if l.MaxItems > 0 && len(items) > l.MaxItems {
		return invalid("", "%d items exceed max_items %d", len(items), l.MaxItems)
	}
	for i, it := range items {
		if _, err := l.CoerceItem(it); err != nil {
			return invalid(fmt.Sprintf("[%d]", i), "%v", unwrapReason(err))
		}
	}
	return nil
}

// CoerceItem checks one item and returns its canonical form.
func (l List) CoerceItem(v any) (any, error) {
	c, err := Coerce(l.ItemType(), v)
	if err != nil {
		return nil, invalid("item", "%v", err)
	}
	return c, nil
}

func (l Log) check(path string) error {
	if l.DisplayLimit < 0 {
		return invalid(joinPath(path, "display_limit"), "must not be negative")
	}
	if l.Retention < 0 {
		return invalid(joinPath(path, "retention"), "must not be negative")
	}
	for _, f := range l.Entry {
		if f.Type == FieldCounter || f.Type == FieldText {
			return invalid(joinPath(path, f.Name), "log entries are immutable; %q fields are not allowed", f.Type)
		}
	}
	return checkFields(path, l.Entry, LogTimestamp, LogMessage)
}

// Validate checks one log entry (map[string]any with "message", optional
// "timestamp" and the declared entry fields).
func (l Log) Validate(value any) error {
	_, err := l.CoerceEntry(value)
	return err
}

// CoerceEntry checks one entry and returns its canonical form. A missing
// timestamp stays missing (the block fills it in at append time).
func (l Log) CoerceEntry(value any) (map[string]any, error) {
	in, ok := value.(map[string]any)
	if !ok {
		return nil, invalid("", "log entry wants an object, got %s", typeName(value))
	}
	out := make(map[string]any, len(in))
	msg, ok := in[LogMessage]
	if !ok {
		return nil, invalid(LogMessage, "required field is missing")
	}
	m, err := Coerce(FieldString, msg)
	if err != nil {
		return nil, invalid(LogMessage, "%v", err)
	}
	out[LogMessage] = m
	if ts, ok := in[LogTimestamp]; ok && ts != nil {
		t, err := Coerce(FieldTimestamp, ts)
		if err != nil {
			return nil, invalid(LogTimestamp, "%v", err)
		}
		out[LogTimestamp] = t.(time.Time)
	}
	for k := range in {
		if k == LogMessage || k == LogTimestamp {
			continue
		}
		if _, ok := l.Field(k); !ok {
			known := "timestamp, message"
			if len(l.Entry) > 0 {
				known += ", " + fieldNames(l.Entry)
			}
			return nil, invalid(k, "unknown log entry field (known: %s)", known)
		}
	}
	for _, f := range l.Entry {
		v, present := in[f.Name]
		if !present && f.Default != nil {
			v = f.Default
		}
		c, err := f.coerceAt("", v)
		if err != nil {
			return nil, err
		}
		if c != nil {
			out[f.Name] = c
		}
	}
	return out, nil
}

func (c Composite) check(path string) error {
	if len(c.Sections) == 0 {
		return invalid(path, "composite needs at least one section")
	}
	seen := map[string]bool{}
	for _, s := range c.Sections {
		p := joinPath(path, s.Name)
		if strings.TrimSpace(s.Name) == "" {
			return invalid(path, "section with empty name")
		}
		if seen[s.Name] {
			return invalid(p, "duplicate section name")
		}
		seen[s.Name] = true
		if s.Schema == nil {
			return invalid(p, "section has no schema")
		}
		if s.Schema.Kind() == KindComposite {
			return invalid(p, "composite sections cannot nest composites")
		}
		if err := s.Schema.check(p); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a map of section name to that section's value.
func (c Composite) Validate(value any) error {
	in, ok := value.(map[string]any)
	if !ok {
		return invalid("", "composite block wants an object of sections, got %s", typeName(value))
	}
	for name, v := range in {
		s, ok := c.Section(name)
		if !ok {
			return invalid(name, "unknown section")
		}
		if err := s.Schema.Validate(v); err != nil {
			return prefixed(name, err)
		}
	}
	return nil
}

// prefixed puts a section name in front of a FieldError's path.
func prefixed(prefix string, err error) error {
	if fe, ok := err.(*FieldError); ok {
		cp := *fe
		cp.Field = joinPath(prefix, fe.Field)
		return &cp
	}
	return fmt.Errorf("section %q: %w", prefix, err)
}

func unwrapReason(err error) string {
	if fe, ok := err.(*FieldError); ok {
		return fe.Reason
	}
	return err.Error()
}
