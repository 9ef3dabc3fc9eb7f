package search

import (
	"sort"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// analyze calls fn with each term of text as the FTS5 tables index it
// (tokenize = 'porter unicode61 remove_diacritics 2'): runs of token
// characters, case-folded, diacritics removed, then Porter-stemmed
// (stemInPlace). The in-process text index (IndexOptions.TextCacheBytes) indexes
// and queries with it, so it must split and stem exactly as SQLite does:
//   - bytes are decoded as SQLite decodes them, invalid UTF-8 included;
//   - which characters are token characters and what they fold to follows
//     package unicode, except where SQLite's older Unicode tables disagree
//     (fts5Exceptions, generated from SQLite and checked code point by code
//     point by TestFTS5UnicodeTable);
//   - TestAnalyzerMatchesFTS5 and FuzzAnalyzeMatchesFTS5 compare whole
//     texts with what FTS5 stores.
//
// buf is scratch space reused between calls; the term passed to fn is only
// valid during the call.
func analyze(text string, buf []byte, fn func(term []byte)) []byte {
	buf = buf[:0]
	inToken := false
	for i := 0; i <= len(text); {
		c, n := rune(-1), 1
		if i < len(text) {
			if b := text[i]; b < utf8.RuneSelf {
				if byteClass[b] == byteWord {
					if 'A' <= b && b <= 'Z' {
						b += 'a' - 'A'
					}
					c = rune(b)
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
	ex := fts5Exceptions
	if i := sort.Search(len(ex), func(i int) bool { return ex[i].hi >= c }); i < len(ex) && ex[i].lo <= c {
		if f := ex[i].fold; f == cpItself {
			return c
		} else {
			return f
		}
	}
	if !isTokenRuneGo(c) {
		return cpSeparator
	}
	return foldRuneGo(c)
}

// isTokenRune and foldRune are classify split in two (for tests).
func isTokenRune(c rune) bool { return classify(c) != cpSeparator }
func foldRune(c rune) rune    { return max(classify(c), 0) }

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
	if !norm.NFD.IsNormal(tmp[:n]) {
		d := norm.NFD.Append(nil, tmp[:n]...)
		base, size := utf8.DecodeRune(d)
		marks := true
		for _, m := range string(d[size:]) {
			if !unicode.Is(unicode.Mn, m) {
				marks = false
				break
			}
		}
		if marks && base < utf8.RuneSelf {
			return unicode.ToLower(base)
		}
	}
	return r
}

// ftsStem is stemInPlace for a string: the term FTS5's porter tokenizer
// makes of a folded token. Snippets stem with it so they highlight what
// the index matched ("1960" matches "1960s", which porterStem, keeping
// words with digits whole, would not).
func ftsStem(w string) string {
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
