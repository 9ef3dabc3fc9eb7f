package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// snakeJSON is v for --json output with the library's untagged Go field
// names in snake_case ("CreatedAt" → "created_at"), as the CLI's own
// fields are: tagged fields keep their tag, map keys (data) are kept, and
// values that marshal themselves (time.Time, json.RawMessage) are theirs.
func snakeJSON(v any) any { return snakeValue(reflect.ValueOf(v)) }

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

func snakeValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return nil
	}
	if t := v.Type(); v.CanInterface() && (t.Implements(jsonMarshaler) || t.Implements(textMarshaler)) {
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		return json.RawMessage(b)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return snakeValue(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		snakeFields(v, m)
		return m
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b, _ := json.Marshal(v.Interface())
			return json.RawMessage(b)
		}
		out := make([]any, v.Len())
		for i := range out {
			out[i] = snakeValue(v.Index(i))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			out[fmt.Sprint(it.Key().Interface())] = snakeValue(it.Value())
		}
		return out
	}
	if v.CanInterface() {
		return v.Interface()
	}
	return nil
}

// snakeFields puts struct v's fields in m, embedded structs' inline.
func snakeFields(v reflect.Value, m map[string]any) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv, ft = fv.Elem(), ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !ft.Implements(jsonMarshaler) {
				snakeFields(fv, m)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = snakeCase(f.Name)
		}
		if strings.Contains(","+opts+",", ",omitempty,") && fv.IsZero() && fv.Kind() != reflect.Struct {
			continue
		}
		m[name] = snakeValue(fv)
	}
}

// snakeCase is a Go name in snake_case: "ID" → "id", "CreatedAt" →
// "created_at", "StablePrefixHash" → "stable_prefix_hash", "BM25" → "bm25".
func snakeCase(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prev := r[i-1]
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) && !unicode.IsUpper(r[max(i-2, 0)]) || unicode.IsUpper(prev) && nextLower {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
