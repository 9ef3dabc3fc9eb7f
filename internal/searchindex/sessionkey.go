package searchindex

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The text cache holds each row's metadata object as the engine wrote it
// (textBody.meta), from which a row's session key is read without SQL:
// an archival entry's conversation key (metaConversation) and a message's
// batch (metaMember of "batch_id").

// conversationKeys are the metadata keys that name an archival entry's
// conversation, in the order the engines' key looks them up (SQLite
// migration 0028, PostgreSQL 0025).
var conversationKeys = [...]string{"conversation", "conversation_id", "session", "session_id", "thread", "thread_id"}

// metaConversation is the conversation key of an entry whose metadata
// object is meta: the JSON text of the first of conversationKeys whose
// value is a string other than "" or a number, as the engine's key holds
// it (the string "3" and the number 3 differ). named is false when meta
// names none. read is false when the engine's key could differ from the
// text as written, and the key is then the engine's to say: meta is not a
// JSON object this scanner reads (a hand edit can leave SQLite's binary
// JSONB there), names one of the keys twice (which one counts is the
// engine's), the value is one keyText leaves to the engine, a name is
// written with escapes (both engines read "sess\u0069on" as "session"),
// or the value is over 1 KiB (PostgreSQL keys it by its hash). jsonb: the
// engine keys jsonb's text (PostgreSQL), not the value as written.
func metaConversation(meta string, jsonb bool) (key string, named, read bool) {
	best := len(conversationKeys)
	var seen [len(conversationKeys)]bool
	plain := true
	bad := topMembers(meta, func(name, value string) {
		if strings.IndexByte(name, '\\') >= 0 {
			// Both engines match a name by its decoded text:
			// "sess\u0069on" is "session".
			plain = false
			return
		}
		for i, k := range conversationKeys {
			if !isName(name, k) {
				continue
			}
			if seen[i] {
				plain = false
			}
			seen[i] = true
			if i < best && ((value[0] == '"' && value != `""`) || value[0] == '-' || (value[0] >= '0' && value[0] <= '9')) {
				best, key = i, value
			}
			return
		}
	})
	if bad || !plain {
		return "", false, false
	}
	if best == len(conversationKeys) {
		return "", false, true
	}
	if key, read = keyText(key, jsonb); !read || len(key) > 1024 {
		// PostgreSQL keys a value over 1 KiB by its hash.
		return "", false, false
	}
	return key, true, true
}

// keyText is the key an engine makes of the JSON string or number v, the
// value as written: SQLite keeps it as written (escapes and all), except
// a raw control character, which it writes escaped; PostgreSQL keeps
// jsonb's text (jsonb: escapes decoded, then written as jsonb writes
// strings). ok is false for a value whose key is the engine's to say: a
// number with an exponent or a negative zero (PostgreSQL writes 1e2 as
// 100, -0 as 0), a string with a raw control character.
func keyText(v string, jsonb bool) (string, bool) {
	if v[0] != '"' {
		nonzero := false
		for i := 0; i < len(v); i++ {
			switch c := v[i]; {
			case c == 'e' || c == 'E' || c == '+':
				return "", false
			case c >= '1' && c <= '9':
				nonzero = true
			}
		}
		return v, v[0] != '-' || nonzero
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", false
	}
	if strings.IndexByte(v, '\\') < 0 {
		return v, true
	}
	if !strictEscapes(v) {
		// SQLite also reads JSON5's escapes (\0, \x41, \') and writes
		// them as JSON's.
		return "", false
	}
	if !jsonb {
		return v, true
	}
	if !utf8.ValidString(v) {
		return "", false
	}
	var text string
	if err := json.Unmarshal([]byte(v), &text); err != nil || strings.ContainsRune(text, 0) || strings.ContainsRune(text, utf8.RuneError) {
		// (jsonb refuses \u0000 and a lone surrogate.)
		return "", false
	}
	return jsonbString(text), true
}

// strictEscapes reports whether every escape in the JSON string v is one
// of strict JSON's.
func strictEscapes(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		if i+1 >= len(v) {
			return false
		}
		i++
		switch v[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+4 >= len(v) {
				return false
			}
			for _, c := range []byte(v[i+1 : i+5]) {
				if !strings.ContainsRune("0123456789abcdefABCDEF", rune(c)) {
					return false
				}
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

// jsonbString is s as PostgreSQL's jsonb writes a string: quoted, with
// the quote, the backslash and control characters escaped, the rest as
// it is.
func jsonbString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// metaMember is the JSON text of the first top-level member name of the
// object meta (name unquoted, and written without escapes).
func metaMember(meta, name string) (value string, ok bool) {
	err := topMembers(meta, func(n, v string) {
		if !ok && isName(n, name) {
			value, ok = v, true
		}
	})
	return value, ok && !err
}

// isName reports whether the member name quoted (as written) is name.
func isName(quoted, name string) bool {
	return len(quoted) == len(name)+2 && quoted[1:len(quoted)-1] == name
}

// topMembers calls fn with each top-level member of the JSON object s,
// its name and value as written (names with their quotes). It reports
// true when s is not a JSON object it can read; members met before the
// fault have been passed.
func topMembers(s string, fn func(name, value string)) (bad bool) {
	i := skipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return true
	}
	i = skipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return false
	}
	for i < len(s) {
		end, ok := skipString(s, i)
		if !ok {
			return true
		}
		name := s[i:end]
		i = skipSpace(s, end)
		if i >= len(s) || s[i] != ':' {
			return true
		}
		i = skipSpace(s, i+1)
		vend, ok := skipValue(s, i)
		if !ok {
			return true
		}
		fn(name, s[i:vend])
		i = skipSpace(s, vend)
		if i >= len(s) {
			return true
		}
		switch s[i] {
		case ',':
			i = skipSpace(s, i+1)
		case '}':
			return false
		default:
			return true
		}
	}
	return true
}

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the JSON string starting at s[i].
func skipString(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '"' {
		return 0, false
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the end of the JSON value starting at s[i].
func skipValue(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				end, ok := skipString(s, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	default:
		j := i
		for j < len(s) && !strings.ContainsRune(",}] \t\n\r", rune(s[j])) {
			j++
		}
		// Strict JSON only: SQLite also reads JSON5 (.5, +1, 0x1F,
		// Infinity, 'text'), whose types this scanner does not decide.
		if v := s[i:j]; v != "true" && v != "false" && v != "null" && !jsonNumber(v) {
			return 0, false
		}
		return j, true
	}
}

// jsonNumber reports whether v is a number in strict JSON's grammar.
func jsonNumber(v string) bool {
	i := 0
	if i < len(v) && v[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(v) && v[i] >= '0' && v[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(v) && v[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(v) && v[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(v)
}
