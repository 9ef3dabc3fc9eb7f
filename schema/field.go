package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// FieldType is the type of a Map field, a Log entry field or a List item.
type FieldType string

// Field types. Text fields are collaborative text (concurrent edits merge
// character-wise); String fields are replaced as a whole. Counter fields are
// CRDT counters whose concurrent increments add up.
const (
	FieldText      FieldType = "text"
	FieldString    FieldType = "string"
	FieldNumber    FieldType = "number"
	FieldInteger   FieldType = "integer"
	FieldBoolean   FieldType = "boolean"
	FieldList      FieldType = "list"
	FieldCounter   FieldType = "counter"
	FieldTimestamp FieldType = "timestamp"
	FieldObject    FieldType = "object"
)

func (t FieldType) known() bool {
	switch t {
	case FieldText, FieldString, FieldNumber, FieldInteger, FieldBoolean,
		FieldList, FieldCounter, FieldTimestamp, FieldObject:
		return true
	}
	return false
}

// FieldDef declares one field.
type FieldDef struct {
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Type        FieldType `json:"type"`
	Required    bool      `json:"required,omitempty"`
	// ReadOnly fields bind agents whatever the block permission; only the
	// system may write them.
	ReadOnly bool `json:"read_only,omitempty"`
	// Default is the initial value, in the field's canonical Go form (see
	// Coerce). After a JSON round trip it is coerced back to that form.
	Default any `json:"default,omitempty"`
}

// UnmarshalJSON restores Default to its canonical Go type.
func (f *FieldDef) UnmarshalJSON(b []byte) error {
	type plain FieldDef
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = FieldDef(p)
	if f.Default != nil && f.Type.known() {
		v, err := Coerce(f.Type, f.Default)
		if err != nil {
			return fmt.Errorf("%w: default of field %q: %v", ErrInvalid, f.Name, err)
		}
		f.Default = v
	}
	return nil
}

// MarshalJSON writes Default in a JSON-stable form (timestamps as RFC3339).
func (f FieldDef) MarshalJSON() ([]byte, error) {
	type plain FieldDef
	p := plain(f)
	if t, ok := p.Default.(time.Time); ok {
		p.Default = t.UTC().Format(time.RFC3339Nano)
	}
	return json.Marshal(p)
}

func (f FieldDef) check(path string) error {
	p := joinPath(path, f.Name)
	if strings.TrimSpace(f.Name) == "" {
		return invalid(path, "field with empty name")
	}
	if !f.Type.known() {
		return invalid(p, "unknown field type %q (want text, string, number, integer, boolean, list, counter, timestamp or object)", f.Type)
	}
	if f.Default != nil {
		if _, err := Coerce(f.Type, f.Default); err != nil {
			return invalid(p, "default: %v", err)
		}
	}
	return nil
}

// Validate checks one value for this field. A nil value is accepted only for
// optional fields.
func (f FieldDef) Validate(v any) error {
	_, err := f.coerceAt("", v)
	return err
}

func (f FieldDef) coerceAt(path string, v any) (any, error) {
	p := joinPath(path, f.Name)
	if v == nil {
		if f.Required {
			return nil, invalid(p, "required field is missing")
		}
		return nil, nil
	}
	out, err := Coerce(f.Type, v)
	if err != nil {
		return nil, invalid(p, "%v", err)
	}
	return out, nil
}

// Coerce converts v to the canonical Go form of type t:
//
//	text, string  → string (valid UTF-8)
//	number        → float64 (finite)
//	integer       → int64 (whole numbers from any numeric type)
//	boolean       → bool
//	list          → []any of scalars (string, float64, int64, bool)
//	counter       → int64
//	timestamp     → time.Time in UTC (also from an RFC 3339 string)
//	object        → map[string]any of JSON-like values
//
// The error does not name a field; Validate adds that.
func Coerce(t FieldType, v any) (any, error) {
	switch t {
	case FieldText, FieldString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want %s, got %s", t, typeName(v))
		}
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%s is not valid UTF-8", t)
		}
		return s, nil
	case FieldNumber:
		f, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("want number, got %s", typeName(v))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number must be finite")
		}
		return f, nil
	case FieldInteger, FieldCounter:
		f, ok := toFloat(v)
		if i, isInt := toInt(v); isInt {
			return i, nil
		}
		if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return nil, fmt.Errorf("want %s (whole number), got %s", t, typeName(v))
		}
		return int64(f), nil
	case FieldBoolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("want boolean, got %s", typeName(v))
		}
		return b, nil
	case FieldTimestamp:
		switch x := v.(type) {
		case time.Time:
			return x.UTC(), nil
		case string:
			ts, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, fmt.Errorf("want RFC 3339 timestamp, got %q", x)
			}
			return ts.UTC(), nil
		}
		return nil, fmt.Errorf("want timestamp, got %s", typeName(v))
	case FieldList:
		items, ok := toSlice(v)
		if !ok {
			return nil, fmt.Errorf("want list, got %s", typeName(v))
		}
		out := make([]any, 0, len(items))
		for i, it := range items {
			s, err := coerceScalar(it)
			if err != nil {
				return nil, fmt.Errorf("item %d: %v", i, err)
			}
			out = append(out, s)
		}
		return out, nil
	case FieldObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want object, got %s", typeName(v))
		}
		out, err := coerceJSONValue(m, 0)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown field type %q", t)
}

// CoerceScalar converts v to a list item value: string, float64, int64 or bool.
func coerceScalar(v any) (any, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return nil, fmt.Errorf("string is not valid UTF-8")
		}
		return x, nil
	case bool:
		return x, nil
	}
	if i, ok := toInt(v); ok {
		return i, nil
	}
	if f, ok := toFloat(v); ok {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number must be finite")
		}
		return f, nil
	}
	return nil, fmt.Errorf("want string, number or boolean, got %s", typeName(v))
}

const maxObjectDepth = 16

func coerceJSONValue(v any, depth int) (any, error) {
	if depth > maxObjectDepth {
		return nil, fmt.Errorf("object nested deeper than %d levels", maxObjectDepth)
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("object key is not valid UTF-8")
			}
			c, err := coerceJSONValue(x[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", k, err)
			}
			out[k] = c
		}
		return out, nil
	}
	if s, ok := toSlice(v); ok {
		out := make([]any, 0, len(s))
		for i, it := range s {
			c, err := coerceJSONValue(it, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %v", i, err)
			}
			out = append(out, c)
		}
		return out, nil
	}
	return coerceScalar(v)
}

func toSlice(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	if i, ok := toInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case []any, []string:
		return "list"
	case time.Time:
		return "timestamp"
	}
	if _, ok := toFloat(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
