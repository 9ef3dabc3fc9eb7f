// Package redact removes anything that could hold a credential from a
// store target or service URL before it reaches an error message or a log.
//
// There is one function, Target, and every place that prints a --db value,
// a PostgreSQL DSN or an embedder/summarizer URL goes through it. It does
// not rely on the input parsing: a URL with a bad escape
// ("postgres://u:SECRET%PW@h") or an unescaped '@' in its password is
// exactly the input that used to be echoed whole, so the scanner here is
// lenient and errs on the side of hiding too much.
package redact

import (
	"net/http"
	"net/url"
	"strings"
)

// Mask replaces a hidden value.
const Mask = "xxxxx"

// shown are the query / keyword parameters whose values are kept: they
// help to read an error and cannot hold a secret. Every other value
// (password, sslpassword, api-key, unknown keys) is masked, so a new
// credential parameter is hidden without anyone remembering to list it.
var shown = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"sslmode": true, "connect_timeout": true, "application_name": true,
	"target_session_attrs": true, "search_path": true, "api-version": true,
}

// Target returns s with passwords and other possibly secret values masked:
//
//   - a URL (anything with "://"): the userinfo keeps only its user name
//     (everything up to the last '@' is treated as userinfo, so an
//     unescaped '@', '/', '?' or '#' in a password cannot push part of it
//     into the host or path); query values are masked unless their key is
//     a harmless one (sslmode, application_name, ...); a fragment is masked.
//   - a keyword DSN (host=... password=...): every value is masked unless
//     its key is a harmless one; quoting and backslash escapes follow libpq.
//   - anything else (a file path, ":memory:") is returned unchanged.
func Target(s string) string {
	if n := schemeEnd(s); n > 0 {
		return redactURL(s[:n], s[n:])
	}
	if strings.Contains(s, "=") {
		// Checked before a "://" further in: in "host=h password=a://b"
		// the URL is a password.
		return redactKeywords(s)
	}
	if i := strings.Index(s, "://"); i >= 0 {
		// Not a target anything opens ("x postgres://u:p@h"): what is
		// before the "://" is hidden with the userinfo.
		return Mask + redactURL("://", s[i+3:])
	}
	return s
}

// schemeEnd returns the length of a leading (white space, then)
// "scheme://", or 0.
func schemeEnd(s string) int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	start := i
	for i < len(s) && (isAlpha(s[i]) || i > start && (s[i] >= '0' && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.')) {
		i++
	}
	if i == start || !strings.HasPrefix(s[i:], "://") {
		return 0
	}
	return i + 3
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func redactURL(prefix, rest string) string {
	var b strings.Builder
	continued := false // rest is the tail of a query value, after an '@'

	b.WriteString(prefix)
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		userinfo := rest[:at]
		user, _, hasPass := strings.Cut(userinfo, ":")
		switch {
		case strings.ContainsAny(user, "/?#&=") || strings.ContainsAny(userinfo, "/?#&="):
			// The '@' is past the authority (in the path or query) or
			// the password holds unescaped delimiters: which part is the
			// password is ambiguous, so none of it is shown.
			b.WriteString(Mask)
		case hasPass:
			b.WriteString(user + ":" + Mask)
		default:
			b.WriteString(user)
		}
		b.WriteByte('@')
		rest = rest[at+1:]
		if strings.ContainsRune(userinfo, '#') {
			// The '@' was in a fragment: all of it is hidden.
			b.WriteString(Mask)
			return b.String()
		}
		if strings.ContainsRune(userinfo, '?') {
			// The '@' was in the query ("?user=ada@srv&password=..."):
			// what follows it is more of the query, not a host.
			rest = "?" + rest
			continued = true
		}
	}
	fragment := false
	if h := strings.IndexByte(rest, '#'); h >= 0 {
		rest, fragment = rest[:h], true
	}
	hostPath, query, hasQuery := strings.Cut(rest, "?")
	b.WriteString(hostPath)
	if hasQuery {
		if !continued {
			b.WriteByte('?')
		}
		for i, pair := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			k, _, hasValue := strings.Cut(pair, "=")
			switch {
			case continued && i == 0:
				// The rest of the value that held the '@'.
				b.WriteString(Mask)
			case !hasValue:
				// A bare word may be a password that held an '&'.
				if pair != "" {
					b.WriteString(Mask)
				}
			case isShown(k) && harmlessValue(pair[len(k)+1:]):
				b.WriteString(pair)
			default:
				b.WriteString(k + "=" + Mask)
			}
		}
	}
	if fragment {
		b.WriteString("#" + Mask)
	}
	return b.String()
}

