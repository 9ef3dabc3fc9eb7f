package search

import (
	"fmt"
	"strings"

	"github.com/engram-go/engram/internal/analyzer"
)

// MaxQueryTerms caps how many distinct terms MatchExpression keeps; later
// terms are dropped. (It is the analyzer's cap, which every search's query
// terms keep to: TestMatchExpressionCapsTerms holds the two equal.)
const MaxQueryTerms = 64

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
	terms := analyzer.QueryTerms(q)
	if len(terms) == 0 {
		return "", fmt.Errorf("%w: no words or numbers in %q", ErrInvalidQuery, analyzer.TruncateUTF8(strings.ToValidUTF8(q, "\uFFFD"), 80))
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
