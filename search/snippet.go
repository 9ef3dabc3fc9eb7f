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
	return newSnippeter(terms, size).snippet(text)
}

// snippeter makes the snippets of one query: the query's stems and what
// it learned about the words it met are shared by every result.
type snippeter struct {
	terms int
	size  int
	want  map[string]int // stem -> term number
	// prefixSet has bit p set when some stem's first two letters are p.
	prefixSet [1 << 10]uint64
	memo      map[string]int // folded word -> term number or -1
	toks      []snippetToken // scratch, reused per text
	counts    []int          // scratch: matches per term in the window
}

type snippetToken struct {
	start, end int
	term       int // -1: not a query term
}

// asciiWord marks the ASCII letters and digits (unicode.IsLetter or
// IsNumber for bytes below 0x80).
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
	}
	return t
}()

func newSnippeter(terms []string, size int) *snippeter {
	s := &snippeter{terms: len(terms), size: size, want: make(map[string]int, len(terms)), memo: map[string]int{},
		counts: make([]int, len(terms))}
	for i, t := range terms {
		stem := porterStem(foldDiacritics(t))
		s.want[stem] = i
		p := prefix2(stem)
		s.prefixSet[p>>6] |= 1 << (p & 63)
	}
	return s
}

// prefix2 packs a word's first two bytes (one, for a one-byte word).
func prefix2(w string) uint16 {
	switch len(w) {
	case 0:
		return 0
	case 1:
		return uint16(w[0]) << 8
	}
	return uint16(w[0])<<8 | uint16(w[1])
}

// termOf returns the query term word stems to, or -1. Stemming every token
// is the cost here; a stem keeps the first two letters of its word, so only
// words sharing a query stem's first two letters are stemmed (and each
// distinct word once per query). Words starting with two ASCII bytes are
// ruled out before any copy is made.
func (s *snippeter) termOf(word string) int {
	ascii2 := len(word) > 0 && word[0] < utf8.RuneSelf && (len(word) == 1 || word[1] < utf8.RuneSelf)
	if ascii2 {
		p := uint16(lowerASCII(word[0])) << 8
		if len(word) > 1 {
			p |= uint16(lowerASCII(word[1]))
		}
		if !s.hasPrefix(p) {
			return -1
		}
	}
	w := foldDiacritics(lowerASCIIFast(word))
	if !ascii2 && !s.hasPrefix(prefix2(w)) {
		return -1
	}
	if n, ok := s.memo[w]; ok {
		return n
	}
	n, ok := s.want[porterStem(w)]
	if !ok {
		n = -1
	}
	s.memo[w] = n
	return n
}

func (s *snippeter) hasPrefix(p uint16) bool {
	return s.prefixSet[p>>6]&(1<<(p&63)) != 0
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// snippet highlights the query's terms in text, as the package-level
// snippet does.
func (s *snippeter) snippet(text string) string {
	if s.terms == 0 || text == "" {
		return ""
	}
	size := s.size
	toks := s.toks[:0]
	start := -1
	for i := 0; i <= len(text); {
		word, n := false, 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				word = asciiWord[c]
				if word && start >= 0 {
					// Inside a word: skip the rest of its ASCII letters at
					// once (most text is ASCII words).
					j := i + 1
					for j < len(text) && text[j] < utf8.RuneSelf && asciiWord[text[j]] {
						j++
					}
					n = j - i
				}
			} else {
				var r rune
				r, n = utf8.DecodeRuneInString(text[i:])
				word = r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsNumber(r))
			}
		}
		if word {
			if start < 0 {
				start = i
				if i < len(text) && text[i] < utf8.RuneSelf {
					j := i + 1
					for j < len(text) && text[j] < utf8.RuneSelf && asciiWord[text[j]] {
						j++
					}
					n = j - i
				}
			}
		} else if start >= 0 {
			toks = append(toks, snippetToken{start: start, end: i, term: s.termOf(text[start:i])})
			start = -1
		}
		i += n
	}
	s.toks = toks
	// Sliding window: maximise distinct terms, then matches.
	counts := s.counts
	clear(counts)
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
