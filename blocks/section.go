package blocks

import "github.com/engram-go/engram/schema"

// Section addresses one section of a Composite block: its methods are the
// Document's typed operations and reads, applied to that section and
// judged as the Document's are (schema, permission, approvals, character
// limit, the store's Writer). A section marked read-only in the schema
// binds agents whatever their permission.
//
// The section called "" is the block itself: doc.Section("").SetText is
// doc.SetText. A caller holding an optional section name (a tool argument,
// Edit.Section in package memory) can therefore address both kinds of
// block in one way; the Document's own methods on a Composite block fail
// with ErrWrongSchema asking for a section.
//
// A Section is a small value; it carries the Document view it came from
// (accessor, permission, context), so doc.WithContext(ctx).Section(name)
// writes with ctx. Making one checks nothing: an operation on a section the
// block does not have fails with ErrWrongSchema naming the block and the
// section.
type Section struct {
	d    *Document
	name string
}

// Section returns the section called name of a Composite block ("" is the
// whole block). See the Section type.
func (d *Document) Section(name string) Section { return Section{d: d, name: name} }

// Name is the section's name ("" for the whole block).
func (s Section) Name() string { return s.name }

// Document is the view the section was addressed through.
func (s Section) Document() *Document { return s.d }

// Value returns a copy of the section's value, in the form Value returns
// for a block of the section's schema.
func (s Section) Value() (any, error) {
	if s.name == "" {
		return s.d.Value()
	}
	sc, err := s.d.nodeSchema(s.name)
	if err != nil {
		return nil, err
	}
	return s.d.nodeValue(s.name, sc.Kind())
}

// ---- Text ----

// SetText replaces the text of a Text section (see Document.SetText).
func (s Section) SetText(text string, actor Actor) error {
	return s.d.setText(s.name, text, actor)
}

// AppendText appends to a Text section (an appending operation).
func (s Section) AppendText(text string, actor Actor) error {
	return s.d.appendText(s.name, text, actor)
}

// ReplaceText replaces the first occurrence of old with new in a Text
// section (see Document.ReplaceText: no occurrence is an error wrapping
// ErrNoMatch).
func (s Section) ReplaceText(old, new string, actor Actor) (bool, error) {
	return s.d.replaceText(s.name, old, new, actor)
}

// InsertLine inserts a line into a Text section (see Document.InsertLine).
func (s Section) InsertLine(n int, text string, actor Actor) error {
	return s.d.insertLine(s.name, n, text, actor)
}

// Text returns the content of a Text section.
func (s Section) Text() (string, error) { return s.d.text(s.name) }

// ---- Map ----

// SetField sets a field of a Map section (see Document.SetField).
func (s Section) SetField(field string, value any, actor Actor) error {
	return s.d.setField(s.name, field, value, actor, false)
}

// SetTextField sets a field of type text of a Map section; it fails on
// fields of other types.
func (s Section) SetTextField(field, text string, actor Actor) error {
	return s.d.setField(s.name, field, text, actor, true)
}

// AppendToListField appends one item to a list field of a Map section (an
// appending operation).
func (s Section) AppendToListField(field string, item any, actor Actor) error {
	return s.d.appendToListField(s.name, field, item, actor)
}

// IncrementCounter adds delta to a counter field of a Map section.
func (s Section) IncrementCounter(field string, delta int64, actor Actor) error {
	return s.d.incrementCounter(s.name, field, delta, actor)
}

// Field returns one field of a Map section (nil when unset).
func (s Section) Field(field string) (any, error) { return s.d.field(s.name, field) }

// ---- List ----

// PushItem appends an item to a List section (an appending operation).
func (s Section) PushItem(item any, actor Actor) error {
	return s.d.pushItem(s.name, item, actor)
}

// InsertItem inserts an item into a List section before 0-based index i
// (i = len appends).
func (s Section) InsertItem(i int, item any, actor Actor) error {
	return s.d.insertItem(s.name, i, item, actor)
}

// DeleteItem removes the item at 0-based index i of a List section.
func (s Section) DeleteItem(i int, actor Actor) error {
	return s.d.deleteItem(s.name, i, actor)
}

// CheckItem sets the checked state of item i of a checkbox List section.
func (s Section) CheckItem(i int, checked bool, actor Actor) error {
	return s.d.checkItem(s.name, i, checked, actor)
}

// Items returns the items of a List section.
func (s Section) Items() ([]Item, error) { return s.d.items(s.name) }

// ---- Log ----

// AppendLogEntry appends an entry to a Log section (see
// Document.AppendLogEntry).
func (s Section) AppendLogEntry(entry map[string]any, actor Actor) error {
	return s.d.appendLogEntry(s.name, entry, actor)
}

// LogEntries returns up to limit entries of a Log section, newest first
// (limit <= 0: all).
func (s Section) LogEntries(limit int) ([]LogEntry, error) {
	return s.d.logEntries(s.name, limit)
}

// SetTextDeletes is how many characters SetText(text) would delete of
// the section's text, one automerge operation each (a whole-value write
// keeps what the two share; see diffSplices). 0 when the section holds
// no text.
func (s Section) SetTextDeletes(text string) int {
	cur, err := s.d.text(s.name)
	if err != nil {
		return 0
	}
	return splicedOut(cur, text)
}

// SetFieldDeletes is how many characters (a text field) or items (a
// list field) SetField(field, value) would delete of the field's value
// in place, one automerge operation each; 0 for other fields, a value
// the field refuses, or nil (the field's key goes: one operation).
func (s Section) SetFieldDeletes(field string, value any) int {
	old, err := s.d.field(s.name, field)
	if err != nil || value == nil {
		return 0
	}
	m, _ := s.d.nodeSchema(s.name)
	v, err := schema.Deref(m).(schema.Map).CoerceField(field, value)
	if err != nil || v == nil {
		return 0
	}
	switch o := old.(type) {
	case string:
		n, _ := v.(string)
		return splicedOut(o, n)
	case []any:
		n, _ := v.([]any)
		p, sfx := listAffixes(o, n)
		return len(o) - p - sfx
	}
	return 0
}
