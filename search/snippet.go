package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// snippet highlights the query terms in text, like FTS5's snippet(): it
// picks the window of at most size tokens holding the most distinct query
// terms (then the most matches, then the earliest), wraps each matching
// token in HighlightStart/HighlightEnd and marks cut text with Ellipsis.
// Tokens match when their Porter stems agree (after lower-casing and
// folding common Latin diacritics), as in the porter unicode61 index. It
// returns "" when no term occurs in text.
//
// Search builds snippets this way, for the returned results only, because
// FTS5's snippet() would either run for every match before sorting or
// re-run the full-text query per row.
func snippet(text string, terms []string, size int) string {
	if len(terms) == 0 || text == "" {
		return ""
	}
	want := make(map[string]int, len(terms)) // stem -> term number
	// Stemming every token is the cost here; a stem keeps the first two
	// letters of its word, so only words sharing a query stem's first two
	// letters are stemmed (and each distinct word once).
	prefixes := map[string]bool{}
	for i, t := range terms {
		stem := porterStem(foldDiacritics(t))
		want[stem] = i
		prefixes[stem[:min(2, len(stem))]] = true
	}
	memo := map[string]int{}
	termOf := func(word string) int {
		w := foldDiacritics(lowerASCIIFast(word))
		if !prefixes[w[:min(2, len(w))]] {
			return -1
		}
		if n, ok := memo[w]; ok {
			return n
		}
		n, ok := want[porterStem(w)]
		if !ok {
			n = -1
		}
		memo[w] = n
		return n
	}
	type tok struct {
		start, end int
		term       int // -1: not a query term
	}
	var toks []tok
	start := -1
	for i := 0; i <= len(text); {
		var r rune
		size := 1
		if i < len(text) {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		if i < len(text) && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r)) {
			if start < 0 {
				start = i
			}
		} else if start >= 0 {
			toks = append(toks, tok{start: start, end: i, term: termOf(text[start:i])})
			start = -1
		}
		i += size
	}
	// Sliding window: maximise distinct terms, then matches.
	counts := make([]int, len(terms))
	distinct, matches := 0, 0
	best, bestDistinct, bestMatches := -1, 0, 0
	for hi := range toks {
		if t := toks[hi].term; t >= 0 {
			if counts[t] == 0 {
				distinct++
			}
			counts[t]++
			matches++
		}
		lo := hi - size + 1
		if lo > 0 {
			if t := toks[lo-1].term; t >= 0 {
				counts[t]--
				if counts[t] == 0 {
					distinct--
				}
				matches--
			}
		}
		if distinct > bestDistinct || (distinct == bestDistinct && matches > bestMatches) {
			best, bestDistinct, bestMatches = max(lo, 0), distinct, matches
		}
	}
	if best < 0 {
		return ""
	}
	// Short text: show it all. Otherwise open the window two tokens before
	// its first match (the shifted window still holds all its matches).
	first := 0
	if len(toks) > size {
		fm := best
		for fm < len(toks) && toks[fm].term < 0 {
			fm++
		}
		first = max(best, fm-2)
	}
	last := min(first+size, len(toks)) - 1
	var b strings.Builder
	if first > 0 {
		b.WriteString(Ellipsis)
	}
	pos := toks[first].start
	for _, t := range toks[first : last+1] {
		b.WriteString(text[pos:t.start])
		if t.term >= 0 {
			b.WriteString(HighlightStart)
			b.WriteString(text[t.start:t.end])
			b.WriteString(HighlightEnd)
		} else {
			b.WriteString(text[t.start:t.end])
		}
		pos = t.end
	}
	if last < len(toks)-1 {
		b.WriteString(Ellipsis)
	} else {
		b.WriteString(strings.TrimRightFunc(text[pos:], unicode.IsSpace))
	}
	return strings.TrimSpace(b.String())
}

// lowerASCIIFast lower-cases s, without allocating when it is already
// lower-case ASCII.
func lowerASCIIFast(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// foldDiacritics maps common accented Latin letters to their base letter.
func foldDiacritics(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.Map(func(r rune) rune {
		if f, ok := diacritics[r]; ok {
			return f
		}
		return r
	}, s)
}

var diacritics = func() map[rune]rune {
	m := map[rune]rune{}
	for base, accented := range map[rune]string{
		'a': "àáâãäåāăą", 'c': "çćĉċč", 'd': "ďđ", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥħ",
		'i': "ìíîïĩīĭįı", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľŀł", 'n': "ñńņňŉ", 'o': "òóôõöøōŏő",
		'r': "ŕŗř", 's': "śŝşš", 't': "ţťŧ", 'u': "ùúûüũūŭůűų", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range accented {
			m[r] = base
		}
	}
	return m
}()
