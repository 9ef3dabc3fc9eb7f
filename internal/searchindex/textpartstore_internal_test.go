package searchindex

import (
	"bytes"
	"database/sql"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// canonRow is one live row of a part, its term ids replaced by terms.
type canonRow struct {
	created        int64
	length         int32
	superseded     bool
	terms          map[string]float32
	content, tags  string
	meta, sess     string
	sessOf         uint8
	toks           []string
	toksNil        bool
	df             map[string]int32 // of the row's terms
	owner          string
	liveInPostings bool
}

// canonPart is what a part holds, whatever its slots and term ids.
func canonPart(p *textPart) map[int64]canonRow {
	p.fillTerms()
	out := map[int64]canonRow{}
	posted := make([]map[string]float32, len(p.docs)) // each slot's postings, by term
	for id := range int32(p.termCount()) {
		for _, ps := range p.list(id) {
			if posted[ps.slot] == nil {
				posted[ps.slot] = map[string]float32{}
			}
			posted[ps.slot][p.name(id)] = ps.freq
		}
	}
	for slot, d := range p.docs {
		if d.dead {
			continue
		}
		r := canonRow{created: d.created, length: d.length, superseded: d.superseded, owner: d.owner,
			terms: map[string]float32{}, df: map[string]int32{}}
		for _, id := range p.terms[d.termsAt : d.termsAt+d.nTerms] {
			if f, ok := posted[slot][p.name(id)]; ok {
				r.terms[p.name(id)] = f
				r.liveInPostings = true
			}
			r.df[p.name(id)] = p.df[id]
		}
		if p.bodies != nil {
			b := p.bodies[slot]
			r.content, r.tags, r.meta, r.sess, r.sessOf = b.content, b.tags, b.meta, b.sess, b.sessOf
			// Ids that do not read, or name no term a live row holds
			// (a term whose stored list did not decode), as none: what
			// an encode writes for them.
			r.toksNil = b.toks == nil
			for rest := b.toks; len(rest) > 0; {
				id, next, ok := nextTok(rest)
				if !ok || int(id) >= p.termCount() || p.df[id] <= 0 {
					r.toks, r.toksNil = nil, true
					break
				}
				r.toks, rest = append(r.toks, p.name(int32(id))), next
			}
		}
		out[d.id] = r
	}
	return out
}

// unpackToks is the term ids packToks packed into toks.
func unpackToks(toks []byte) []uint32 {
	var ids []uint32
	for len(toks) > 0 {
		id, rest, ok := nextTok(toks)
		if !ok {
			panic(fmt.Sprintf("malformed packed term ids % x", toks))
		}
		ids, toks = append(ids, id), rest
	}
	return ids
}

// storedTestPart is a part with what a stored part must carry: rows
// removed (dead slots, terms freed), a row added after (a free id reused),
// non-ASCII content (no toks), conversations in metadata, a superseded
// row and a frequency that is no multiple of a quarter.
func storedTestPart() *textPart {
	p := newTextPart(search.Archival, true)
	sc := &textScratch{part: true, seen: map[string][]uint32{}}
	for i := range 40 {
		text := fmt.Sprintf("common w%d talk", i%9)
		if i%5 == 0 {
			text = fmt.Sprintf("Ünïcode café %d", i%3)
		}
		meta := fmt.Sprintf(`{"conversation": "c%d"}`, i%4)
		p.addRow(textDoc{id: int64(i + 1), owner: "agent", created: int64(1000 + i), superseded: i == 7},
			textBody{content: text, tags: `["t"]`, meta: meta},
			[]sql.NullString{{String: text, Valid: true}, {String: "tag", Valid: true}, {String: "before words", Valid: true}, {}, {}}, nil, sc)
	}
	for _, id := range []int64{3, 9, 12, 27} {
		p.remove(id)
	}
	p.add(textDoc{id: 99, owner: "agent", created: 5, length: 3}, textBody{content: "odd weights", meta: "{}"},
		rowTerms{index: map[string]int32{"odd": 0, "weight": 1}, freqs: []float32{0.1, 1.5}})
	return p
}

// TestStoredPartRoundTrip: a decoded part holds what the encoded one did,
// row for row and term for term, charges what the same rows charge after
// a regroup, and encodes to the same bytes again.
func TestStoredPartRoundTrip(t *testing.T) {
	p := storedTestPart()
	pos := logPos{xmin: 5, xmax: 9, xip: []int64{6, 8}}
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(p, pos, fp)
	q, got, err := decodePart(data, search.Archival, "agent", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := partInvariants(q, true); err != nil {
		t.Fatal(err)
	}
	if !got.equal(pos) {
		t.Fatalf("position %v, want %v", got, pos)
	}
	want, have := canonPart(p), canonPart(q)
	if !reflect.DeepEqual(want, have) {
		for id := range want {
			if !reflect.DeepEqual(want[id], have[id]) {
				t.Fatalf("row %d:\nwant %+v\ngot  %+v", id, want[id], have[id])
			}
		}
		t.Fatalf("rows %v, want %v", slices.Sorted(maps.Keys(have)), slices.Sorted(maps.Keys(want)))
	}
	p.regroup()
	// Packed, each term is charged its ends, count and df instead of a
	// map entry and two headers, and the postings their stored bytes (and the
	// rows' term ids, filled by the checks above) instead of the lists.
	packedBytes := p.bytes - int64(len(p.post))*(textCostTerm+textCostName-textCostPacked) -
		textCostPosting*q.packed.entries + int64(len(q.packed.raw)) + 4*q.packed.entries
	if q.bytes != packedBytes || q.bodyBytes != p.bodyBytes || q.live != p.live || q.tokens != p.tokens || q.termCount() != len(p.post) {
		t.Fatalf("decoded: bytes %d+%d, live %d, tokens %d, terms %d; regrouped source: %d (packed %d)+%d, %d, %d, %d",
			q.bytes, q.bodyBytes, q.live, q.tokens, q.termCount(), p.bytes, packedBytes, p.bodyBytes, p.live, p.tokens, len(p.post))
	}
	u, _, err := decodePart(data, search.Archival, "agent", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	if u.indexTerms(); u.bytes != p.bytes {
		t.Fatalf("unpacked, the decoded part charges %d bytes; the regrouped source %d", u.bytes, p.bytes)
	}
	// Until its first change the decoded part finds its terms by their
	// names' order, with no map: every term the source holds, at its id.
	if q.post != nil {
		t.Fatal("the decoded part built its map of terms")
	}
	for term, pid := range p.post {
		id, ok := q.termID(term)
		if !ok || q.name(id) != term || q.df[id] != p.df[pid] {
			t.Fatalf("term %q: decoded id %d (%v), df %d, want df %d", term, id, ok, q.df[id], p.df[pid])
		}
	}
	for _, missing := range []string{"", "a", "zzzz", "commo", "commonz"} {
		if id, ok := q.termID(missing); ok {
			t.Fatalf("term %q found at %d", missing, id)
		}
	}
	if again := encodePart(q, got, fp); !bytes.Equal(again, data) {
		t.Fatal("the decoded part encodes to other bytes")
	}
	// A later row lands in the decoded part as in any other: its lists'
	// windows of the slab are copied out, not written past.
	q.add(textDoc{id: 500, owner: "agent"}, textBody{content: "common"}, rowTerms{index: map[string]int32{"common": 0}, freqs: []float32{1}})
	if again, _, err := decodePart(encodePart(q, got, fp), search.Archival, "agent", fp, false); err != nil || len(canonPart(again)) != len(have)+1 {
		t.Fatalf("after an add: %v", err)
	}
	if !reflect.DeepEqual(canonPart(p), have) {
		t.Fatal("an add to the decoded part changed the source's rows")
	}
}

// TestStoredPartRefused: a part of another format or analyzer, another
// kind, or with any byte changed is refused, not decoded.
func TestStoredPartRefused(t *testing.T) {
	p := storedTestPart()
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(p, logPos{xmin: 1, xmax: 1}, fp)
	if _, _, err := decodePart(data, search.Archival, "agent", fp+1, false); err == nil {
		t.Fatal("a part of another fingerprint decoded")
	}
	if _, _, err := decodePart(data, search.Messages, "agent", partFingerprint(search.Messages, false, true), false); err == nil {
		t.Fatal("an archival part decoded as messages")
	}
	if partFingerprint(search.Archival, true, true) == fp || partFingerprint(search.Messages, false, true) == fp {
		t.Fatal("fingerprints do not tell jsonb keys or kinds apart")
	}
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0x40
		if _, _, err := decodePart(bad, search.Archival, "agent", fp, false); err == nil {
			t.Fatalf("byte %d changed: the part still decoded", i)
		}
	}
	for n := range len(data) {
		if _, _, err := decodePart(data[:n], search.Archival, "agent", fp, false); err == nil {
			t.Fatalf("cut to %d bytes: the part still decoded", n)
		}
	}
}

// FuzzDecodePart: no bytes make decodePart panic or return a part that
// panics when read as searches read it or changed as a replay changes it;
// one it accepts is consistent once its first change unpacks it (a list
// that does not decode, or a row's terms past its count, left out), and
// then encodes and decodes to the same rows. The checksum is recomputed
// over the fuzzed body, so the structure itself is what the fuzzer
// attacks.
func FuzzDecodePart(f *testing.F) {
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(storedTestPart(), logPos{xmin: 3, xmax: 7, xip: []int64{4}}, fp)
	f.Add(data[:len(data)-4])
	f.Add(encodePart(newTextPart(search.Archival, true), logPos{xmin: 1, xmax: 1}, fp)[:len(partMagic)+9])
	f.Fuzz(func(t *testing.T, body []byte) {
		in := appendChecksum(body)
		p, pos, err := decodePart(in, search.Archival, "agent", fp, false)
		if err != nil {
			return
		}
		// Packed: every list read, a search of a few terms, a remove
		// (a replay's), then a regroup.
		r, _, _ := decodePart(in, search.Archival, "agent", fp, false)
		var terms []string
		for id := range int32(r.termCount()) {
			_ = r.list(id)
			if id < 3 {
				terms = append(terms, r.name(id))
			}
		}
		refSearch(r, terms, func(*textDoc) bool { return true }, 10)
		if len(r.docs) > 0 {
			r.remove(r.docs[0].id)
		}
		r.regroup()
		if r, _, err := decodePart(encodePart(r, pos, fp), search.Archival, "agent", fp, false); err != nil {
			t.Fatalf("removed from and regrouped, the part does not decode again: %v", err)
		} else if err := partInvariants(r, false); err != nil {
			t.Fatalf("removed from and regrouped, then saved and loaded: %v", err)
		}

		p.indexTerms()
		postings, ids := 0, 0
		for id := range int32(p.termCount()) {
			postings += len(p.list(id))
		}
		for _, d := range p.docs {
			ids += int(d.nTerms)
		}
		if len(p.docs) != p.live || len(p.slots) != p.live || postings != ids || len(p.bodies) != p.live {
			t.Fatalf("inconsistent part: %d docs, %d live, %d slots, %d postings, %d term ids, %d bodies",
				len(p.docs), p.live, len(p.slots), postings, ids, len(p.bodies))
		}
		// A row's packed ids are not checked at the load (their
		// readers take any bytes); the rest holds.
		if err := partInvariants(p, false); err != nil {
			t.Fatalf("inconsistent part: %v", err)
		}
		q, _, err := decodePart(encodePart(p, pos, fp), search.Archival, "agent", fp, false)
		if err != nil {
			t.Fatalf("an accepted part re-encoded does not decode: %v", err)
		}
		if a, b := canonPart(p), canonPart(q); !reflect.DeepEqual(a, b) {
			for id := range a {
				if !reflect.DeepEqual(a[id], b[id]) {
					t.Fatalf("an accepted part re-encoded holds other rows: row %d\nwas %+v\nnow %+v", id, a[id], b[id])
				}
			}
			t.Fatal("an accepted part re-encoded holds other rows")
		}
	})
}

// appendChecksum is body with the CRC-32 encodePart ends a part with.
func appendChecksum(body []byte) []byte {
	return encodeChecksum(slices.Clone(body))
}

// TestStoredPartPackedTermIDs: term ids of one, two and three bytes
// (past 127 and 16,383 terms) survive a part's encoding with terms
// dropped and the rest renumbered by name, and again with none dropped,
// and the decoded part's snippets are those of the text tokenized.
func TestStoredPartPackedTermIDs(t *testing.T) {
	var texts []string
	for i := range 420 {
		var w []string
		for j := range 50 {
			w = append(w, fmt.Sprintf("k%dz%d", i, j))
		}
		texts = append(texts, "shared "+strings.Join(w, " ")+" tail")
	}
	p := tokenPart(texts)
	if p.termCount() < 20000 {
		t.Fatalf("%d terms: too few for three-byte ids", p.termCount())
	}
	for id := int64(2); id <= 120; id += 3 { // terms dropped: renumbered
		p.remove(id)
	}
	fp := partFingerprint(search.Archival, false, true)
	pos := logPos{xmin: 1, xmax: 1}
	q, _, err := decodePart(encodePart(p, pos, fp), search.Archival, "a", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(canonPart(p), canonPart(q)) {
		t.Fatal("the decoded part holds other rows")
	}
	r, _, err := decodePart(encodePart(q, pos, fp), search.Archival, "a", fp, false) // no term dropped
	if err != nil || !reflect.DeepEqual(canonPart(q), canonPart(r)) {
		t.Fatalf("decoded again: %v", err)
	}
	checked := 0
	for i, text := range texts {
		slot, ok := r.slots[int64(i+1)]
		if !ok {
			continue
		}
		for _, query := range []string{fmt.Sprintf("k%dz49", i), fmt.Sprintf("shared k%dz7", i), "tail"} {
			terms := analyzer.QueryTerms(query)
			got := newSnippeter(terms, 8, nil).snippetOfTokens(text, r.bodies[slot].toks, r.termIDs(terms))
			if want := newSnippeter(terms, 8, nil).snippet(text); got != want || want == "" {
				t.Fatalf("row %d, query %q: from ids %q, tokenized %q", i+1, query, got, want)
			}
			checked++
		}
	}
	if checked < 1000 {
		t.Fatalf("%d snippets checked", checked)
	}
	// A packed id past the part's terms (bytes no encode writes) loads,
	// since ids are read, not checked, at the load: the row's snippet
	// from its ids matches nothing, and saved again the row has no ids
	// (its snippets tokenize the text). The one row's one token id, the
	// last byte of the rows (its one posting, slot delta and frequency,
	// follows), is made 127 (the part has one term), the checksum made
	// anew.
	one := newTextPart(search.Archival, true)
	one.add(textDoc{id: 1, owner: "a", length: 1}, textBody{content: "x"}, rowTerms{index: map[string]int32{"x": 0}, freqs: []float32{1}, toks: []uint32{0}})
	data := encodePart(one, pos, fp)
	if _, _, err := decodePart(data, search.Archival, "a", fp, false); err != nil {
		t.Fatalf("the one-row part: %v", err)
	}
	body := slices.Clone(data[:len(data)-4])
	tok := len(body) - 3
	if body[tok] != 0 || body[tok-1] != 1 || body[tok+1] != 1 || body[tok+2] != 4 {
		t.Fatalf("the rows end % x, not one packed token id 0, then the posting 1, 4", body[tok-1:])
	}
	body[tok] = 127
	bad, _, err := decodePart(appendChecksum(body), search.Archival, "a", fp, false)
	if err != nil {
		t.Fatalf("a part whose term ids pass its terms: %v", err)
	}
	terms := analyzer.QueryTerms("x")
	if got := newSnippeter(terms, 8, nil).snippetOfTokens("x", bad.bodies[0].toks, bad.termIDs(terms)); got != "" {
		t.Fatalf("the foreign id matched: %q", got)
	}
	again, _, err := decodePart(encodePart(bad, pos, fp), search.Archival, "a", fp, false)
	if err != nil || again.bodies[0].toks != nil || again.bodies[0].content != "x" {
		t.Fatalf("saved again: %v, %+v", err, again.bodies)
	}
}

// BenchmarkDecodePart: decoding a stored part of 200 archival entries of
// 12 to 41 words of a Zipf vocabulary (an agent's first search from a
// stored part spends about half its time here).
//
//	go test -run '^$' -bench DecodePart ./internal/searchindex
func BenchmarkDecodePart(b *testing.B) {
	r := rand.New(rand.NewPCG(35, 1000))
	zipf := rand.NewZipf(r, 1.07, 2, 4999)
	texts := make([]string, 200)
	for i := range texts {
		w := make([]string, 12+r.IntN(30))
		for j := range w {
			k := zipf.Uint64()
			w[j] = fmt.Sprintf("w%sx%d", strings.Repeat("q", int(k%3)), k)
		}
		texts[i] = strings.Join(w, " ")
	}
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(tokenPart(texts), logPos{xmin: 1, xmax: 1}, fp)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := decodePart(data, search.Archival, "a", fp, false); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodePartKeepsNothingOfItsInput: a decoded part holds copies of
// what it reads, so its input may be the driver's buffer (sql.RawBytes),
// reused once the row closes: the input overwritten after the decode, the
// part reads, searches and encodes as one decoded from an untouched copy.
func TestDecodePartKeepsNothingOfItsInput(t *testing.T) {
	texts := []string{"alpha beta gamma", "beta delta", "gamma epsilon alpha alpha", "zeta"}
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(tokenPart(texts), logPos{xmin: 1, xmax: 1}, fp)
	want, _, err := decodePart(bytes.Clone(data), search.Archival, "a", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	input := bytes.Clone(data)
	got, _, err := decodePart(input, search.Archival, "a", fp, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range input {
		input[i] = 0xA5
	}
	// Packed (the lists as stored), then with its rows' terms filled.
	for _, id := range []int32{0, 1, 2} {
		if g, w := got.list(id), want.list(id); !reflect.DeepEqual(g, w) {
			t.Fatalf("term %d after the input was overwritten: %v, want %v", id, g, w)
		}
	}
	if enc := encodePart(got, logPos{xmin: 1, xmax: 1}, fp); !bytes.Equal(enc, data) {
		t.Fatalf("the part encodes otherwise after its input was overwritten")
	}
	if g, w := canonPart(got), canonPart(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("after the input was overwritten:\n%v\nwant\n%v", g, w)
	}
}

// TestDecodedPartChargeMatchesHeap: what a decoded part is charged against
// the text cache's bound is within 1.5× of the heap it holds, packed as
// decoded and after its first change unpacks it.
func TestDecodedPartChargeMatchesHeap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	zipf := rand.NewZipf(r, 1.07, 2, 49_999)
	texts := make([]string, 2_000)
	for i := range texts {
		w := make([]string, 12+r.IntN(30))
		for j := range w {
			w[j] = fmt.Sprintf("w%d", zipf.Uint64())
		}
		texts[i] = strings.Join(w, " ")
	}
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(tokenPart(texts), logPos{xmin: 1, xmax: 1}, fp)
	const copies = 10
	parts := make([]*textPart, copies)
	measure := func(change func()) int64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		change()
		runtime.GC()
		runtime.ReadMemStats(&after)
		return (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / copies
	}
	heap := measure(func() {
		for i := range parts {
			p, _, err := decodePart(data, search.Archival, "a", fp, true)
			if err != nil {
				t.Fatal(err)
			}
			parts[i] = p
		}
	})
	check := func(state string, heap int64) {
		t.Helper()
		p := parts[0]
		est := p.bytes + p.bodyBytes
		t.Logf("%s: %d terms, charged %d bytes, heap %d (%.2f×)", state, p.termCount(), est, heap, float64(est)/float64(heap))
		if est < heap*2/3 || est > heap*3/2 {
			t.Fatalf("%s: charged %d bytes, the heap holds %d: off by more than 1.5×", state, est, heap)
		}
	}
	check("packed", heap)
	unpacked := measure(func() {
		for _, p := range parts {
			p.indexTerms()
		}
	})
	check("unpacked", heap+unpacked)
	runtime.KeepAlive(parts)
}

// TestInstallHoldsPackedPartToItsUnpackedCharge: a stored part that fits
// the bound only while packed is refused (its first change would unpack
// it past the bound, and the eviction that follows empty the cache); one
// that fits unpacked is installed and charged packed.
func TestInstallHoldsPackedPartToItsUnpackedCharge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	texts := make([]string, 200)
	for i := range texts {
		w := make([]string, 12+r.IntN(30))
		for j := range w {
			w[j] = fmt.Sprintf("w%d", r.IntN(5_000))
		}
		texts[i] = strings.Join(w, " ")
	}
	fp := partFingerprint(search.Archival, false, true)
	data := encodePart(tokenPart(texts), logPos{xmin: 1, xmax: 1}, fp)
	decoded := func() *textPart {
		t.Helper()
		p, _, err := decodePart(data, search.Archival, "a", fp, true)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := decoded()
	packed, unpacked := partCost("a", p), partCost("a", p)+p.unpackCost()
	if p.unpackCost() <= 0 {
		t.Fatalf("a decoded part of %d terms grows by %d when unpacked", p.termCount(), p.unpackCost())
	}
	for _, tc := range []struct {
		limit   int64
		install bool
	}{{packed, false}, {(packed + unpacked) / 2, false}, {unpacked, true}} {
		c := newTextCache(tc.limit, nil, sql.LevelDefault, nil, nil)
		c.goPartial(logPos{xmin: 1, xmax: 1})
		q := decoded()
		got := c.install(search.Archival, "a", &partRead{p: q, pos: logPos{xmin: 1, xmax: 1}}, nil)
		if got != tc.install || got != (c.owned[search.Archival]["a"] != nil) || got == c.tooBig[search.Archival]["a"] {
			t.Fatalf("bound %d (part %d packed, %d unpacked): installed %v, held %v, refused %v; want installed %v",
				tc.limit, packed, unpacked, got, c.owned[search.Archival]["a"] != nil, c.tooBig[search.Archival]["a"], tc.install)
		}
		if got && c.held != packed {
			t.Fatalf("installed packed, charged %d, want %d", c.held, packed)
		}
		if got {
			q.indexTerms()
			c.recount()
			if c.held != unpacked || c.held > c.limit {
				t.Fatalf("unpacked, charged %d (bound %d), want %d", c.held, c.limit, unpacked)
			}
		}
	}
}
