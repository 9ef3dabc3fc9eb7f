package searchindex

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/search"
)

// referenceSnippet is the first, plain implementation of snippet: a
// rune-at-a-time tokenizer. Tests hold the fast one to it.
func (s *snippeter) referenceSnippet(text string) string {
	if s.terms == 0 || text == "" {
		return ""
	}
	size := s.size
	var toks []refToken
	start := -1
	for i := 0; i <= len(text); {
		word, n := false, 1
		if i < len(text) {
			if c := text[i]; c < utf8.RuneSelf {
				word = byteClass[c] == byteWord
				if word && start >= 0 {
					// Inside a word: skip the rest of its ASCII letters at
					// once (most text is ASCII words).
					j := i + 1
					for j < len(text) && byteClass[text[j]] == byteWord {
						j++
					}
					n = j - i
				}
			} else {
				var r rune
				r, n = utf8.DecodeRuneInString(text[i:])
				word = r != utf8.RuneError && analyzer.IsTokenRune(r)
			}
		}
		if word {
			if start < 0 {
				start = i
				if i < len(text) && text[i] < utf8.RuneSelf {
					j := i + 1
					for j < len(text) && byteClass[text[j]] == byteWord {
						j++
					}
					n = j - i
				}
			}
		} else if start >= 0 {
			toks = append(toks, refToken{start: start, end: i, term: s.referenceTermOf(text[start:i])})
			start = -1
		}
		i += n
	}
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
		b.WriteString(search.Ellipsis)
	}
	pos := toks[first].start
	for _, t := range toks[first : last+1] {
		b.WriteString(text[pos:t.start])
		if t.term >= 0 {
			b.WriteString(search.HighlightStart)
			b.WriteString(text[t.start:t.end])
			b.WriteString(search.HighlightEnd)
		} else {
			b.WriteString(text[t.start:t.end])
		}
		pos = t.end
	}
	if last < len(toks)-1 {
		b.WriteString(search.Ellipsis)
	} else {
		b.WriteString(strings.TrimRightFunc(text[pos:], unicode.IsSpace))
	}
	return strings.TrimSpace(b.String())
}

type refToken struct {
	start, end int
	term       int // -1: not a query term
}

func (s *snippeter) referenceTermOf(word string) int {
	n, ok := s.want[analyzer.Stem(analyzer.Fold(word))]
	if !ok {
		return -1
	}
	return n
}

// TestSnippetMatchesReference holds the snippet tokenizer to the plain
// one over every Cranfield query and one abstract in twenty, and over
// texts mixing scripts, accents, digits and invalid UTF-8.
func TestSnippetMatchesReference(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "snippets compared with the reference, one goroutine")
	texts := []string{
		"", " ", "a", "É", "\xff", "naïve CAFÉ café cafe, Cafés!", "x\xffy \xc3 z",
		"Straße — strasse; ĐÀO đào 数字 ２５ degrees 25°", "ends with a space ",
		"engines engine engineering ENGINE-ENGINES", "œuvre Ærø aerøskøbing",
		"the engine of the engineering department — engines’ café engine, 25 degrees",
	}
	queries := []string{"cafe engine", "25 degrees", "naive strasse", "aerøskøbing œuvre", "x y z"}
	if dir := eval.FindCranfield(); dir != "" {
		c, err := eval.LoadCranfield(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range c.Docs {
			if i%20 == 0 {
				texts = append(texts, d.Title+"\n"+d.Body)
			}
		}
		for _, q := range c.Queries {
			queries = append(queries, q.Text)
		}
	}
	n := 0
	var stems stemCache // shared by every query, as an Index's is
	for _, q := range queries {
		for _, size := range []int{16, 3} {
			fast, ref := newSnippeter(analyzer.QueryTerms(q), size, &stems), newSnippeter(analyzer.QueryTerms(q), size, nil)
			for _, text := range texts {
				if got, want := fast.snippet(text), ref.referenceSnippet(text); got != want {
					t.Fatalf("query %q, size %d, text %q:\nsnippet   %q\nreference %q", q, size, text, got, want)
				}
				n++
			}
		}
	}
	t.Logf("%d snippets compared", n)
}

func FuzzSnippetMatchesReference(f *testing.F) {
	f.Add("naïve CAFÉ café cafe, Cafés! \xff engines", "cafe engine")
	f.Add("Straße — strasse 数字 ２５", "strasse 25")
	f.Add("Engines, engine; engineering\x00 25 degrees of an 8-byte word: abcdefgh", "engine 25 abcdefgh")
	f.Add("one eyed, eying ties; tied aing", "eyed ies aed")
	f.Add("the engine of the engineering department \u2014 engines\u2019 caf\u00e9 engine", "engine cafe")
	f.Fuzz(func(t *testing.T, text, query string) {
		terms := analyzer.QueryTerms(query)
		// As given (mostly not ASCII: the general tokenizer), and with the
		// bytes above 0x7f dropped (the eight-bytes-at-a-time one).
		ascii := strings.Map(func(r rune) rune {
			if r >= utf8.RuneSelf {
				return -1
			}
			return r
		}, text)
		for _, text := range []string{text, ascii} {
			if got, want := newSnippeter(terms, 5, nil).snippet(text), newSnippeter(terms, 5, nil).referenceSnippet(text); got != want {
				t.Fatalf("text %q: snippet %q, reference %q", text, got, want)
			}
		}
	})
}

