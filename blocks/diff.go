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
	p, s := affixes(len(o), len(n), func(i, j int) bool { return o[i] == n[j] })
	om, nm := o[p:len(o)-s], n[p:len(n)-s]
	if len(om) == 0 {
		return []splice{lineAlignedInsert(o, p, nm)}
	}
	if len(nm) == 0 {
		return []splice{lineAlignedDelete(o, p, len(om))}
	}
	// The middle widens to whole lines of the old text, so the line diff
	// inserts and deletes whole lines (see lineAlignedInsert); trimSplice
	// narrows each replaced run back to the characters that differ.
	for p > 0 && o[p-1] != '\n' {
		p--
	}
	for s > 0 && o[len(o)-s-1] != '\n' {
		s--
	}
	om, nm = o[p:len(o)-s], n[p:len(n)-s]
	ol, nl := splitLinesKeep(om), splitLinesKeep(nm)
	if len(ol)*len(nl) > maxLCSCells {
		return []splice{trimSplice(splice{pos: p, del: len(om), ins: string(nm)}, om)}
	}
	return lineDiff(p, ol, nl)
}

// lineAlignedInsert is the insertion of ins at rune p of o, moved to a
// line boundary when an equivalent one is there. Trimming the common
// prefix character by character puts an inserted line wherever its first
// characters stop matching: "b\n" inserted before "bc\n" lands as "\nb"
// after the old line's "b", or a line "s0…\n" before "s2…\n" as "0…\ns"
// after that line's "s". The text is the same, but the CRDT anchors the
// insertion on another line's characters, and a concurrent edit anchored
// there (a re-applied write-back edit on a new epoch and another writer's
// append) interleaves with it inside a line. So the insertion
// slides, as far as the text allows, to start at a line start and end
// with its newline; elsewhere it stays where it was.
func lineAlignedInsert(o []rune, p int, ins []rune) splice {
	aligned := func(q int, r []rune) bool {
		return (q == 0 || o[q-1] == '\n') && r[len(r)-1] == '\n'
	}
	if aligned(p, ins) {
		return splice{pos: p, ins: string(ins)}
	}
	// Sliding left one rune: the insertion's last rune equals the one
	// before it, which becomes its first.
	r := append([]rune(nil), ins...)
	for q := p; q > 0 && r[len(r)-1] == o[q-1]; {
		copy(r[1:], r[:len(r)-1])
		r[0] = o[q-1]
		q--
		if aligned(q, r) {
			return splice{pos: q, ins: string(r)}
		}
	}
	// Sliding right: its first rune equals the one after it.
	r = append(r[:0], ins...)
	for q := p; q < len(o) && r[0] == o[q]; {
		copy(r, r[1:])
		r[len(r)-1] = o[q]
		q++
		if aligned(q, r) {
			return splice{pos: q, ins: string(r)}
		}
	}
	return splice{pos: p, ins: string(ins)}
}

// lineAlignedDelete is the deletion of runes p..p+n of o, moved to whole
// lines when an equivalent deletion is (see lineAlignedInsert).
func lineAlignedDelete(o []rune, p, n int) splice {
	aligned := func(q int) bool { return (q == 0 || o[q-1] == '\n') && o[q+n-1] == '\n' }
	if aligned(p) {
		return splice{pos: p, del: n}
	}
	for q := p; q > 0 && o[q-1] == o[q+n-1]; {
		q--
		if aligned(q) {
			return splice{pos: q, del: n}
		}
	}
	for q := p; q+n < len(o) && o[q] == o[q+n]; {
		q++
		if aligned(q) {
			return splice{pos: q, del: n}
		}
	}
	return splice{pos: p, del: n}
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

// affixes is the length of the common prefix of two sequences of
// lengths lo and ln, and of their common suffix after it, where same
// compares the first's element i with the second's j.
func affixes(lo, ln int, same func(i, j int) bool) (prefix, suffix int) {
	for prefix < lo && prefix < ln && same(prefix, prefix) {
		prefix++
	}
	for suffix < lo-prefix && suffix < ln-prefix && same(lo-1-suffix, ln-1-suffix) {
		suffix++
	}
	return prefix, suffix
}

// splicedOut is how many characters of old the splices that turn it
// into next delete.
func splicedOut(old, next string) int {
	n := 0
	for _, sp := range diffSplices(old, next) {
		n += sp.del
	}
	return n
}
