// Package analyzer is engram's search text analysis, compatible with SQLite
// FTS5's tokenize = 'porter unicode61 remove_diacritics 2': it splits
// text into tokens, case-folds them, removes diacritics and Porter-stems
// them exactly as the FTS5 tables do, so that the search engine's in-process
// text cache (internal/searchindex) indexes and queries the terms FTS5 would, and its snippets
// highlight the words FTS5 matched. Tests hold it to SQLite's own
// tokenizer code point by code point (TestFTS5UnicodeTable) and text by
// text (TestAnalyzerMatchesFTS5, FuzzAnalyzeMatchesFTS5).
package analyzer

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Analyze calls fn with each term of text as the FTS5 tables index it:
// runs of token characters, case-folded, diacritics removed, then
// Porter-stemmed (Stem). It must split and stem exactly as SQLite does:
//   - bytes are decoded as SQLite decodes them, invalid UTF-8 included;
//   - which characters are token characters and what they fold to follows
//     package unicode, except where SQLite's older Unicode tables disagree
//     (fts5Exceptions, generated from SQLite and checked code point by code
//     point by TestFTS5UnicodeTable);
//   - TestAnalyzerMatchesFTS5 and FuzzAnalyzeMatchesFTS5 compare whole
//     texts with what FTS5 stores.
//
// buf is scratch space reused between calls (nil is fine); Analyze returns
// it for the next call. The term passed to fn is only valid during the
// call.
func Analyze(text string, buf []byte, fn func(term []byte)) []byte {
	buf = buf[:0]
	inToken := false
	for i := 0; i <= len(text); {
		c, n := rune(-1), 1
		if i < len(text) {
			if b := text[i]; b < utf8.RuneSelf {
				if f := asciiFold[b]; f != 0 {
					c = rune(f)
				}
			} else {
				var raw uint32
				raw, n = readUTF8(text, i)
				if raw > maxRune {
					// Beyond Unicode, from invalid UTF-8: SQLite's tables
					// call it a token character, kept as it is, and its
					// WRITE_UTF8 keeps the low 21 bits in four bytes.
					buf = append(buf, 0xF0+byte(raw>>18&0x07), 0x80+byte(raw>>12&0x3F),
						0x80+byte(raw>>6&0x3F), 0x80+byte(raw&0x3F))
					inToken = true
					i += n
					continue
				}
				c = classify(rune(raw))
			}
		}
		if c != cpSeparator {
			inToken = true
			if c < utf8.RuneSelf && c > 0 {
				buf = append(buf, byte(c))
			} else if c > 0 {
				buf = utf8.AppendRune(buf, c)
			}
		} else if inToken {
			if len(buf) > 0 {
				fn(stemInPlace(buf))
			}
			buf = buf[:0]
			inToken = false
		}
		i += n
	}
	return buf
}

// Code point behaviours (cpRange.fold and classify's result).
const (
	cpSeparator rune = -1 // not a token character
	cpDropped   rune = 0  // a token character folded away (a diacritic)
	cpItself    rune = -2 // a token character kept as it is (table only)
	maxRune          = unicode.MaxRune
)

// cpRange is a run of code points with one behaviour: cpSeparator,
// cpDropped, cpItself, or (lo == hi) the rune the code point folds to.
type cpRange struct {
	lo, hi, fold rune
}

// utf8Trans1 is SQLite's sqlite3Utf8Trans1: the payload bits of a lead
// byte from 0xC0 on.
var utf8Trans1 = [64]uint32{
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x00, 0x01, 0x02, 0x03, 0x00, 0x01, 0x00, 0x00,
}

// readUTF8 decodes the character at text[i] (a byte >= 0x80) as SQLite's
// READ_UTF8 does: a lead byte takes every continuation byte after it; a
// stray continuation byte is the code point of its value; overlong forms,
// surrogates and U+FFFE/U+FFFF become U+FFFD.
func readUTF8(text string, i int) (uint32, int) {
	b := text[i]
	if b < 0xC0 {
		return uint32(b), 1
	}
	c := utf8Trans1[b-0xC0]
	n := 1
	for i+n < len(text) && text[i+n]&0xC0 == 0x80 {
		c = c<<6 + uint32(text[i+n]&0x3F)
		n++
	}
	if c < 0x80 || c&0xFFFFF800 == 0xD800 || c&0xFFFFFFFE == 0xFFFE {
		c = 0xFFFD
	}
	return c, n
}

// classify returns what the tokenizer makes of code point c (>= 0x80):
// cpSeparator, cpDropped, or the rune it folds to.
func classify(c rune) rune {
	if c < twoByteEnd {
		return twoByteTable()[c-utf8.RuneSelf]
	}
	return classifySlow(c)
}

// twoByteEnd ends the code points UTF-8 writes in two bytes (Latin,
// Greek, Cyrillic, Hebrew, Arabic, ...), which classify reads from a table.
const twoByteEnd = 0x800

// twoByteTable is classifySlow for every two-byte code point: folding by
// package unicode and norm was most of the cost of analysing or
// snippeting accented text, and the table makes it one load. It is built
// on first use, so a program that never meets such text does not pay for
// it, and never changes once built.
var twoByteTable = sync.OnceValue(func() *[twoByteEnd - utf8.RuneSelf]rune {
	t := new([twoByteEnd - utf8.RuneSelf]rune)
	for i := range t {
		t[i] = classifySlow(rune(i) + utf8.RuneSelf)
	}
	return t
})

