package searchindex

import (
	"math"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// snippet highlights the query terms in text, like FTS5's snippet(): it
// picks the window of at most size tokens holding the most distinct query
// terms (then the most matches, then the earliest), wraps each matching
// token in HighlightStart/HighlightEnd and marks cut text with Ellipsis.
// Tokens are what the index's analyzer reads as tokens and match when
// their stems agree after the analyzer's fold (case and diacritics, as
// remove_diacritics 2), so a snippet highlights the words the index
// matched. It returns "" when no term occurs in text.
//
// Search builds snippets this way, for the returned results only, because
// FTS5's snippet() would either run for every match before sorting or
// re-run the full-text query per row.
func snippet(text string, terms []string, size int) string {
	return newSnippeter(terms, size, nil).snippet(text)
}

// stemCache remembers the Porter stems of the words snippets met, across
// queries: stemming is most of the cost of a word seen for the first time
// in a query. It keeps the first stemCacheMax words of three letters or
// more it is asked about (about 4 MB; never evicted: common words come
// early); others are stemmed each time.
type stemCache struct {
	m sync.Map // folded word -> stem
	n atomic.Int64
}

const stemCacheMax = 1 << 15

func (c *stemCache) stem(w string) string {
	if c == nil || len(w) <= 2 {
		return analyzer.Stem(w) // at once for two letters: nothing to stem
	}
	if st, ok := c.m.Load(w); ok {
		return st.(string)
	}
	st := analyzer.Stem(w)
	if c.n.Load() < stemCacheMax {
		// Copies: w and st may point into a result's text.
		if _, loaded := c.m.LoadOrStore(strings.Clone(w), strings.Clone(st)); !loaded {
			c.n.Add(1)
		}
	}
	return st
}

// snippeter makes the snippets of one query: the query's stems and what
// it learned about the words it met are shared by every result.
type snippeter struct {
	terms int
	size  int
	want  map[string]int // stem -> term number
	// prefixSet has bit p set when some stem's first two bytes are p
	// (prefix2). For the words that start with two ASCII letters or digits
	// (most words), smaller sets that stay in the CPU's nearest cache:
	// pairs has bit pair(c0, c1) set when some stem starts with c0 c1,
	// short2 when some stem of three letters or fewer does, and long3 has
	// bit hash3 set for the first three letters of the longer stems: a stem
	// of four letters or more keeps its word's first three (Porter's rules
	// rewrite a word's end; the rewrites that change a letter, y to i and
	// the e put back after "ing", reach the third letter only in words
	// whose stem is at most three letters long).
	prefixSet     [1 << 10]uint64
	pairs, short2 [pairWords]uint64
	long3         [64]uint64
	memo          map[string]int // word as written -> term number or -1
	stems         *stemCache     // nil: stem every new word
	// Scratch, reused per text.
	toks    []snippetToken // every token
	matches []snippetMatch // the tokens that are query terms, in order
	counts  []int          // matches per term in the window
}

type snippetToken struct{ start, end int }

type snippetMatch struct{ tok, term int }

// Byte classes for the tokenizer: most text is ASCII, where a byte alone
// says whether it is part of a word.
const (
	byteSep   = iota // ASCII, not a letter or digit
	byteWord         // ASCII letter or digit
	byteMulti        // starts a multi-byte sequence (or is invalid UTF-8)
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = byteMulti
		case ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9'):
			t[c] = byteWord
		}
	}
	return t
}()

// lowerByte lower-cases ASCII letters and leaves every other byte alone.
var lowerByte = func() (t [256]byte) {
	for c := range 256 {
		t[c] = byte(c)
		if 'A' <= c && c <= 'Z' {
			t[c] = byte(c + 'a' - 'A')
		}
	}
	return t
}()

// queryStem is the stem a query term matches: the term folded and stemmed
// as the analyzer folds and stems the words of the text.
func queryStem(term string) string { return analyzer.Stem(analyzer.Fold(term)) }

func newSnippeter(terms []string, size int, stems *stemCache) *snippeter {
	s := &snippeter{terms: len(terms), size: size, want: make(map[string]int, len(terms)), memo: map[string]int{},
		counts: make([]int, len(terms)), stems: stems}
	for i, t := range terms {
		stem := queryStem(t)
		s.want[stem] = i
		s.addStem(stem)
	}
	return s
}

