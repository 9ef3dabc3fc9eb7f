package searchindex

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/search"
)

// TestSnippetFoldMatchesAnalyzer holds the snippeter to the analyzer on
// every code point from U+0080 on: where the analyzer reads c as part of a
// token, the word "1"+c+"2" is highlighted for a query of the term the
// index holds for it (its folded, stemmed form) and for a query of the
// word as written; where the analyzer reads c as a separator, the
// snippeter splits the word there too.
func TestSnippetFoldMatchesAnalyzer(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every token code point, one goroutine")
	sep := newSnippeter([]string{"1"}, 16, nil)
	tokens, folded := 0, 0
	// Code points the analyzer keeps as they are (most of them), checked
	// in batches: one text of many words, each word its own query term.
	var batch []string
	flush := func() {
		text := strings.Join(batch, " ")
		want := search.HighlightStart + strings.Join(batch, search.HighlightEnd+" "+search.HighlightStart) + search.HighlightEnd
		if got := snippet(text, batch, len(batch)); got != want {
			t.Fatalf("words kept as they are (%q to %q), each its own query term:\nsnippet %q\nwant    %q", batch[0], batch[len(batch)-1], got, want)
		}
		batch = batch[:0]
	}
	for c := rune(utf8.RuneSelf); c <= unicode.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue // surrogates
		}
		word := "1" + string(c) + "2"
		text := "alpha " + word + " omega"
		if !analyzer.IsTokenRune(c) {
			want := "alpha " + search.HighlightStart + "1" + search.HighlightEnd + string(c) + "2 omega"
			if got := sep.snippet(text); got != want {
				t.Fatalf("%U separates for the analyzer: snippet %q, want %q", c, got, want)
			}
			continue
		}
		var terms []string
		analyzer.Analyze(word, nil, func(term []byte) { terms = append(terms, string(term)) })
		if len(terms) != 1 {
			t.Fatalf("%U: the analyzer makes %q of %q, want one term", c, terms, word)
		}
		tokens++
		if terms[0] == word {
			if batch = append(batch, word); len(batch) == 512 {
				flush()
			}
			continue
		}
		folded++
		want := "alpha " + search.HighlightStart + word + search.HighlightEnd + " omega"
		for _, q := range []string{terms[0], word} {
			if got := snippet(text, []string{q}, 16); got != want {
				t.Fatalf("%U (the index holds %q): query %q: snippet %q, want %q", c, terms[0], q, got, want)
			}
		}
	}
	if len(batch) > 0 {
		flush()
	}
	if folded < 1000 {
		t.Fatalf("only %d of %d token code points fold: the analyzer's fold is not what this test expects", folded, tokens)
	}
	t.Logf("%d token code points, %d of them folded", tokens, folded)
}
