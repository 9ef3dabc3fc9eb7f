package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal encodes a schema as JSON with a "kind" discriminator. Field order
// is fixed, so equal schemas encode to equal bytes.
func Marshal(s Schema) ([]byte, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: cannot marshal a nil schema", ErrInvalid)
	}
	return json.Marshal(envelope(s))
}

// Unmarshal decodes a schema written by Marshal and checks it with Check.
func Unmarshal(b []byte) (Schema, error) {
	s, err := decode(b)
	if err != nil {
		return nil, err
	}
	if err := Check(s); err != nil {
		return nil, err
	}
	return s, nil
}

type sectionJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	ReadOnly    bool            `json:"read_only,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

func envelope(s Schema) any {
	switch v := Deref(s).(type) {
	case Text:
		return struct {
			Kind Kind `json:"kind"`
			Text
		}{KindText, v}
	case Map:
		if v.Fields == nil {
			v.Fields = []FieldDef{}
		}
		return struct {
			Kind Kind `json:"kind"`
			Map
		}{KindMap, v}
	case List:
		return struct {
			Kind Kind `json:"kind"`
			List
		}{KindList, v}
	case Log:
		return struct {
			Kind Kind `json:"kind"`
			Log
		}{KindLog, v}
	case Composite:
		secs := make([]any, 0, len(v.Sections))
		for _, sec := range v.Sections {
			var inner any
			if sec.Schema != nil {
				inner = envelope(sec.Schema)
			}
			secs = append(secs, struct {
				Name        string `json:"name"`
				Description string `json:"description,omitempty"`
				ReadOnly    bool   `json:"read_only,omitempty"`
				Schema      any    `json:"schema"`
			}{sec.Name, sec.Description, sec.ReadOnly, inner})
		}
		return struct {
			Kind     Kind  `json:"kind"`
			Sections []any `json:"sections"`
		}{KindComposite, secs}
	}
	return nil
}

func decode(b []byte) (Schema, error) {
	var head struct {
		Kind Kind `json:"kind"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: schema JSON: %v", ErrInvalid, err)
	}
	dec := func(dst any) error {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(dst); err != nil {
			return fmt.Errorf("%w: %s schema JSON: %v", ErrInvalid, head.Kind, err)
		}
		return nil
	}
	switch head.Kind {
	case KindText:
		var t Text
		if err := dec(&t); err != nil {
			return nil, err
		}
		return t, nil
	case KindMap:
		var m Map
		if err := dec(&m); err != nil {
			return nil, err
		}
		if len(m.Fields) == 0 {
			m.Fields = nil // one canonical form for "no fields"
		}
		return m, nil
	case KindList:
		var l List
		if err := dec(&l); err != nil {
			return nil, err
		}
		return l, nil
	case KindLog:
		var l Log
		if err := dec(&l); err != nil {
			return nil, err
		}
		if len(l.Entry) == 0 {
			l.Entry = nil
		}
		return l, nil
	case KindComposite:
		var raw struct {
			Sections []sectionJSON `json:"sections"`
		}
		if err := dec(&raw); err != nil {
			return nil, err
		}
		c := Composite{Sections: make([]Section, 0, len(raw.Sections))}
		for _, rs := range raw.Sections {
			if len(rs.Schema) == 0 || string(rs.Schema) == "null" {
				return nil, invalid(rs.Name, "section has no schema")
			}
			inner, err := decode(rs.Schema)
			if err != nil {
				return nil, err
			}
			c.Sections = append(c.Sections, Section{Name: rs.Name, Description: rs.Description, ReadOnly: rs.ReadOnly, Schema: inner})
		}
		return c, nil
	case "":
		return nil, fmt.Errorf("%w: schema JSON has no \"kind\"", ErrInvalid)
	}
	return nil, fmt.Errorf("%w: unknown schema kind %q", ErrInvalid, head.Kind)
}
