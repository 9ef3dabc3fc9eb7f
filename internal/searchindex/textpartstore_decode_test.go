package searchindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/engram-go/engram/search"
)

// partInvariants checks what the cache relies on in a decoded part: the
// names ascend; each term's df is its count of postings, which ascend by
// slot and name live rows; each row's term ids ascend and are exactly
// the terms whose postings name it; the slots, live count and tokens
// agree with the rows; with toks, each body's packed ids are among its
// row's terms.
func partInvariants(p *textPart, toks bool) error {
	p.fillTerms() // (a packed part's rows name their terms once a remove or change needs them)
	n := int32(p.termCount())
	for id := int32(1); id < n; id++ {
		if p.name(id-1) >= p.name(id) {
			return fmt.Errorf("names %q, %q do not ascend", p.name(id-1), p.name(id))
		}
	}
	named := make([][]int32, len(p.docs)) // each slot's terms, by the postings
	for id := range n {
		list := p.list(id)
		if int(p.df[id]) != len(list) {
			return fmt.Errorf("term %q: df %d, %d postings", p.name(id), p.df[id], len(list))
		}
		for i, ps := range list {
			if i > 0 && list[i-1].slot >= ps.slot {
				return fmt.Errorf("term %q: postings do not ascend by slot", p.name(id))
			}
			if ps.slot < 0 || int(ps.slot) >= len(p.docs) || p.docs[ps.slot].dead {
				return fmt.Errorf("term %q: a posting of slot %d, not a live row", p.name(id), ps.slot)
			}
			named[ps.slot] = append(named[ps.slot], int32(id))
		}
	}
	var tokens int64
	for slot, d := range p.docs {
		if d.dead {
			continue
		}
		if s, ok := p.slots[d.id]; !ok || int(s) != slot {
			return fmt.Errorf("row %d: slot %d, slots say %d (%v)", d.id, slot, s, ok)
		}
		tokens += int64(d.length)
		ids := p.terms[d.termsAt : d.termsAt+d.nTerms]
		if !slices.Equal(ids, named[slot]) {
			return fmt.Errorf("row %d: term ids %v, the postings name %v", d.id, ids, named[slot])
		}
		if toks && p.bodies != nil {
			for _, tok := range unpackToks(p.bodies[slot].toks) {
				if _, ok := slices.BinarySearch(ids, int32(tok)); !ok {
					return fmt.Errorf("row %d: packed id %d is not one of its terms %v", d.id, tok, ids)
				}
			}
		}
	}
	if len(p.slots) != p.live || len(p.docs)-p.dead != p.live || tokens != p.tokens {
		return fmt.Errorf("%d slots, %d rows, %d dead, %d live; tokens %d, counted %d", len(p.slots), len(p.docs), p.dead, p.live, tokens, p.tokens)
	}
	return nil
}

// TestStoredPartCountsBoundAllocation: a part's header counts, each
// within the bytes left but together past them, are refused before
// anything is allocated at their size (each alone made room for all of
// the bytes: 58 times the input's size in all).
func TestStoredPartCountsBoundAllocation(t *testing.T) {
	fp := partFingerprint(search.Archival, false, true)
	const size = 1 << 20
	b := append([]byte(partMagic), partFormat)
	b = binary.LittleEndian.AppendUint64(b, fp)
	b = append(b, 0, 0, 0, 1) // the position (0, 0, no xip), bodies
	left := size - len(b) - 25
	for _, n := range []int{left / 2, left / 5, left / 2, left, left} { // nterms, ndocs, entries, toksLen, nstr
		b = binary.AppendUvarint(b, uint64(n))
	}
	for len(b) < size-4 {
		b = append(b, 0xff)
	}
	data := encodeChecksum(b)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := decodePart(data, search.Archival, "a", fp, false)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a part whose counts pass its bytes decoded")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*size {
		t.Fatalf("refusing a %d-byte part allocated %d bytes", size, got)
	}
}

// TestStoredPartForeignTokenID: a stored row whose packed ids name
// another row's term (bytes no encode writes) decodes, but once that
// term is gone the part is saved with the row's ids left out (its
// snippet tokenizes the text), not with an id no term has, which the
// next load would refuse.
func TestStoredPartForeignTokenID(t *testing.T) {
	fp := partFingerprint(search.Archival, false, true)
	pos := logPos{xmin: 1, xmax: 1}
	p := newTextPart(search.Archival, true)
	p.add(textDoc{id: 1, owner: "a", length: 1}, textBody{content: "x"}, rowTerms{index: map[string]int32{"x": 0}, freqs: []float32{1}, toks: []uint32{0}})
	p.add(textDoc{id: 2, owner: "a", length: 1}, textBody{content: "y"}, rowTerms{index: map[string]int32{"y": 0}, freqs: []float32{1}, toks: []uint32{0}})
	data := encodePart(p, pos, fp)
	body := slices.Clone(data[:len(data)-4])
	at := bytes.Index(body, []byte{2, 1, 1, 0}) // row 1: sessOf, ids present, one byte, the id of "x"
	if at < 0 {
		t.Fatalf("row 1's packed ids not found in % x", body)
	}
	body[at+3] = 1 // the id of "y"
	q, _, err := decodePart(appendChecksum(body), search.Archival, "a", fp, false)
	if err != nil {
		t.Fatalf("the part: %v", err)
	}
	q.remove(2)
	q.regroup()
	r, _, err := decodePart(encodePart(q, pos, fp), search.Archival, "a", fp, false)
	if err != nil {
		t.Fatalf("the part saved again does not decode: %v", err)
	}
	if err := partInvariants(r, true); err != nil {
		t.Fatal(err)
	}
	if slot := r.slots[1]; r.bodies[slot].toks != nil || r.bodies[slot].content != "x" {
		t.Fatalf("row 1 saved again: %+v", r.bodies[slot])
	}
}

