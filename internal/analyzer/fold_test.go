package analyzer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestFoldMatchesAnalyze holds Fold (with Stem) to Analyze on every sample
// word made of token characters only, and on "1"+c+"2" for every two-byte
// token character c (where classify reads its table).
func TestFoldMatchesAnalyze(t *testing.T) {
	words := append([]string{}, analyzerSamples...)
	for c := rune(utf8.RuneSelf); c < twoByteEnd; c++ {
		if classify(c) != classifySlow(c) {
			t.Fatalf("%U: table %d, classifySlow %d", c, classify(c), classifySlow(c))
		}
		words = append(words, "1"+string(c)+"2")
	}
	n := 0
	for _, w := range words {
		if !utf8.ValidString(w) || strings.IndexFunc(w, func(r rune) bool { return !IsTokenRune(r) }) >= 0 {
			continue // Fold keeps separators; Analyze splits there
		}
		var terms []string
		Analyze(w, nil, func(term []byte) { terms = append(terms, string(term)) })
		if len(terms) != 1 {
			t.Fatalf("%q: Analyze makes %q of a word of token characters", w, terms)
		}
		n++
		if got := Stem(Fold(w)); got != terms[0] {
			t.Errorf("%q: Stem(Fold) %q, Analyze %q", w, got, terms[0])
		}
	}
	if n < 1000 {
		t.Fatalf("only %d one-token words compared", n)
	}
}

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"engine", "engine"},
		{"ENGINE-Room", "engine-room"}, // separators kept
		{"Café", "cafe"},
		{"cafe\u0301", "cafe"}, // combining mark dropped
		{"ΑΘΗΝΑ", "αθηνα"},
		{"Straße", "straße"}, // as SQLite: no ss
		{"ı", "ı"},           // dotless i stays
		{"bad\xffutf8", "bad\xffutf8"},
	} {
		if got := Fold(tc.in); got != tc.want {
			t.Errorf("Fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if IsTokenRune(-1) || IsTokenRune(unicode.MaxRune+1) {
		t.Error("IsTokenRune accepts a rune outside Unicode")
	}
	if n := testing.AllocsPerRun(100, func() { Fold("engine") }); n != 0 {
		t.Errorf("Fold of a folded word allocates %v times", n)
	}
}
