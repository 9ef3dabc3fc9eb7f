package searchindex

import (
	"database/sql"
	"fmt"
	"math"
	"testing"

	"github.com/engram-go/engram/search"
)

// BenchmarkTextStatsMoveResident moves a partial cache's complete
// statistics (PostgreSQL) over a catch-up's 100 changed rows of one
// resident partition of 20,000 rows and 60,000 terms: what a catch-up
// does under the cache's lock when an agent that searched lately edits
// its rows (or a message of it gains a neighbour).
func BenchmarkTextStatsMoveResident(b *testing.B) {
	const rowsChanged = 100
	c := &textCache{}
	sc := &textScratch{part: true}
	analyze := func(id int64, text string) textRow {
		cols := make([]sql.NullString, len(textWeights[search.Archival]))
		cols[0] = sql.NullString{String: text, Valid: true}
		rt, n := c.analyzeRow(search.Archival, cols, sc)
		return textRow{t: search.Archival, id: id, doc: textDoc{id: id, owner: "a", length: int32(n)}, terms: rt}
	}
	p := newTextPart(search.Archival, false)
	for i := range 20_000 {
		r := analyze(int64(i+1), fmt.Sprintf("w%d x%d y%d common", i, i, i))
		p.add(r.doc, textBody{}, r.terms)
	}
	p.hiPos = logPos{xmin: 2, xmax: 2}
	s := &textStats{loaded: true, complete: true, pos: logPos{xmin: 2, xmax: 2}, maxID: 20_000, df: map[string]int64{}}
	var staged []textRow
	spans := map[int64]logSpan{}
	for i := range rowsChanged {
		id := int64(1 + i*200)
		staged = append(staged, analyze(id, fmt.Sprintf("w%d x%d edited common", i, i)))
		spans[id] = logSpan{changed: []logEntry{{pos: 2, seq: 2}}, mark: 1}
	}
	b.ResetTimer()
	for range b.N {
		m := &statsMove{df: map[string]int64{}, maxID: s.maxID, unmarked: true}
		var arrivals map[msgPlace]*textRow
		for _, r := range staged {
			m.row(s, r, spans, staged, &arrivals, func() *textPart { return p })
		}
		if !m.apply(&textStats{loaded: true, df: map[string]int64{}}, math.MaxInt64) || m.df["edit"] != rowsChanged || m.df["common"] != 0 {
			b.Fatalf("failed %v, df %d %d", m.failed, m.df["edit"], m.df["common"])
		}
	}
}