// addStem marks the first letters of the words that can stem to stem in
// the filter sets. A stem keeps its word's first two letters, but for two
// cases of short stems (TestStemsKeepTheirWordsStart): a one-letter stem
// comes from words with any second letter ("ies" → "i"), and a two-letter
// stem ending in "i" from words with "y" there too ("eyed" → "ei").
func (s *snippeter) addStem(stem string) {
	if stem == "" {
		return
	}
	second := []byte{0} // a one-letter stem: one-letter words, and...
	switch {
	case len(stem) == 1:
		second = second[:0]
		for c := range 256 {
			second = append(second, byte(c)) // ...any second letter
		}
	case len(stem) == 2 && stem[1] == 'i':
		second = []byte{'i', 'y'}
	default:
		second = []byte{stem[1]}
	}
	for _, c1 := range second {
		p := uint16(stem[0])<<8 | uint16(c1)
		setBit(s.prefixSet[:], p)
		if alnumCode[stem[0]] == noAlnum || (c1 != 0 && alnumCode[c1] == noAlnum) {
			continue // no word starting with two ASCII letters or digits
		}
		q := pair(stem[0], c1)
		setBit(s.pairs[:], q)
		if len(stem) <= 3 {
			setBit(s.short2[:], q)
		} else {
			setBit(s.long3[:], hash3(q, stem[2]))
		}
	}
}

func setBit(set []uint64, b uint16) { set[b>>6] |= 1 << (b & 63) }

func hasBit(set []uint64, b uint16) bool { return set[b>>6]&(1<<(b&63)) != 0 }

// alnumCode numbers the ASCII letters (either case) and digits 0 to 35;
// every other byte is noAlnum.
var alnumCode = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case '0' <= c && c <= '9':
			t[c] = uint8(c - '0')
		case 'a' <= c && c <= 'z':
			t[c] = uint8(c - 'a' + 10)
		case 'A' <= c && c <= 'Z':
			t[c] = uint8(c - 'A' + 10)
		default:
			t[c] = noAlnum
		}
	}
	return t
}()

const (
	noAlnum   = 36
	pairWords = (37*37 + 63) / 64
)

// pair numbers a word's first two bytes, ASCII letters or digits (c1
// noAlnum for a one-letter word), for the pairs and short2 sets.
func pair(c0, c1 byte) uint16 { return uint16(alnumCode[c0])*37 + uint16(alnumCode[c1]) }

// hash3 hashes three letters (the first two numbered by pair) to a bit of
// long3.
func hash3(q uint16, c byte) uint16 {
	return uint16((uint32(q)<<8 | uint32(lowerByte[c])) * 0x9e3779b1 >> 20)
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
// is the cost here; a stem keeps the first two letters of its word (but
// see addStem), so only words sharing a query stem's first two letters are
// stemmed, and each distinct word (as written) once per query. The
// tokenizer (word) rules out most words starting with ASCII letters before
// calling.
func (s *snippeter) termOf(word string) int {
	ascii2 := word[0] < utf8.RuneSelf && (len(word) == 1 || word[1] < utf8.RuneSelf)
	if n, ok := s.memo[word]; ok {
		return n
	}
	w := analyzer.Fold(word)
	n := -1
	if ascii2 || s.hasPrefix(prefix2(w)) {
		if t, ok := s.want[s.stems.stem(w)]; ok {
			n = t
		}
	}
	s.memo[word] = n
	return n
}

func (s *snippeter) hasPrefix(p uint16) bool { return hasBit(s.prefixSet[:], p) }

// snippet highlights the query's terms in text, as the package-level
// snippet does.
func (s *snippeter) snippet(text string) string {
	if s.terms == 0 || text == "" {
		return ""
	}
	s.toks, s.matches = s.toks[:0], s.matches[:0]
	// Eight bytes at a time up to the first non-ASCII byte (if any), then
	// rune by rune from the word it falls in.
	if from := s.tokenizeASCII(text); from < len(text) {
		s.tokenize(text, from)
	}
	return s.choose(text)
}

// tokenize adds the tokens of text from byte from on (the start of a token
// or of a separator) to s.toks and s.matches: runs of token characters
// (unicode61's rule); an ASCII byte is classified by table, other runes as
// the analyzer classifies them (invalid UTF-8 separates).
func (s *snippeter) tokenize(text string, from int) {
	for i, n := from, len(text); i < n; {
		for i < n && byteClass[text[i]] == byteSep {
			i++
		}
		if i == n {
			break
		}
		start := i
	word:
		for i < n {
			switch byteClass[text[i]] {
			case byteWord:
				i++
				for i < n && byteClass[text[i]] == byteWord {
					i++
				}
			case byteMulti:
				r, w := utf8.DecodeRuneInString(text[i:])
				if r != utf8.RuneError && analyzer.IsTokenRune(r) {
					i += w
					continue
				}
				if i == start {
					i += w // a separator of several bytes
					start = -1
				}
				break word
			default:
				break word
			}
		}
		if start >= 0 {
			s.word(text, start, i)
		}
	}
}

// tokenizeASCII does what tokenize does, eight bytes at a time (SWAR:
// SIMD within a register), several times faster, up to the first block of
// eight bytes holding a byte above 0x7f. It returns where tokenize is to
// go on: len(text) when it read it all, else the start of the word the
// block falls in, or of the block.
func (s *snippeter) tokenizeASCII(text string) int {
	open := -1        // start of the word being read
	prev := uint64(0) // wordBytes of the previous block
	for i := 0; i < len(text); i += 8 {
		x := load64(text, i)
		if x&highs != 0 {
			if open >= 0 {
				return open
			}
			return i // the byte before is no word byte: nothing open
		}
		m := wordBytes(x)
		carry := m<<8 | prev>>56 // per byte: is the byte before a word byte
		events := (m &^ carry) | (^m & carry & highs)
		for events != 0 {
			p := i + bits.TrailingZeros64(events)/8
			events &= events - 1
			if open < 0 {
				open = p
			} else {
				s.word(text, open, p)
				open = -1
			}
		}
		prev = m
	}
	if open >= 0 {
		s.word(text, open, len(text))
	}
	return len(text)
}

// Eight bytes at a time: wordBytes has the high bit set in each byte of x
// (all below 0x80) that is an ASCII letter or digit.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func wordBytes(x uint64) uint64 {
	digit := (x + (0x80-'0')*ones) &^ (x + (0x7f-'9')*ones)
	l := x | 0x20*ones // lower-cases letters (and moves some punctuation)
	letter := (l + (0x80-'a')*ones) &^ (l + (0x7f-'z')*ones)
	return (digit | letter) & highs
}

