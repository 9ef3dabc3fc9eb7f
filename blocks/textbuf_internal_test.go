package blocks

import (
	"strings"
	"testing"
)

// TestTextBufKeepsEveryString: strings textBuf returns never change, whatever
// base later appends start from, and equal plain concatenation.
func TestTextBufKeepsEveryString(t *testing.T) {
	var tb textBuf
	base := strings.Repeat("x", textBufFrom)
	type kept struct{ s, want string }
	var all []kept
	cur := base
	for i := range 200 {
		add := strings.Repeat(string(rune('a'+i%26)), 1+i%7)
		var from string
		switch i % 5 {
		case 3: // an older value (a refused edit left the model there)
			from = all[len(all)/2].s
		case 4: // a value from elsewhere
			from = strings.Clone(cur)
		default:
			from = cur
		}
		want := strings.Clone(from) + add
		got := tb.concat(from, add)
		if got != want {
			t.Fatalf("step %d: concat gave %d bytes, want %d", i, len(got), len(want))
		}
		all = append(all, kept{got, want})
		cur = got
	}
	for i, k := range all {
		if k.s != k.want {
			t.Fatalf("string %d changed after later appends", i)
		}
	}
	// Small texts are plain concatenation.
	if s := tb.concat("ab", "c"); s != "abc" {
		t.Fatal(s)
	}
}

func BenchmarkTextBufAppend140k(b *testing.B) {
	var tb textBuf
	cur := strings.Repeat("x", 140_000)
	b.ReportAllocs()
	for b.Loop() {
		cur = tb.concat(cur, "one more line of text\n")
		if len(cur) > 400_000 {
			cur = cur[:140_000]
		}
	}
}
