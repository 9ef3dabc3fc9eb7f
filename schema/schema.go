package schema

import "errors"

// Kind names a schema type; it is the JSON discriminator.
type Kind string

// The schema kinds.
const (
	KindText      Kind = "text"
	KindMap       Kind = "map"
	KindList      Kind = "list"
	KindLog       Kind = "log"
	KindComposite Kind = "composite"
)

// Schema is one of Text, Map, List, Log or Composite (pointer or value).
type Schema interface {
	// Kind reports the schema type.
	Kind() Kind
	// Validate checks a whole value for this schema: a string for Text, a
	// map[string]any for Map, a []any of items for List, one entry
	// (map[string]any) for Log, a map of section name to section value for
	// Composite.
	Validate(value any) error
	// check validates the definition itself.
	check(path string) error
}

// Viewport shows a window of a long Text: Lines lines starting at line Start
// (1-based). The rendering adds a line such as "[lines 11-30 of 200]".
type Viewport struct {
	Start int `json:"start"`
	Lines int `json:"lines"`
}

// Text is free text.
type Text struct {
	Viewport *Viewport `json:"viewport,omitempty"`
}

// Map is a set of named, typed fields rendered in definition order.
type Map struct {
	Fields []FieldDef `json:"fields"`
}

// List is an ordered list of items of one type.
type List struct {
	// Item is the type of every item; the zero value means FieldString.
	Item FieldType `json:"item,omitempty"`
	// MaxItems caps the number of items; 0 means unlimited.
	MaxItems int `json:"max_items,omitempty"`
	// Checkbox renders items as "[ ] item" / "[x] item" and gives each a
	// checked state.
	Checkbox bool `json:"checkbox,omitempty"`
}

// Log is an append-only list of timestamped entries. Each entry has a
// "timestamp" and a "message"; Entry declares further fields.
type Log struct {
	// DisplayLimit is how many newest entries Render shows; 0 means all.
	DisplayLimit int `json:"display_limit,omitempty"`
	// Entry declares fields beyond timestamp and message.
	Entry []FieldDef `json:"entry,omitempty"`
	// Retention is how many entries the store keeps in the document before
	// rotating older ones out (to archival memory); a store also rotates to
	// make room when an append would pass the block's character limit. 0
	// means keep all (and a full block refuses appends).
	Retention int `json:"retention,omitempty"`
}

// Composite is a block made of named sections, each with its own schema.
type Composite struct {
	Sections []Section `json:"sections"`
}

// Section is one part of a Composite.
type Section struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Schema      Schema `json:"-"`
}

func (Text) Kind() Kind      { return KindText }
func (Map) Kind() Kind       { return KindMap }
func (List) Kind() Kind      { return KindList }
func (Log) Kind() Kind       { return KindLog }
func (Composite) Kind() Kind { return KindComposite }

// ItemType is the type of the list's items with the default applied.
func (l List) ItemType() FieldType {
	if l.Item == "" {
		return FieldString
	}
	return l.Item
}

// Field returns the field definition with the given name.
func (m Map) Field(name string) (FieldDef, bool) {
	for _, f := range m.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return FieldDef{}, false
}

// Field returns the extra entry field with the given name.
func (l Log) Field(name string) (FieldDef, bool) {
	for _, f := range l.Entry {
		if f.Name == name {
			return f, true
		}
	}
	return FieldDef{}, false
}

// Section returns the section with the given name.
func (c Composite) Section(name string) (Section, bool) {
	for _, s := range c.Sections {
		if s.Name == name {
			return s, true
		}
	}
	return Section{}, false
}

// Check validates a schema definition: known kinds and field types, unique
// non-empty names, defaults that fit their fields, no nested composites.
func Check(s Schema) error {
	if s == nil {
		return &FieldError{Reason: "schema is nil", Err: ErrInvalid, Definition: true}
	}
	err := s.check("")
	if fe := (*FieldError)(nil); errors.As(err, &fe) {
		fe.Definition = true // the schema is at fault, not a value
	}
	return err
}

// Deref returns the value form of a schema given as a pointer, so callers can
// switch on value types only.
func Deref(s Schema) Schema {
	switch v := s.(type) {
	case *Text:
		return *v
	case *Map:
		return *v
	case *List:
		return *v
	case *Log:
		return *v
	case *Composite:
		return *v
	}
	return s
}