// BenchmarkSnippet makes the snippets of a 100-result page of Cranfield
// abstracts for one query, with the snippeter searches use and with the
// reference implementation.
func BenchmarkSnippet(b *testing.B) {
	c := cranfieldOrSkip(b)
	terms := analyzer.QueryTerms(c.Queries[0].Text)
	texts := make([]string, 100)
	for i, d := range c.Docs[:100] {
		texts[i] = d.Title + "\n" + d.Body
	}
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			s := newSnippeter(terms, 16, nil)
			for _, t := range texts {
				s.snippet(t)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		for b.Loop() {
			s := newSnippeter(terms, 16, nil)
			for _, t := range texts {
				s.referenceSnippet(t)
			}
		}
	})
	// The same page with accented vowels: every word takes the rune-at-a-
	// time tokenizer and the accent fold.
	accented := accentedTexts(texts)
	b.Run("accented", func(b *testing.B) {
		for b.Loop() {
			s := newSnippeter(terms, 16, nil)
			for _, t := range accented {
				s.snippet(t)
			}
		}
	})
}

// accentedTexts returns texts with their vowels accented (as a
// tokenizer's non-ASCII workload).
func accentedTexts(texts []string) []string {
	r := strings.NewReplacer("a", "à", "e", "é", "o", "ö", "u", "ü", "E", "É", "I", "Î")
	out := make([]string, len(texts))
	for i, t := range texts {
		out[i] = r.Replace(t)
	}
	return out
}

// cranfieldOrSkip loads the Cranfield collection, or skips tb without it
// (fails it under CI=true).
func cranfieldOrSkip(tb testing.TB) *eval.Cranfield {
	tb.Helper()
	dir := eval.FindCranfield()
	if dir == "" {
		testenv.Missing(tb, "Cranfield collection not found (set ENGRAM_CRANFIELD or place it at ../shared/datasets/cranfield)")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestStemsKeepTheirWordsStart checks the rules snippeter.addStem rests
// on, over every word of the Cranfield abstracts (with suffixes Porter's
// rules look at), 200,000 made-up words built from such pieces, and every
// word of up to five letters over an alphabet of the letters the rules
// turn on: a stem of four letters or more starts with its word's first
// three; a longer one with its first two; a two-letter stem too, or ends
// in "i" where the word has "y"; a one-letter stem starts its word.
func TestStemsKeepTheirWordsStart(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every word's stem, one goroutine")
	c := cranfieldOrSkip(t)
	seen := map[string]bool{}
	for _, d := range c.Docs {
		for _, w := range strings.FieldsFunc(strings.ToLower(d.Title+" "+d.Body), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsNumber(r)
		}) {
			if seen[w] {
				continue
			}
			seen[w] = true
			for _, v := range []string{w, w + "ing", w + "ed", w + "y", w + "ies", w + "ational", w + "biliti"} {
				checkStemStart(t, v)
			}
		}
	}
	// And made-up words built from the pieces Porter's rules look at.
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "e", "i", "o", "u", "y", "b", "l", "t", "s", "z", "ing", "ed", "at", "bl", "iz", "ies", "sses",
		"ational", "tional", "enci", "izer", "alli", "eli", "ousli", "ization", "ation", "ator", "alism", "biliti", "logi", "e", "ll"}
	for range 200_000 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			if r.IntN(8) == 0 {
				b.WriteString([]string{"7", "1960", "x2", "é", "ß"}[r.IntN(5)])
			}
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkStemStart(t, b.String())
	}
	const letters = "aeiouybdgilnstz09é"
	n := 0
	var gen func(w []byte)
	gen = func(w []byte) {
		if len(w) > 0 {
			checkStemStart(t, string(w))
			n++
		}
		if len(w) < 5 {
			for i := range len(letters) {
				gen(append(w, letters[i]))
			}
		}
	}
	gen(nil)
	t.Logf("%d words, 200,000 made up, %d over %q", len(seen), n, letters)
}

func checkStemStart(t *testing.T, w string) {
	t.Helper()
	st := analyzer.Stem(w)
	var ok bool
	switch {
	case st == "":
		ok = w == ""
	case len(st) >= 4:
		ok = st[:3] == w[:3]
	case len(st) == 1:
		ok = st[0] == w[0]
	case len(st) == 2 && st[1] == 'i':
		ok = st[0] == w[0] && (w[1] == 'i' || w[1] == 'y')
	default:
		ok = st[:2] == w[:2]
	}
	if !ok {
		t.Fatalf("%q stems to %q: snippeter.addStem's rules miss it", w, st)
	}
}

// TestWordBytes holds the eight-bytes-at-a-time classification to the
// byte table, for every ASCII byte in every position next to every kind
// of neighbour.
func TestWordBytes(t *testing.T) {
	for c := range 128 {
		for pos := range 8 {
			for _, fill := range []byte{0, ' ', '0', '9', 'a', 'z', 'A', 'Z', '@', '[', '`', '{', 0x7f} {
				var x uint64
				for j := range 8 {
					b := fill
					if j == pos {
						b = byte(c)
					}
					x |= uint64(b) << (8 * j)
				}
				got := wordBytes(x)>>(8*pos)&0x80 != 0
				if want := byteClass[c] == byteWord; got != want {
					t.Fatalf("byte %#x at %d among %q: word %v, want %v", c, pos, fill, got, want)
				}
			}
		}
	}
}
