package searchindex

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// TestTextPartAddRowIndexesLikeAdd holds a partition load's indexing
// (textPart.addRow: rows analyzed straight into the partition) to the
// whole-store copy's (analyzeRow, then add): the same documents, lengths,
// term frequencies per row, postings, document frequencies, token ids of
// the bodies and charged bytes, term ids aside. With pieces, each column
// after the first is given as its texts between single spaces (as a
// row's neighbours' contents are), invalid UTF-8 and folded-away marks at
// the joins included.
func TestTextPartAddRowIndexesLikeAdd(t *testing.T) {
	rows := [][]string{
		{"the bees in the garden, the bees!", "garden bees", "", "before the bees", "after"},
		{"Überraschung: Bienen im Garten", "", "bees", "", "the garden"},
		{"", "", "", "", ""},
		{"river river river stone", "", "", "river", "stone river"},
		{"running runs ran runner 42 42", "tag-one tag_two", "meta value", "", ""},
		// Texts met again, in other columns (a conversation's rows hold
		// each other's contents): a load that remembers analyses
		// (textScratch.seen) must index them as if analyzed anew.
		{"after", "", "meta value", "the bees in the garden, the bees!", "Überraschung: Bienen im Garten"},
		{"Überraschung: Bienen im Garten", "after", "meta value", "after", "river river river stone"},
		{"river river river stone", "", "", "Überraschung: Bienen im Garten", "running runs ran runner 42 42"},
		{"caf\xc3", "caf\xc3 \xa9s", "e\u0301 \u0301x", "\u0301 \u0301  tail \xf0", "\x80 bees  garden"},
	}
	for _, kind := range []search.ContentType{search.Archival, search.Messages, search.Blocks} {
		for _, mode := range []struct{ remember, pieces bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			remember := mode.remember
			t.Run(fmt.Sprintf("%s/remember=%v/pieces=%v", kinds[kind].name, remember, mode.pieces), func(t *testing.T) {
				c := newTextCache(DefaultTextCacheBytes, nil, sql.LevelDefault, nil, nil)
				n := len(textWeights[kind])
				want, got := newTextPart(kind, textBodies[kind]), newTextPart(kind, textBodies[kind])
				sc, rsc := &textScratch{part: true}, &textScratch{part: true}
				if remember {
					sc.seen = map[string][]uint32{}
				}
				for i, r := range rows {
					cols := make([]sql.NullString, n)
					for j := range cols {
						cols[j] = sql.NullString{String: r[j], Valid: true}
					}
					d := textDoc{id: int64(i + 1), owner: fmt.Sprint("o", i%2)}
					var body textBody
					if textBodies[kind] {
						body = textBody{content: r[0], tags: "[]", meta: "{}"}
					}
					rt, length := c.analyzeRow(kind, cols, rsc)
					wd := d
					wd.length = int32(length)
					want.add(wd, body, rt)
					var pieces [][]string
					if mode.pieces {
						pieces = make([][]string, n)
						for j := 1; j < n; j++ {
							pieces[j] = strings.Split(r[j], " ")
							cols[j].String = ""
						}
					}
					got.addRow(d, body, cols, pieces, sc)
				}
				if got.bytes != want.bytes || got.bodyBytes != want.bodyBytes || got.tokens != want.tokens ||
					got.live != want.live || got.runs != want.runs || len(got.post) != len(want.post) {
					t.Fatalf("addRow: bytes %d+%d, tokens %d, live %d, runs %d, %d terms; add: %d+%d, %d, %d, %d, %d",
						got.bytes, got.bodyBytes, got.tokens, got.live, got.runs, len(got.post),
						want.bytes, want.bodyBytes, want.tokens, want.live, want.runs, len(want.post))
				}
				name := func(p *textPart) map[int32]string {
					m := map[int32]string{}
					for term, id := range p.post {
						m[id] = term
					}
					return m
				}
				gn, wn := name(got), name(want)
				for slot := range want.docs {
					g, w := got.docs[slot], want.docs[slot]
					if g.id != w.id || g.owner != w.owner || g.length != w.length || g.nTerms != w.nTerms {
						t.Fatalf("slot %d: addRow %+v, add %+v", slot, g, w)
					}
					gf, wf := map[string]float32{}, map[string]float32{}
					for k := range w.nTerms {
						gid, wid := got.terms[g.termsAt+k], want.terms[w.termsAt+k]
						gf[gn[gid]] = postingFreq(got, gid, int32(slot))
						wf[wn[wid]] = postingFreq(want, wid, int32(slot))
					}
					if fmt.Sprint(gf) != fmt.Sprint(wf) {
						t.Fatalf("slot %d: addRow terms %v, add %v", slot, gf, wf)
					}
					if textBodies[kind] {
						gp, wp := got.bodies[slot].toks, want.bodies[slot].toks
						gt, wt := unpackToks(gp), unpackToks(wp)
						if (gp == nil) != (wp == nil) || len(gt) != len(wt) {
							t.Fatalf("slot %d: addRow toks %v, add %v", slot, gt, wt)
						}
						for k := range wt {
							if gn[int32(gt[k])] != wn[int32(wt[k])] {
								t.Fatalf("slot %d token %d: addRow %q, add %q", slot, k, gn[int32(gt[k])], wn[int32(wt[k])])
							}
						}
					}
				}
				for term, wid := range want.post {
					gid := got.post[term]
					if got.df[gid] != want.df[wid] || len(got.lists[gid]) != len(want.lists[wid]) {
						t.Fatalf("term %q: addRow df %d postings %v, add %d %v", term, got.df[gid], got.lists[gid], want.df[wid], want.lists[wid])
					}
					if !slices.Equal(got.lists[gid], want.lists[wid]) {
						t.Fatalf("term %q: addRow postings %v, add %v", term, got.lists[gid], want.lists[wid])
					}
				}
			})
		}
	}
}

func postingFreq(p *textPart, id, slot int32) float32 {
	for _, ps := range p.lists[id] {
		if ps.slot == slot {
			return ps.freq
		}
	}
	return -1
}
