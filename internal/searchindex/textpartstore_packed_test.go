package searchindex

import (
	"bytes"
	"database/sql"
	"reflect"
	"slices"
	"testing"

	"github.com/engram-go/engram/search"
)

// decodePacked decodes data (an archival part) and checks that the part
// is packed: no names, lists or map of terms until its first change.
func decodePacked(t *testing.T, data []byte) *textPart {
	t.Helper()
	q, _, err := decodePart(data, search.Archival, "agent", partFingerprint(search.Archival, false, true), false)
	if err != nil {
		t.Fatal(err)
	}
	if q.packed == nil || q.names != nil || q.lists != nil || q.post != nil {
		t.Fatal("decoded part not packed")
	}
	return q
}

// TestPackedPartReadsAsUnpacked: a decoded part's packed reads (name,
// list, termID, its encoding, a search) agree with those of the same part
// unpacked; termID finds no term the part lacks, whatever bytes it is
// given; removes leave a part packed and encode as they do unpacked; the
// first change unpacks without touching other terms' postings, and a
// regroup then gives the part the source gives after the same changes.
func TestPackedPartReadsAsUnpacked(t *testing.T) {
	fp := partFingerprint(search.Archival, false, true)
	pos := logPos{xmin: 5, xmax: 9}
	data := encodePart(storedTestPart(), pos, fp)
	q := decodePacked(t, data)
	n := int32(q.termCount())
	if int(n) != len(q.df) || n == 0 {
		t.Fatalf("termCount %d, df %d", n, len(q.df))
	}
	for id := range n {
		if got, ok := q.termID(q.name(id)); !ok || got != id {
			t.Fatalf("termID(%q) = %d %v, want %d", q.name(id), got, ok, id)
		}
	}
	first, last := q.name(0), q.name(n-1)
	for _, s := range []string{"", "\x00", first[:len(first)-1], last + "z", last + "\x00", "\xff\xff", "mid\x00"} {
		if id, ok := q.termID(s); ok {
			t.Fatalf("missing %q found at %d", s, id)
		}
	}
	// Encode of a packed part: the same bytes; after unpack, still.
	if !bytes.Equal(encodePart(q, pos, fp), data) {
		t.Fatal("packed re-encode differs")
	}
	u := decodePacked(t, data)
	names := make([]string, n)
	lists := make([][]posting, n)
	for id := range n {
		names[id], lists[id] = u.name(id), slices.Clone(u.list(id))
	}
	u.indexTerms()
	if u.packed != nil || !slices.Equal(u.names, names) || len(u.post) != int(n) {
		t.Fatal("unpack: names differ")
	}
	for id := range n {
		if !slices.Equal(u.lists[id], lists[id]) || cap(u.lists[id]) != len(u.lists[id]) {
			t.Fatalf("unpack: list %d differs or has room past it", id)
		}
	}
	if !bytes.Equal(encodePart(u, pos, fp), data) {
		t.Fatal("unpacked re-encode differs")
	}
	// Search agrees packed and unpacked.
	keep := func(*textDoc) bool { return true }
	terms := []string{first, last, "common", "talk", "nothing"}
	if a, b := refSearch(q, terms, keep, 100), refSearch(u, terms, keep, 100); !reflect.DeepEqual(a, b) {
		t.Fatalf("search packed %v, unpacked %v", a, b)
	}
	// Replay-like removes on the packed part (no unpack) vs the unpacked.
	for _, id := range []int64{1, 2, 5, 40} {
		q.remove(id)
		u.remove(id)
	}
	if q.packed == nil {
		t.Fatal("remove unpacked")
	}
	a, b := encodePart(q, pos, fp), encodePart(u, pos, fp)
	if !bytes.Equal(a, b) {
		t.Fatal("after removes, packed and unpacked encode differently")
	}
	r := decodePacked(t, a)
	if err := partInvariants(r, true); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(canonPart(r), canonPart(q)) {
		t.Fatal("packed part with removes round-trips to other rows")
	}
	// Then a change: add with an old and a new term; the neighbours'
	// windows of the slab are left alone; regroup drops the dead.
	before := map[string][]posting{}
	for id := range n {
		before[q.name(id)] = slices.Clone(q.list(id))
	}
	q.add(textDoc{id: 700, owner: "agent", length: 2}, textBody{content: "common zzznew", meta: "{}"},
		rowTerms{index: map[string]int32{first: 0, "zzznew": 1}, freqs: []float32{1, 1}})
	for name, want := range before {
		id, _ := q.termID(name)
		got := q.list(id)
		if name == first {
			got = got[:len(got)-1]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("term %q: postings %v, were %v (slab overwritten?)", name, got, want)
		}
	}
	q.regroup()
	src := storedTestPart()
	for _, id := range []int64{1, 2, 5, 40} {
		src.remove(id)
	}
	src.add(textDoc{id: 700, owner: "agent", length: 2}, textBody{content: "common zzznew", meta: "{}"},
		rowTerms{index: map[string]int32{first: 0, "zzznew": 1}, freqs: []float32{1, 1}})
	src.regroup()
	if !reflect.DeepEqual(canonPart(q), canonPart(src)) || q.bytes != src.bytes || q.bodyBytes != src.bodyBytes {
		t.Fatalf("regrouped decoded part differs from the source (bytes %d vs %d)", q.bytes, src.bytes)
	}
}

// TestPackedPartWithoutTerms: a part whose rows hold no term at all (every
// term freed) decodes to zero packed terms, finds none, encodes to the
// same bytes, and takes a first change.
func TestPackedPartWithoutTerms(t *testing.T) {
	p := newTextPart(search.Archival, true)
	sc := &textScratch{part: true}
	for i, text := range []string{"alpha beta", "!!!", "", "gamma"} {
		p.addRow(textDoc{id: int64(i + 1), owner: "agent"}, textBody{content: text, meta: "{}"},
			[]sql.NullString{{String: text, Valid: true}, {}, {}}, nil, sc)
	}
	p.remove(1)
	p.remove(4)
	p.regroup()
	if len(p.post) != 0 || p.live != 2 {
		t.Fatalf("%d terms, %d live", len(p.post), p.live)
	}
	fp := partFingerprint(search.Archival, false, true)
	pos := logPos{xmin: 1, xmax: 1}
	data := encodePart(p, pos, fp)
	q := decodePacked(t, data)
	if q.termCount() != 0 {
		t.Fatalf("%d terms", q.termCount())
	}
	for _, s := range []string{"", "alpha", "\xff"} {
		if _, ok := q.termID(s); ok {
			t.Fatalf("%q found", s)
		}
	}
	if !bytes.Equal(encodePart(q, pos, fp), data) {
		t.Fatal("re-encode differs")
	}
	q.addRow(textDoc{id: 9, owner: "agent"}, textBody{content: "delta delta", meta: "{}"},
		[]sql.NullString{{String: "delta delta", Valid: true}, {}, {}}, nil, sc)
	if id, ok := q.termID("delta"); !ok || len(q.list(id)) != 1 || q.df[id] != 1 {
		t.Fatalf("delta: %d %v", id, ok)
	}
}