// TestStoredPartBadPostingsMatchNothing: a part whose checksum holds but
// one of whose terms' postings do not decode (bytes encodePart does not
// write: a row distance of 0, a row past the last, a frequency of 0, too
// few or too many bytes) still loads, since postings are decoded when
// read: that term matches no row, the others read as they were, nothing
// panics, and its first change leaves the part consistent, with the term
// at df 0 and gone from its next encoding.
func TestStoredPartBadPostingsMatchNothing(t *testing.T) {
	fp := partFingerprint(search.Archival, false, true)
	pos := logPos{xmin: 1, xmax: 1}
	data := encodePart(storedTestPart(), pos, fp)
	good, _, err := decodePart(data, search.Archival, "agent", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := good.termID("common")
	if !ok || good.df[id] < 2 {
		t.Fatalf("the test part has no term \"common\" in 2 rows or more (%v)", ok)
	}
	k := good.packed
	start := len(data) - 4 - len(k.raw) // the postings, as stored, end before the checksum
	if id > 0 {
		start += int(k.rawEnd[id-1])
	}
	end := len(data) - 4 - len(k.raw) + int(k.rawEnd[id])
	for _, c := range []struct {
		name string
		edit func(b []byte) []byte // the term's postings' bytes, edited in a copy of the part's body
	}{
		{"a row distance of 0", func(b []byte) []byte { b[start] = 0; return b }},
		{"a row past the last", func(b []byte) []byte { b[start] = 0x7f; return b }},
		{"a frequency of 0 with no bits", func(b []byte) []byte { b[start+1] = 0; return b }},
		{"a posting cut short", func(b []byte) []byte { b[end-1] |= 0x80; return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := c.edit(slices.Clone(data[:len(data)-4]))
			q, _, err := decodePart(appendChecksum(body), search.Archival, "agent", fp, false)
			if err != nil {
				t.Fatalf("the part did not load: %v", err)
			}
			if l := q.list(id); l != nil {
				t.Fatalf("the bad list read as %v", l)
			}
			for other := range int32(q.termCount()) {
				if other != id && !slices.Equal(q.list(other), good.list(other)) {
					t.Fatalf("term %q read as %v, was %v", q.name(other), q.list(other), good.list(other))
				}
			}
			keep := func(*textDoc) bool { return true }
			if hits := refSearch(q, []string{"common"}, keep, 10); len(hits) != 0 {
				t.Fatalf("the bad term matched %v", hits)
			}
			// Saved while packed, after a replay's remove: the part
			// loads, without the term.
			packed, _, err := decodePart(appendChecksum(body), search.Archival, "agent", fp, false)
			if err != nil {
				t.Fatal(err)
			}
			packed.remove(1)
			if packed.packed == nil {
				t.Fatal("a remove unpacked the part")
			}
			saved, _, err := decodePart(encodePart(packed, pos, fp), search.Archival, "agent", fp, false)
			if err != nil {
				t.Fatalf("saved packed, the part does not load: %v", err)
			}
			if _, ok := saved.termID("common"); ok {
				t.Fatal("saved packed, the bad term was encoded again")
			}
			q.indexTerms()
			if q.df[id] != 0 {
				t.Fatalf("df %d after the first change", q.df[id])
			}
			if err := partInvariants(q, false); err != nil {
				t.Fatal(err)
			}
			q.remove(2)
			q.regroup()
			r, _, err := decodePart(encodePart(q, pos, fp), search.Archival, "agent", fp, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := partInvariants(r, false); err != nil {
				t.Fatal(err)
			}
			if _, ok := r.termID("common"); ok {
				t.Fatal("the bad term was encoded again")
			}
		})
	}
}

// TestStoredPartListCountPastRows: a stored term that claims more
// postings than the part has rows (a part of one row whose term claims
// 500,000, in as many bytes as they take, the checksum holding) is
// refused at the load, not allocated for at each read of its list.
func TestStoredPartListCountPastRows(t *testing.T) {
	const count = 500_000
	fp := partFingerprint(search.Blocks, false, false)
	b := append([]byte(partMagic), partFormat)
	b = binary.LittleEndian.AppendUint64(b, fp)
	b = binary.AppendVarint(b, 1) // the position: xmin, xmax, no xip
	b = binary.AppendVarint(b, 1)
	b = binary.AppendUvarint(b, 0)
	b = append(b, 0)                           // no bodies
	b = binary.AppendUvarint(b, 1)             // terms
	b = binary.AppendUvarint(b, 1)             // rows
	b = binary.AppendUvarint(b, uint64(count)) // postings
	b = binary.AppendUvarint(b, 0)             // packed ids
	b = binary.AppendUvarint(b, 1)             // strings
	b = append(b, 'x')
	b = binary.AppendUvarint(b, 1) // the term: its name's length, its postings, their bytes
	b = binary.AppendUvarint(b, uint64(count))
	b = binary.AppendUvarint(b, uint64(2*count))
	b = binary.AppendVarint(b, 1) // the row: id, created, length, superseded, terms
	b = binary.AppendVarint(b, 0)
	b = binary.AppendUvarint(b, 1)
	b = append(b, 0)
	b = binary.AppendUvarint(b, uint64(count))
	for range count {
		b = append(b, 1, 4) // a row distance of 1, a frequency of 1
	}
	if _, _, err := decodePart(encodeChecksum(b), search.Blocks, "a", fp, false); err == nil {
		t.Fatal("a term of 500,000 postings in a part of one row loaded")
	}
}
