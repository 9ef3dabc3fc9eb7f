package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// span is one piece of a diff: unchanged ('='), removed ('-'), added ('+'),
// or an elision of unchanged text ('~', Text says how much).
type span struct {
	Kind byte
	Text string
}

// Del, Ins and Skip let templates switch on a span's kind (anything else
// is unchanged text).
func (s span) Del() bool  { return s.Kind == '-' }
func (s span) Ins() bool  { return s.Kind == '+' }
func (s span) Skip() bool { return s.Kind == '~' }

// maxCells bounds the LCS table (tokens before × tokens after, after the
// common prefix and suffix are trimmed). Past it the changed middle is
// shown as one removal and one addition: still correct, just coarser.
const maxCells = 4 << 20

// diffText is a word-level diff of a and b, for people: unchanged runs
// longer than about 2*context runes are elided to their ends.
func diffText(a, b string, context int) []span {
	ta, tb := tokenize(a), tokenize(b)
	pre := 0
	for pre < len(ta) && pre < len(tb) && ta[pre] == tb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ta)-pre && suf < len(tb)-pre && ta[len(ta)-1-suf] == tb[len(tb)-1-suf] {
		suf++
	}
	var out []span
	add := func(kind byte, toks []string) {
		if len(toks) == 0 {
			return
		}
		t := strings.Join(toks, "")
		if n := len(out); n > 0 && out[n-1].Kind == kind {
			out[n-1].Text += t
			return
		}
		out = append(out, span{kind, t})
	}
	add('=', ta[:pre])
	ma, mb := ta[pre:len(ta)-suf], tb[pre:len(tb)-suf]
	if len(ma)*len(mb) > maxCells {
		add('-', ma)
		add('+', mb)
	} else {
		for _, op := range lcs(ma, mb) {
			add(op.kind, op.toks)
		}
	}
	add('=', ta[len(ta)-suf:])
	return elide(out, context)
}

type tokOp struct {
	kind byte
	toks []string
}

// lcs diffs two token slices with the classic longest-common-subsequence
// table; deletions come before insertions within a changed run.
func lcs(a, b []string) []tokOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return []tokOp{{'-', a}, {'+', b}}
	}
	w := m + 1
	t := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			} else {
				t[i*w+j] = max(t[(i+1)*w+j], t[i*w+j+1])
			}
		}
	}
	var ops []tokOp
	push := func(kind byte, tok string) {
		if k := len(ops); k > 0 && ops[k-1].kind == kind {
			ops[k-1].toks = append(ops[k-1].toks, tok)
			return
		}
		ops = append(ops, tokOp{kind, []string{tok}})
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			push('=', a[i])
			i, j = i+1, j+1
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			push('-', a[i])
			i++
		default:
			push('+', b[j])
			j++
		}
	}
	for ; i < n; i++ {
		push('-', a[i])
	}
	for ; j < m; j++ {
		push('+', b[j])
	}
	return ops
}

// tokenize splits s into words, runs of spaces, line breaks and single
// other characters, so a diff reads as edits to words.
func tokenize(s string) []string {
	var out []string
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		var class func(rune) bool
		switch {
		case r == '\n':
			out = append(out, s[:n])
			s = s[n:]
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			class = func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
		case unicode.IsSpace(r):
			class = func(r rune) bool { return r != '\n' && unicode.IsSpace(r) }
		default:
			out = append(out, s[:n])
			s = s[n:]
			continue
		}
		i := n
		for i < len(s) {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !class(r) {
				break
			}
			i += n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}

// elide shortens long unchanged spans to context runes at each end (only
// the tail of the first span and the head of the last one).
func elide(spans []span, context int) []span {
	var out []span
	for i, sp := range spans {
		r := []rune(sp.Text)
		if sp.Kind != '=' || len(r) <= 2*context+20 {
			out = append(out, sp)
			continue
		}
		head, tail := context, context
		if i == 0 {
			head = 0
		}
		if i == len(spans)-1 {
			tail = 0
		}
		if head > 0 {
			out = append(out, span{'=', string(r[:head])})
		}
		out = append(out, span{'~', plural(len(r)-head-tail, "unchanged character")})
		if tail > 0 {
			out = append(out, span{'=', string(r[len(r)-tail:])})
		}
	}
	return out
}

// changed reports whether a diff has any removal or addition.
func changed(spans []span) bool {
	for _, s := range spans {
		if s.Kind == '-' || s.Kind == '+' {
			return true
		}
	}
	return false
}
