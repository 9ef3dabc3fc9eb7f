package blocks

import (
	"math/rand"
	"strings"
	"testing"
)

func TestDiffSplicesReproduceTarget(t *testing.T) {
	cases := [][2]string{
		{"", ""}, {"", "abc"}, {"abc", ""}, {"abc", "abc"},
		{"hello world", "hello there world"},
		{"a\nb\nc\n", "a\nB\nc\nd\n"},
		{"one\ntwo\nthree\nfour\n", "zero\none\nthree\nfour!\n"},
		{"é😀\nx\n", "😀é\nx\ny"},
	}
	r := rand.New(rand.NewSource(1))
	words := []string{"a", "b", "c\n", "é", "😀", "\n", "line\n"}
	for i := 0; i < 500; i++ {
		var a, b strings.Builder
		for j := r.Intn(30); j > 0; j-- {
			a.WriteString(words[r.Intn(len(words))])
		}
		for j := r.Intn(30); j > 0; j-- {
			b.WriteString(words[r.Intn(len(words))])
		}
		cases = append(cases, [2]string{a.String(), b.String()})
	}
	for _, c := range cases {
		sp := diffSplices(c[0], c[1])
		if got := applySplices(c[0], sp); got != c[1] {
			t.Fatalf("diff(%q, %q) = %+v applies to %q", c[0], c[1], sp, got)
		}
	}
}

func TestDiffSplicesAreSmall(t *testing.T) {
	old := strings.Repeat("The quick brown fox jumps over the lazy dog.\n", 100)
	lines := strings.SplitAfter(old, "\n")
	lines[10] = "A changed line.\n"
	lines[80] = "Another one.\n"
	new := strings.Join(lines, "")
	inserted := 0
	for _, s := range diffSplices(old, new) {
		inserted += len([]rune(s.ins))
	}
	if inserted > 40 {
		t.Fatalf("diff inserts %d characters for a two-line change", inserted)
	}
}