// classifySlow is classify without the table.
func classifySlow(c rune) rune {
	if f, ok := exception(c); ok {
		if f == cpItself {
			return c
		}
		return f
	}
	if !isTokenRuneGo(c) {
		return cpSeparator
	}
	return foldRuneGo(c)
}

// exception returns c's behaviour from fts5Exceptions (cpSeparator,
// cpDropped, cpItself or the rune it folds to); ok is false when package
// unicode says what SQLite does.
func exception(c rune) (fold rune, ok bool) {
	ex := fts5Exceptions
	if len(ex) == 0 || c < ex[0].lo {
		return 0, false // Latin-1 and most of Latin Extended: no exceptions
	}
	// sort.Search without the closure call per step: this runs for every
	// non-ASCII character of every text analysed or snippeted.
	lo, hi := 0, len(ex)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ex[m].hi < c {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ex) && ex[lo].lo <= c {
		return ex[lo].fold, true
	}
	return 0, false
}

// IsTokenRune reports whether Analyze reads c as part of a token (a
// letter, a number, a private-use character or a combining mark, as
// SQLite's tables say), rather than as a separator. It is classify
// without the fold, which a tokenizer does not need.
func IsTokenRune(c rune) bool {
	switch {
	case c < 0:
		return false
	case c < utf8.RuneSelf:
		return asciiFold[c] != 0
	case c < twoByteEnd:
		return twoByteTable()[c-utf8.RuneSelf] != cpSeparator
	}
	if f, ok := exception(c); ok {
		return f != cpSeparator
	}
	return isTokenRuneGo(c)
}

// foldRune is what a token character c folds to (0: dropped).
func foldRune(c rune) rune { return max(classify(c), 0) }

// Fold returns word with each character folded as Analyze folds it before
// stemming: case-folded, and diacritics removed (remove_diacritics 2:
// precomposed letters lose their marks, combining marks are dropped).
// Characters that are not token characters are kept as they are, so a
// word of token characters folds to the token Analyze would stem. A word
// that is already folded (lower-case ASCII) comes back without copying.
func Fold(word string) string {
	i := 0
	for i < len(word) && word[i] < utf8.RuneSelf && (word[i] < 'A' || word[i] > 'Z') {
		i++
	}
	if i == len(word) {
		return word
	}
	b := make([]byte, i, len(word))
	copy(b, word[:i])
	for i < len(word) {
		c := word[i]
		if c < utf8.RuneSelf {
			if f := asciiFold[c]; f != 0 {
				c = f
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(word[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, c) // invalid UTF-8: no token character
		} else if f := classify(r); f == cpSeparator {
			b = append(b, word[i:i+n]...)
		} else if f != cpDropped {
			b = utf8.AppendRune(b, f)
		}
		i += n
	}
	return string(b)
}

// asciiFold maps each ASCII letter or digit to its folded form (the
// lower-case letter, the digit) and every other ASCII byte to 0 (a
// separator).
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for c := range byte(utf8.RuneSelf) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			t[c] = c
		case 'A' <= c && c <= 'Z':
			t[c] = c + 'a' - 'A'
		}
	}
	return t
}()

// isTokenRuneGo is unicode61's rule by package unicode: categories L*, N*,
// Co, and the combining marks (Mn) that diacritic removal then drops.
func isTokenRuneGo(r rune) bool {
	if r == utf8.RuneError {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Mn, r)
}

// foldRuneGo case-folds r and strips its diacritics by package unicode: a
// character whose canonical decomposition is one base letter plus
// combining marks becomes that letter; a lone combining mark folds to 0
// (dropped).
func foldRuneGo(r rune) rune {
	if unicode.Is(unicode.Mn, r) {
		return 0
	}
	// Case folding, not lower-casing: "ſ", "ς" and "µ" fold to "s", "σ"
	// and "μ" as in FTS5; the dotless "ı" stays (its upper case is "I").
	if r != 'ı' {
		r = unicode.ToLower(unicode.ToUpper(r))
	}
	var tmp [utf8.UTFMax]byte
	n := utf8.EncodeRune(tmp[:], r)
	// The table's full canonical decomposition, read in place: decomposing
	// into a new buffer (norm.NFD.Append) made folding most of the cost of
	// accented text.
	if d := norm.NFD.Properties(tmp[:n]).Decomposition(); d != nil {
		base, size := utf8.DecodeRune(d)
		if base >= utf8.RuneSelf {
			return r
		}
		for len(d) > size {
			d = d[size:]
			var m rune
			if m, size = utf8.DecodeRune(d); !unicode.Is(unicode.Mn, m) {
				return r
			}
		}
		return unicode.ToLower(base)
	}
	return r
}

// Stem returns the term FTS5's porter tokenizer makes of a folded token
// (see Fold): the Porter stem of any token of 3 to 64 bytes, digits and
// non-ASCII letters included ("1960s" stems to "1960", which PorterStem,
// keeping words with digits whole, would not). Snippets stem with it so
// they highlight what the index matched.
func Stem(w string) string {
	if len(w) < 3 || len(w) > 64 {
		return w
	}
	z := porter{b: []byte(w)}
	z.run()
	return string(z.b)
}

// stemInPlace stems a folded token held in buf; the result aliases buf
// when nothing changed.
func stemInPlace(buf []byte) []byte {
	if len(buf) < 3 || len(buf) > 64 {
		return buf
	}
	z := porter{b: buf}
	z.run()
	return z.b
}
