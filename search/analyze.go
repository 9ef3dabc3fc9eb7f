package search

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// analyze calls fn with each term of text as the FTS5 tables index it
// (tokenize = 'porter unicode61 remove_diacritics 2'): runs of letters,
// digits and private-use characters, lower-cased, diacritics removed, then
// Porter-stemmed (ftsStem). The in-process text index (IndexOptions.TextCache)
// indexes and queries with it, so it must split and stem exactly as SQLite
// does: TestAnalyzerMatchesFTS5 compares the two on every word of the
// Cranfield collection, the Go sources' comments and mixed-script text.
//
// buf is scratch space reused between calls; the term passed to fn is only
// valid during the call.
func analyze(text string, buf []byte, fn func(term []byte)) []byte {
	buf = buf[:0]
	inToken := false
	for i := 0; i <= len(text); {
		var r rune
		size := 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				r = rune(c)
			} else {
				r, size = utf8.DecodeRuneInString(text[i:])
			}
		}
		if i < len(text) && isTokenRune(r) {
			inToken = true
			switch {
			case r < utf8.RuneSelf:
				if 'A' <= r && r <= 'Z' {
					r += 'a' - 'A'
				}
				buf = append(buf, byte(r))
			default:
				if f := foldRune(r); f != 0 {
					buf = utf8.AppendRune(buf, f)
				}
			}
		} else if inToken {
			if len(buf) > 0 {
				fn(stemInPlace(buf))
			}
			buf = buf[:0]
			inToken = false
		}
		i += size
	}
	return buf
}

// isTokenRune reports whether unicode61 (with remove_diacritics) keeps r
// in a token: categories L*, N*, Co, and the combining marks (Mn) that
// diacritic removal then drops.
func isTokenRune(r rune) bool {
	if r < utf8.RuneSelf {
		return ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')
	}
	if r == utf8.RuneError {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Mn, r)
}

// foldRune case-folds r and strips its diacritics: a character whose
// canonical decomposition is one base letter plus combining marks becomes
// that letter; a lone combining mark folds to 0 (dropped).
func foldRune(r rune) rune {
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
