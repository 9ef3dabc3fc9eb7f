package analyzer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQueryTerms caps how many distinct terms QueryTerms keeps (and so
// search.MatchExpression); later terms are dropped.
const MaxQueryTerms = 64

// maxTermBytes caps one term; longer runs of letters are cut (no real word
// is that long, and the cap bounds the expression's size).
const maxTermBytes = 128

// Tokens splits text the way FTS5's unicode61 tokenizer does: a token is a
// maximal run of letters and digits (Unicode categories L and N); everything
// else separates. Tokens are lower-cased. Invalid UTF-8 and NUL bytes are
// separators. Duplicates are kept, in order.
func Tokens(text string, fn func(tok string) bool) {
	start := -1
	for i := 0; i <= len(text); {
		var r rune
		size := 1
		if i < len(text) {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		word := i < len(text) && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r))
		if word {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			tok := strings.ToLower(text[start:i])
			if len(tok) > maxTermBytes {
				tok = TruncateUTF8(tok, maxTermBytes)
			}
			if !fn(tok) {
				return
			}
			start = -1
		}
		i += size
	}
}

// TruncateUTF8 cuts s to at most n bytes at a rune boundary.
func TruncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// QueryTerms returns the distinct terms of q that a search uses: stopwords
// dropped unless nothing else is left, at most MaxQueryTerms.
//
// "may" next to a number ("8 May", "May 2023", "May 8") is the month, not
// the verb, and is kept: a message's date is indexed with it (SQLite
// migration 0030, PostgreSQL 0027) and an archival entry's metadata may
// hold one.
func QueryTerms(q string) []string {
	var all, kept []string
	seen := map[string]bool{}
	prev := ""
	keep := func(tok string) {
		if !seen[tok] {
			seen[tok] = true
			kept = append(kept, tok)
		}
	}
	inAll := map[string]bool{}
	Tokens(q, func(tok string) bool {
		if (tok == "may" && isNumber(prev)) || (prev == "may" && isNumber(tok)) {
			keep("may")
		}
		prev = tok
		if inAll[tok] {
			return true
		}
		inAll[tok] = true
		all = append(all, tok)
		if !IsStopword(tok) {
			keep(tok)
		}
		// Enough distinct non-stopwords: stop scanning a huge input early.
		return len(kept) < MaxQueryTerms
	})
	if len(kept) == 0 {
		kept = all
	}
	if len(kept) > MaxQueryTerms {
		kept = kept[:MaxQueryTerms]
	}
	return kept
}

// isNumber reports whether tok is ASCII digits, or an ordinal ("8th").
func isNumber(tok string) bool {
	for _, suf := range []string{"st", "nd", "rd", "th"} {
		if t, ok := strings.CutSuffix(tok, suf); ok {
			tok = t
			break
		}
	}
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}
