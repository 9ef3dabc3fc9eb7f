package blocks

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
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

// An insertion or deletion the text allows on line boundaries is made
// there (see lineAlignedInsert), not wherever the common prefix ends.
func TestDiffSplicesAlignLines(t *testing.T) {
	for _, tc := range []struct {
		name, old, new string
		want           []splice
	}{
		{"line before a like line", "A\ns2\n", "A\ns0\ns2\n", []splice{{pos: 2, ins: "s0\n"}}},
		{"line after a like line", "A\nb\n", "A\nb\nbc\n", []splice{{pos: 4, ins: "bc\n"}}},
		{"append", "a\n", "a\nb\n", []splice{{pos: 2, ins: "b\n"}}},
		{"first line", "ab\n", "a\nab\n", []splice{{pos: 0, ins: "a\n"}}},
		{"delete a like line", "A\ns0\ns2\n", "A\ns2\n", []splice{{pos: 2, del: 3}}},
		{"inside a line stays", "hello world", "hello there world", []splice{{pos: 6, ins: "there "}}},
		{"no newline to align to", "ab", "aab", []splice{{pos: 1, ins: "a"}}},
		{"two lines among like lines", "A\nsX\nB\n", "A\nsY\nsX\nB\nsZ\n", []splice{{pos: 7, ins: "sZ\n"}, {pos: 2, ins: "sY\n"}}},
		{"a changed line narrows", "a\nbcd\ne\n", "a\nbXd\ne\n", []splice{{pos: 3, del: 1, ins: "X"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := diffSplices(tc.old, tc.new)
			if applySplices(tc.old, got) != tc.new {
				t.Fatalf("splices %+v do not turn %q into %q", got, tc.old, tc.new)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("splices %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRotatedOut(t *testing.T) {
	at := func(s int) LogEntry { return LogEntry{Timestamp: time.Unix(int64(s), 0).UTC(), Message: fmt.Sprint(s)} }
	log := func(ss ...int) []LogEntry {
		out := []LogEntry{}
		for _, s := range ss {
			out = append(out, at(s))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		cur, next []LogEntry
		want      int
	}{
		{"appended", log(1, 2), log(1, 2, 3), 0},
		{"unchanged", log(1, 2), log(1, 2), 0},
		{"from empty", log(), log(1), 0},
		{"rotated one", log(1, 2, 3), log(2, 3, 4), 1},
		{"rotated two", log(1, 2, 3), log(3, 4, 5), 2},
		{"rotated all", log(1, 2), log(3, 4), 2},
		{"emptied", log(1, 2), log(), 2},
		{"same time, other message", []LogEntry{at(1), {Timestamp: at(2).Timestamp, Message: "x"}}, log(2, 3), 2},
	} {
		if got := rotatedOut(tc.cur, tc.next); got != tc.want {
			t.Errorf("%s: rotatedOut = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// writeNode's Log case realizes a rotated value: the entries rotated out
// are deleted, the new ones appended, and the document reads next.
func TestWriteNodeLogRotation(t *testing.T) {
	at := func(s int) LogEntry { return LogEntry{Timestamp: time.Unix(int64(s), 0).UTC(), Message: fmt.Sprint(s)} }
	sc := schema.Log{Retention: 3}
	am := automerge.New()
	root := am.RootMap()
	if err := initNode(root, sc); err != nil {
		t.Fatal(err)
	}
	cur := []LogEntry{}
	for _, next := range [][]LogEntry{{at(1), at(2), at(3)}, {at(2), at(3), at(4)}, {at(4), at(5), at(6)}, {}} {
		if err := writeNode(root, sc, cur, next); err != nil {
			t.Fatal(err)
		}
		got, err := readNode(root, sc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, next) && !(len(next) == 0 && len(got.([]LogEntry)) == 0) {
			t.Fatalf("after writing %v the log reads %v", next, got)
		}
		cur = next
	}
}
