package search

import "github.com/engram-go/engram/internal/analyzer"

// Terms calls fn with each term of text as the full-text index holds it
// (case-folded, diacritics removed, Porter-stemmed; stopwords kept), in
// order. memory's consolidation compares entries by these terms.
func Terms(text string, fn func(term string)) {
	analyzer.Analyze(text, nil, func(term []byte) { fn(string(term)) })
}