// load64 reads s[i:i+8] little-endian, zero-padded past the end of s.
func load64(s string, i int) uint64 {
	if i+8 > len(s) {
		// The tail, padded with zero bytes (separators): a word running
		// to the end ends at len(s).
		var x uint64
		for j := len(s) - 1; j >= i; j-- {
			x = x<<8 | uint64(s[j])
		}
		return x
	}
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// word records the token text[start:i] and whether it is a query term.
func (s *snippeter) word(text string, start, i int) {
	term := -1
	// Most words are ruled out by their first two or three bytes, here.
	if c0, c1 := text[start], text[min(start+1, i-1)]; c0 < utf8.RuneSelf && c1 < utf8.RuneSelf {
		// ASCII bytes of a word are letters or digits.
		if i-start == 1 {
			c1 = 0 // noAlnum
		}
		if q := pair(c0, c1); hasBit(s.pairs[:], q) {
			// A word of two letters stems to itself.
			maybe := hasBit(s.short2[:], q)
			if !maybe && i-start > 2 {
				c2 := text[start+2]
				maybe = c2 >= utf8.RuneSelf || hasBit(s.long3[:], hash3(q, c2))
			}
			if maybe {
				term = s.termOf(text[start:i])
			}
		}
	} else {
		term = s.termOf(text[start:i])
	}
	if term >= 0 {
		s.matches = append(s.matches, snippetMatch{tok: len(s.toks), term: term})
	}
	s.toks = append(s.toks, snippetToken{start: start, end: i})
}

// choose picks the window of s.toks to show and highlights its matches.
func (s *snippeter) choose(text string) string {
	first, last, ok := s.window(len(s.toks))
	if !ok {
		return ""
	}
	return s.render(text, s.toks[first:last+1], first, len(s.toks))
}

// window picks the tokens [first, last] of a text of n tokens to show,
// from s.matches; ok is false when nothing matched.
func (s *snippeter) window(n int) (first, last int, ok bool) {
	size := s.size
	matches := s.matches
	if len(matches) == 0 {
		return 0, 0, false
	}
	// Sliding window of size tokens: the first to hold the most distinct
	// terms, then the most matches. A window ending on a token that is no
	// match holds no more than the one before it, so only windows ending
	// on a match need a look.
	counts := s.counts
	clear(counts)
	distinct := 0
	best, bestDistinct, bestMatches := -1, 0, 0
	out := 0 // matches[:out] have left the window
	for in, m := range matches {
		if counts[m.term] == 0 {
			distinct++
		}
		counts[m.term]++
		lo := m.tok - size + 1
		for matches[out].tok < lo {
			if counts[matches[out].term]--; counts[matches[out].term] == 0 {
				distinct--
			}
			out++
		}
		if n := in + 1 - out; distinct > bestDistinct || (distinct == bestDistinct && n > bestMatches) {
			best, bestDistinct, bestMatches = max(lo, 0), distinct, n
		}
	}
	// Short text: show it all. Otherwise open the window two tokens before
	// its first match (the shifted window still holds all its matches).
	next := 0 // the first match from best on
	for next < len(matches) && matches[next].tok < best {
		next++
	}
	if n > size {
		first = max(best, matches[next].tok-2)
	}
	return first, min(first+size, n) - 1, true
}

// render writes tokens [first, first+len(spans)) of a text of n tokens,
// spans their places in text, highlighting the matches among them.
func (s *snippeter) render(text string, spans []snippetToken, first, n int) string {
	size := s.size
	last := first + len(spans) - 1
	matches := s.matches
	next := 0
	for next < len(matches) && matches[next].tok < first {
		next++
	}
	var b strings.Builder
	end := spans[len(spans)-1].end
	grow := end - spans[0].start + size*(len(search.HighlightStart)+len(search.HighlightEnd)) + 2*len(search.Ellipsis)
	if last == n-1 {
		grow += len(text) - end
	}
	b.Grow(grow)
	if first > 0 {
		b.WriteString(search.Ellipsis)
	}
	pos := spans[0].start
	for i, t := range spans {
		b.WriteString(text[pos:t.start])
		if next < len(matches) && matches[next].tok == first+i {
			b.WriteString(search.HighlightStart)
			b.WriteString(text[t.start:t.end])
			b.WriteString(search.HighlightEnd)
			next++
		} else {
			b.WriteString(text[t.start:t.end])
		}
		pos = t.end
	}
	if last < n-1 {
		b.WriteString(search.Ellipsis)
	} else {
		b.WriteString(strings.TrimRightFunc(text[pos:], unicode.IsSpace))
	}
	return strings.TrimSpace(b.String())
}

// noTerm stands for a query term no cached row holds, in
// snippetOfTokens's ids.
const noTerm = math.MaxUint32

// snippetOfTokens is snippet for an ASCII text whose tokens come as term
// ids (textBody.toks), with ids[i] the id of query term i's stem in the
// same numbering (noTerm when no row holds it): the window is chosen from
// the ids alone, and only the tokens it shows are found in text. The
// result is snippet(text)'s: the analyzer's tokens of ASCII text are the
// snippeter's, and equal stems have equal ids (TestSnippetOfTokens).
func (s *snippeter) snippetOfTokens(text string, toks []byte, ids []uint32) string {
	if s.terms == 0 || text == "" {
		return ""
	}
	// Most tokens are no query term: a 1,024-bit filter of the ids rules
	// them out before the look through ids.
	var filter [16]uint64
	for _, id := range ids {
		if id != noTerm {
			filter[id>>6&15] |= 1 << (id & 63)
		}
	}
	s.matches = s.matches[:0]
	ntoks := 0
	for rest := toks; len(rest) > 0; ntoks++ {
		id, next, ok := nextTok(rest)
		if !ok {
			return "" // not ids packToks made: cannot happen
		}
		rest = next
		i := ntoks
		if filter[id>>6&15]&(1<<(id&63)) == 0 {
			continue
		}
		// The last term with this stem, as newSnippeter's want keeps it.
		for j := len(ids) - 1; j >= 0; j-- {
			if ids[j] == id {
				s.matches = append(s.matches, snippetMatch{tok: i, term: j})
				break
			}
		}
	}
	first, last, ok := s.window(ntoks)
	if !ok {
		return ""
	}
	s.toks = asciiSpans(text, first, last, s.toks[:0])
	if len(s.toks) != last-first+1 {
		return "" // not the text the ids were made from: cannot happen
	}
	return s.render(text, s.toks, first, ntoks)
}

// asciiSpans appends the places of tokens [first, last] of ASCII text to
// dst, eight bytes at a time as tokenizeASCII reads, counting the tokens
// before first without looking at them.
func asciiSpans(text string, first, last int, dst []snippetToken) []snippetToken {
	k := -1 // the token being read, or the last one read
	in, start := false, 0
	prev := uint64(0)
	for i := 0; i < len(text); i += 8 {
		x := load64(text, i)
		m := wordBytes(x)
		carry := m<<8 | prev>>56
		starts := m &^ carry
		prev = m
		if n := bits.OnesCount64(starts); k+n < first {
			// No token of the window starts here: count the ones that do.
			k += n
			in = m>>63 != 0
			continue
		}
		events := starts | (^m & carry & highs)
		for events != 0 {
			p := i + bits.TrailingZeros64(events)/8
			events &= events - 1
			if !in {
				in, start = true, p
				k++
				continue
			}
			in = false
			if k >= first {
				dst = append(dst, snippetToken{start: start, end: p})
				if k == last {
					return dst
				}
			}
		}
	}
	if in && k >= first && k <= last {
		dst = append(dst, snippetToken{start: start, end: len(text)})
	}
	return dst
}

// isASCII reports whether s is all ASCII, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if load64(s, i)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