// harmlessValue reports whether a harmless key's raw query value may be
// shown: not when it holds an '=' (a raw password's "&key=" tail) or a
// "://" (a connection URL, which libpq expands from dbname), escaped or
// not.
func harmlessValue(raw string) bool {
	v, err := url.QueryUnescape(raw)
	return err == nil && !strings.Contains(raw, "=") && !strings.Contains(v, "=") && !strings.Contains(v, "://")
}

// Harmless reports whether the value of the query or keyword parameter
// key is shown by Target (sslmode, api-version, ...): it cannot hold a
// secret.
func Harmless(key string) bool { return shown[strings.ToLower(key)] }

func isShown(rawKey string) bool {
	k, err := url.QueryUnescape(rawKey)
	return err == nil && shown[strings.ToLower(k)]
}

// redactKeywords masks the values of a libpq keyword/value string: pairs
// "key = value" separated by white space, a value either bare (backslash
// escapes the next character) or single-quoted (backslash escapes inside).
// Words that are not followed by '=' are masked (in "password=my secret"
// the second word is the rest of an unquoted password), an unterminated
// quote masks the rest of the string.
func redactKeywords(s string) string {
	var b strings.Builder
	i := 0
	for i < len(s) {
		if isSpace(s[i]) {
			b.WriteByte(s[i])
			i++
			continue
		}
		start := i
		for i < len(s) && !isSpace(s[i]) && s[i] != '=' {
			i++
		}
		key := s[start:i]
		j := i
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) || s[j] != '=' {
			if key == "" {
				// Cannot happen (s[i] is neither space nor '=' here),
				// but never loop without progress.
				i++
			}
			// A word that is no key=value is a piece of the value
			// before it: "password=my secret" (an unquoted space).
			b.WriteString(Mask)
			continue
		}
		j++ // '='
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		vstart := j
		// A value runs to white space outside quotes; quotes may open and
		// close within it and a backslash escapes the next character.
		// libpq would reject "'it''s'", but gluing its pieces into one
		// value keeps every piece of such a password masked.
		quoted := false
		for j < len(s) && (quoted || !isSpace(s[j])) {
			switch s[j] {
			case '\\':
				j++
			case '\'':
				quoted = !quoted
			}
			j++
		}
		j = min(j, len(s))
		value := s[vstart:j]
		// A value holding "://" may be a URL with a password (libpq
		// expands "dbname=postgres://u:pw@h/db").
		if shown[strings.ToLower(key)] && !strings.ContainsAny(value, `\'=`) && !strings.Contains(value, "://") {
			b.WriteString(key + "=" + value)
		} else {
			b.WriteString(key + "=" + Mask)
		}
		i = j
	}
	return b.String()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// Header returns a copy of h with every value masked (an extra request
// header may carry a key: Azure's "api-key"), for printing options.
func Header(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k := range h {
		out[k] = []string{Mask}
	}
	return out
}

// Secret returns Mask for a non-empty s, for printing options.
func Secret(s string) string {
	if s == "" {
		return ""
	}
	return Mask
}

// BaseURL is what an error may print of a base URL that is not an
// http(s) one: Target masks the password of what has "://", but a URL
// whose scheme was forgotten or mistyped ("user:pass@host",
// "http:/user:pass@host") reaches it as plain text and would come back
// whole; so would an API key pasted into the base URL's variable.
func BaseURL(raw, apiKey string) string {
	s := Target(raw)
	if !strings.Contains(raw, "://") {
		if at := strings.LastIndexByte(s, '@'); at >= 0 {
			s = Mask + s[at:]
		}
	}
	if len(apiKey) >= 4 {
		s = strings.ReplaceAll(s, apiKey, Mask)
	}
	return s
}
