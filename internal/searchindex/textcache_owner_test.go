package searchindex

import (
	"cmp"
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/search"
)

// refSearch is the text cache's ranking before its postings were grouped
// by owner: every posting of every query term scored, df counted from the
// lists, then filtered by keep. The grouped search must return exactly
// its hits (ids, order and scores to the bit) for every scope.
func refSearch(p *textPart, terms []string, keep func(*textDoc) bool, limit int) []textHit {
	scores := make([]float64, len(p.docs))
	nRow := int64(p.live)
	avgdl := float64(p.tokens) / float64(nRow)
	for _, term := range terms {
		id, ok := p.termID(term)
		if !ok {
			continue
		}
		var nHit int64
		for _, x := range p.list(id) {
			if !p.docs[x.slot].dead {
				nHit++
			}
		}
		if nHit == 0 {
			continue
		}
		idf := math.Log((float64(nRow-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0.0 {
			idf = 1e-6
		}
		for _, x := range p.list(id) {
			d := &p.docs[x.slot]
			if d.dead {
				continue
			}
			f := float64(x.freq)
			D := float64(d.length)
			scores[x.slot] += idf * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-bm25B+bm25B*D/avgdl)))
		}
	}
	var hits []textHit
	for slot, s := range scores {
		if s != 0 && keep(&p.docs[slot]) {
			hits = append(hits, textHit{id: p.docs[slot].id, score: -s})
		}
	}
	slices.SortFunc(hits, func(a, b textHit) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return hits[:min(limit, len(hits))]
}

// TestTextCacheOwnerPartitions holds the owner-grouped search to the
// ungrouped one over many owners, through adds, removes, re-adds and the
// regroupings they trigger: the same hits in the same order with the same
// scores, and never a row outside the scope.
func TestTextCacheOwnerPartitions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	vocab := strings.Fields(`wing flow boundary layer pressure heat transfer shock wave supersonic
		mach number jet nozzle buckling shell cylinder plate stress vibration flutter
		temperature turbulent laminar skin friction drag lift airfoil slender body cone`)
	text := func() string {
		w := make([]string, 3+r.IntN(20))
		for i := range w {
			w[i] = vocab[min(r.IntN(len(vocab)), r.IntN(len(vocab)))]
		}
		return strings.Join(w, " ")
	}
	c := newTextCache(DefaultTextCacheBytes, nil, sql.LevelDefault, nil, nil)
	p := newTextPart(search.Archival, true)
	const owners = 60
	owner := func(i int) string { return fmt.Sprintf("agent-%02d", i) }
	owned := map[int64]string{}
	nextID := int64(1)
	add := func(id int64, o string) {
		content := text()
		rt, n := c.analyzeRow(search.Archival, []sql.NullString{{String: content, Valid: true}, {}, {}}, &c.scratch)
		p.add(textDoc{id: id, owner: o, created: int64(r.IntN(1000)), superseded: r.IntN(10) == 0, length: int32(n)},
			textBody{content: content}, rt)
		owned[id] = o
	}
	// Table order: owners interleaved, as a store's rows come.
	for range 3000 {
		add(nextID, owner(r.IntN(owners)))
		nextID++
	}
	p.regroup()
	check := func(stage string) {
		t.Helper()
		for q := range 40 {
			var terms []string
			for range 1 + r.IntN(3) {
				terms = append(terms, analyzer.Stem(vocab[r.IntN(len(vocab))]))
			}
			terms = append(terms, "absent")
			limit := []int{1, 10, 50, 5000}[q%4]
			scopes := []textFilter{{all: true}, {agent: owner(r.IntN(owners))}, {agent: "nobody"}}
			// A scope with shared rows of two other owners.
			sh := textFilter{agent: owner(r.IntN(owners)), shared: map[int64]bool{}}
			for id := range owned {
				if len(sh.shared) < 3 && owned[id] != sh.agent {
					sh.shared[id] = true
				}
			}
			scopes = append(scopes, sh)
			for _, f := range scopes {
				since := int64(r.IntN(300))
				f.keep = func(d *textDoc) bool {
					return (f.all || d.owner == f.agent || f.shared[d.id]) && !d.superseded && d.created >= since
				}
				want := refSearch(p, terms, f.keep, limit)
				got := c.search2(p, terms, f, limit)
				if !slices.Equal(want, got) {
					t.Fatalf("%s: scope %+v terms %v limit %d:\nwant %v\ngot  %v", stage, f.agent, terms, limit, want, got)
				}
				for _, h := range got {
					if !f.all && owned[h.id] != f.agent && !f.shared[h.id] {
						t.Fatalf("%s: %s's search returned row %d of %s", stage, f.agent, h.id, owned[h.id])
					}
				}
			}
		}
	}
	check("built")
	compactions := 0
	// Appends scatter the owners' runs; removals leave dead slots.
	for round := range 6 {
		for range 1500 {
			switch r.IntN(3) {
			case 0:
				add(nextID, owner(r.IntN(owners)))
				nextID++
			case 1, 2:
				id := 1 + r.Int64N(nextID-1)
				if o, ok := owned[id]; ok {
					p.remove(id)
					delete(owned, id)
					if r.IntN(2) == 0 { // an update: the row again, new text
						add(id, o)
					}
				}
			}
		}
		check(fmt.Sprintf("round %d before compaction (%d runs, %d dead)", round, p.runs, p.dead))
		dead := p.dead
		p.maybeCompact()
		if p.dead < dead {
			compactions++
		}
		check(fmt.Sprintf("round %d after compaction (%d runs, %d dead)", round, p.runs, p.dead))
	}
	if compactions == 0 {
		t.Fatal("no round compacted: the test misses the renumbering")
	}
	p.regroup()
	check("regrouped")
	if p.runs != len(p.owners) {
		t.Fatalf("after regrouping: %d runs for %d owners", p.runs, len(p.owners))
	}
}

// search2 runs search over p, installed as c's Archival part.
func (c *textCache) search2(p *textPart, terms []string, f textFilter, limit int) []textHit {
	c.mu.Lock()
	c.parts = map[search.ContentType]*textPart{search.Archival: p}
	c.mu.Unlock()
	return c.search(search.Archival, terms, f, limit, 0)
}
