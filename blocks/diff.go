package blocks

// splice is one text edit in rune positions of the text it applies to.
type splice struct {
	pos, del int
	ins      string
}

// maxLCSCells bounds the line-diff table; beyond it the changed middle is
// replaced as one splice (still far cheaper than rewriting the whole text).
const maxLCSCells = 1 << 20

// diffSplices returns the edits that turn old into new, to be applied in the
// returned order (last position first, so earlier positions stay valid).
//
// Rewriting a whole automerge text costs one op per character forever (see
// DESIGN.md "CRDT costs"), so whole-value writes keep the common prefix and
// suffix and diff the middle by lines.
func diffSplices(old, new string) []splice {
	if old == new {
		return nil
	}
	o, n := []rune(old), []rune(new)
	p := 0
	for p < len(o) && p < len(n) && o[p] == n[p] {
		p++
	}
	s := 0
	for s < len(o)-p && s < len(n)-p && o[len(o)-1-s] == n[len(n)-1-s] {
		s++
	}
	om, nm := o[p:len(o)-s], n[p:len(n)-s]
	if len(om) == 0 || len(nm) == 0 {
		return []splice{{pos: p, del: len(om), ins: string(nm)}}
	}
	ol, nl := splitLinesKeep(om), splitLinesKeep(nm)
	if len(ol) < 2 || len(nl) < 2 || len(ol)*len(nl) > maxLCSCells {
		return []splice{{pos: p, del: len(om), ins: string(nm)}}
	}
	return lineDiff(p, ol, nl)
}

// splitLinesKeep splits runes into lines that keep their trailing newline.
func splitLinesKeep(r []rune) [][]rune {
	var out [][]rune
	start := 0
	for i, c := range r {
		if c == '\n' {
			out = append(out, r[start:i+1])
			start = i + 1
		}
	}
	if start < len(r) {
		out = append(out, r[start:])
	}
	return out
}

func eqRunes(a, b []rune) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lineDiff computes an LCS over lines and emits one splice per run of
// changed lines, last first.
func lineDiff(base int, ol, nl [][]rune) []splice {
	m, n := len(ol), len(nl)
	// lcs[i][j] = LCS length of ol[i:], nl[j:]
	lcs := make([][]int32, m+1)
	for i := range lcs {
		lcs[i] = make([]int32, n+1)
	}
	for i := m - 1; i >= 0; i-- {
		for j := n - 1; j >= 0; j-- {
			if eqRunes(ol[i], nl[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []splice
	pos := base // rune position in the old text
	i, j := 0, 0
	var cur *splice
	var gone []rune // the old text cur deletes
	flush := func() {
		if cur != nil {
			out = append(out, trimSplice(*cur, gone))
			cur, gone = nil, nil
		}
	}
	for i < m || j < n {
		switch {
		case i < m && j < n && eqRunes(ol[i], nl[j]):
			flush()
			pos += len(ol[i])
			i++
			j++
		case j < n && (i == m || lcs[i][j+1] >= lcs[i+1][j]):
			if cur == nil {
				cur = &splice{pos: pos}
			}
			cur.ins += string(nl[j])
			j++
		default:
			if cur == nil {
				cur = &splice{pos: pos}
			}
			cur.del += len(ol[i])
			gone = append(gone, ol[i]...)
			pos += len(ol[i])
			i++
		}
	}
	flush()
	// Positions are in old-text coordinates; apply from the end.
	for a, b := 0, len(out)-1; a < b; a, b = a+1, b-1 {
		out[a], out[b] = out[b], out[a]
	}
	return out
}

// trimSplice narrows a run of replaced lines to the characters that
// differ ("three" → "three\nfour" inserts "\nfour"): fewer operations, and
// an edit elsewhere on those lines merges with it instead of duplicating
// them.
func trimSplice(sp splice, gone []rune) splice {
	ins := []rune(sp.ins)
	p := 0
	for p < len(gone) && p < len(ins) && gone[p] == ins[p] {
		p++
	}
	q := 0
	for q < len(gone)-p && q < len(ins)-p && gone[len(gone)-1-q] == ins[len(ins)-1-q] {
		q++
	}
	return splice{pos: sp.pos + p, del: sp.del - p - q, ins: string(ins[p : len(ins)-q])}
}

// applySplices applies splices to s in Go, for tests and prospective values.
func applySplices(s string, sp []splice) string {
	r := []rune(s)
	for _, x := range sp {
		tail := append([]rune(x.ins), r[x.pos+x.del:]...)
		r = append(r[:x.pos], tail...)
	}
	return string(r)
}
