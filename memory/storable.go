package memory

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// storableText reports why s cannot be stored as text, or "" when it can.
// Text is stored as valid UTF-8 without NUL bytes on every backend:
// PostgreSQL refuses both, and JSON (tags, metadata, tool calls) would
// silently replace invalid bytes, handing back something other than what
// was written. Block text is held to the same rule by its schema.
func storableText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return "" // the common case, without decoding rune by rune
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Sprintf("invalid UTF-8 (byte %#x at offset %d)", s[i], i)
		case r == 0:
			return fmt.Sprintf("a NUL byte at offset %d", i)
		}
		i += size
	}
	return ""
}

// checkStorable returns an ErrInvalidArgument error naming the agent's
// item, its field and the place inside it when any string in v — keys of
// maps included — is not storable text (see storableText). The message is
// only formatted when there is something to report: this runs on every
// archival entry and message written.
func checkStorable(agent, item, field string, v any) error {
	where, problem := findUnstorable(reflect.ValueOf(v), "", 0)
	if problem == "" {
		return nil
	}
	if field != "" {
		field = ": " + field
	}
	return invalidArg("%s for %q%s%s contains %s; text must be valid UTF-8 without NUL bytes", item, agent, field, where, problem)
}

// findUnstorable walks v for a string storableText refuses, returning where
// it is (a JSON-path-like suffix) and why. Depth is bounded like JSON's.
func findUnstorable(v reflect.Value, at string, depth int) (string, string) {
	if depth > 1000 || !v.IsValid() {
		return "", ""
	}
	switch v.Kind() {
	case reflect.String:
		if p := storableText(v.String()); p != "" {
			return at, p
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return findUnstorable(v.Elem(), at, depth+1)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			if k.Kind() == reflect.String {
				if p := storableText(k.String()); p != "" {
					return at + fmt.Sprintf(" key %q", k.String()), p
				}
			}
			if w, p := findUnstorable(iter.Value(), at+fmt.Sprintf("[%v]", k.Interface()), depth+1); p != "" {
				return w, p
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", "" // bytes: JSON keeps them (base64)
		}
		for i := range v.Len() {
			if w, p := findUnstorable(v.Index(i), at+fmt.Sprintf("[%d]", i), depth+1); p != "" {
				return w, p
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			if w, p := findUnstorable(v.Field(i), at+"."+t.Field(i).Name, depth+1); p != "" {
				return w, p
			}
		}
	}
	return "", ""
}
