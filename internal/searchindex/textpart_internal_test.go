package searchindex

import (
	"database/sql"
	"fmt"
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
