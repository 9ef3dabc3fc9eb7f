package search

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/search/internal/analyzer"
)

// MaxQueryTerms caps how many distinct terms MatchExpression keeps; later
// terms are dropped.
const MaxQueryTerms = 64

// maxTermBytes caps one term; longer runs of letters are cut (no real word
// is that long, and the cap bounds the expression's size).
const maxTermBytes = 128

// tokens splits text the way FTS5's unicode61 tokenizer does: a token is a
// maximal run of letters and digits (Unicode categories L and N); everything
// else separates. Tokens are lower-cased. Invalid UTF-8 and NUL bytes are
// separators. Duplicates are kept, in order.
func tokens(text string, fn func(tok string) bool) {
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
				tok = truncateUTF8(tok, maxTermBytes)
			}
			if !fn(tok) {
				return
			}
			start = -1
		}
		i += size
	}
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// queryTerms returns the distinct terms of q that a search uses: stopwords
// dropped unless nothing else is left, at most MaxQueryTerms.
//
// "may" next to a number ("8 May", "May 2023", "May 8") is the month, not
// the verb, and is kept: a message's date is indexed with it (SQLite
// migration 0030, PostgreSQL 0027) and an archival entry's metadata may
// hold one.
func queryTerms(q string) []string {
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
	tokens(q, func(tok string) bool {
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

// IsStopword reports whether the lower-case word w is on the stopword list
// used by MatchExpression and the offline embedder.
func IsStopword(w string) bool { return analyzer.IsStopword(w) }

// MatchExpression turns free text from a user or a model into a safe FTS5
// MATCH expression: an OR of double-quoted terms. Terms are the runs of
// letters and digits (as the unicode61 tokenizer sees them), lower-cased and
// de-duplicated; English stopwords are dropped unless the query has nothing
// else; at most MaxQueryTerms terms are kept. Quotes, FTS5 operators (AND,
// OR, NOT, NEAR, *, ^, :, parentheses), control characters and invalid UTF-8
// can therefore never reach the FTS5 parser as syntax.
//
// A query with no letters or digits at all returns an error wrapping
// ErrInvalidQuery.
func MatchExpression(q string) (string, error) {
	terms := queryTerms(q)
	if len(terms) == 0 {
		return "", fmt.Errorf("%w: no words or numbers in %q", ErrInvalidQuery, truncateUTF8(strings.ToValidUTF8(q, "\uFFFD"), 80))
	}
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String(), nil
}
