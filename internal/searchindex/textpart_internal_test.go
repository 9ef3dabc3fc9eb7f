package searchindex

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// partRows adds rows to p: row i holds "common", "w<i mod 7>" and, for
// even i, "even".
func partRows(p *textPart, from, to int, sc *textScratch) {
	for i := from; i < to; i++ {
		text := fmt.Sprintf("common w%d", i%7)
		if i%2 == 0 {
			text += " even"
		}
		p.addRow(textDoc{id: int64(i + 1), owner: "a"}, textBody{content: text},
			[]sql.NullString{{String: text, Valid: true}, {}, {}}, nil, sc)
	}
}

// TestTextPartNames: names inverts post as terms come and go (a term no
// live row holds is dropped by regroup and its id reused).
func TestTextPartNames(t *testing.T) {
	p := newTextPart(search.Archival, true)
	sc := &textScratch{}
	partRows(p, 0, 14, sc)
	for i := 0; i < 14; i += 7 { // every row holding w0 goes
		p.remove(int64(i + 1))
	}
	p.regroup()
	if _, ok := p.post["w0"]; ok || len(p.free) != 1 {
		t.Fatalf("w0 still held (free ids %v)", p.free)
	}
	for _, id := range p.free {
		if p.names[id] != "" {
			t.Fatalf("free id %d still named %q", id, p.names[id])
		}
	}
	p.addRow(textDoc{id: 100, owner: "a"}, textBody{content: "fresh"}, []sql.NullString{{String: "fresh", Valid: true}, {}, {}}, nil, sc)
	if len(p.names) != len(p.lists) {
		t.Fatalf("%d names for %d lists", len(p.names), len(p.lists))
	}
	for term, id := range p.post {
		if p.names[id] != term {
			t.Fatalf("names[%d] = %q, post says %q", id, p.names[id], term)
		}
	}
}

// A part's charge as rows arrive (newTerm, place) equals the one regroup
// computes for the same rows (one owner: one run), through addRow and
// add, with terms freed and reused between; and names stays post's
// inverse throughout.
func TestTextPartBytesLikeRegroup(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := func() string {
		w := make([]string, 1+r.IntN(8))
		for i := range w {
			w[i] = fmt.Sprint("t", r.IntN(400))
		}
		return strings.Join(w, " ")
	}
	c := &textCache{}
	for _, viaAdd := range []bool{false, true} {
		p := newTextPart(search.Archival, false)
		sc := &textScratch{part: true, seen: map[string][]uint32{}}
		id := int64(0)
		for round := range 20 {
			for range 50 {
				id++
				text := words()
				cols := []sql.NullString{{String: text, Valid: true}, {}, {}}
				if viaAdd {
					rt, n := c.analyzeRow(search.Archival, cols, sc)
					p.add(textDoc{id: id, owner: "a", length: int32(n)}, textBody{}, rt)
				} else {
					p.addRow(textDoc{id: id, owner: "a"}, textBody{}, cols, nil, sc)
				}
			}
			for range 40 {
				p.remove(1 + r.Int64N(id))
			}
			p.regroup() // frees the terms no live row holds
			clear(sc.seen)
			for range 30 {
				id++
				text := words() + fmt.Sprint(" new", round)
				p.addRow(textDoc{id: id, owner: "a"}, textBody{}, []sql.NullString{{String: text, Valid: true}, {}, {}}, nil, sc)
			}
			inc := p.bytes
			p.regroup()
			if p.bytes != inc {
				t.Fatalf("add %v round %d: charged %d incrementally, regroup says %d", viaAdd, round, inc, p.bytes)
			}
			for term, tid := range p.post {
				if p.names[tid] != term {
					t.Fatalf("names[%d] = %q, post says %q", tid, p.names[tid], term)
				}
			}
			for _, f := range p.free {
				if p.names[f] != "" {
					t.Fatalf("free id %d named %q", f, p.names[f])
				}
			}
		}
	}
}
