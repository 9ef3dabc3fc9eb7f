package searchindex

import (
	"database/sql"
	"math"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/analyzer"
	"github.com/engram-go/engram/internal/vecmath"
	"github.com/engram-go/engram/search"
)

func res(t search.ContentType, id int64) *hit { return &hit{Result: search.Result{Type: t, ID: id}} }

func TestFuseRRF(t *testing.T) {
	// Two lists: FTS (a, b, c) and vector (c, a, d).
	fts := []*hit{res(search.Archival, 1), res(search.Archival, 2), res(search.Archival, 3)}
	for i, r := range fts {
		r.Source.FTSRank = i + 1
		r.Source.BM25 = -float64(10 - i)
	}
	vec := []*hit{res(search.Archival, 3), res(search.Archival, 1), res(search.Archival, 4)}
	for i, r := range vec {
		r.Source.VectorRank = i + 1
		r.Source.Distance = 0.1 * float64(i+1)
	}
	got := fuseRRF([][]*hit{fts, vec}, nil)
	want := []struct {
		id    int64
		fused float64
	}{
		{1, 1.0/61 + 1.0/62},
		{3, 1.0/63 + 1.0/61},
		{2, 1.0 / 62},
		{4, 1.0 / 63},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d", len(got), len(want))
	}
	for i, w := range want {
		r := got[i]
		if r.ID != w.id || math.Abs(r.Score-w.fused) > 1e-12 || r.Source.Fused != r.Score {
			t.Errorf("rank %d: id %d score %v (fused %v), want id %d score %v", i+1, r.ID, r.Score, r.Source.Fused, w.id, w.fused)
		}
	}
	// Both sides are recorded on the merged result.
	if r := got[0]; r.Source.FTSRank != 1 || r.Source.VectorRank != 2 || r.Source.Distance != 0.2 {
		t.Errorf("merged source = %+v snippet %q", r.Source, r.Snippet)
	}
	if r := got[3]; r.Source.FTSRank != 0 || r.Source.VectorRank != 3 {
		t.Errorf("vector-only source = %+v", r.Source)
	}
	// The first list holding a row lends its Result (fused in place).
	if got[0] != fts[0] || got[3] != vec[2] {
		t.Errorf("fused results are copies, not the lists' own")
	}

	// Across content types: same rank ties, broken by type then id; the
	// same id in different types are different results.
	got = fuseRRF(nil, nil)
	if len(got) != 0 {
		t.Fatal("fusing nothing")
	}
	got = fuseRRF([][]*hit{
		{res(search.Messages, 7), res(search.Messages, 8)},
		{res(search.Blocks, 7), res(search.Blocks, 9)},
	}, nil)
	var order []string
	for _, r := range got {
		order = append(order, r.Type.String()+":"+string(rune('0'+r.ID)))
	}
	if want := "blocks:7 messages:7 blocks:9 messages:8"; join(order) != want {
		t.Errorf("order %q, want %q", join(order), want)
	}
	// A weight scales one list's contributions: with the second list at
	// 0.1, the first list's second item outranks the second list's first.
	got = fuseRRF([][]*hit{
		{res(search.Messages, 7), res(search.Messages, 8)},
		{res(search.Blocks, 7), res(search.Blocks, 9)},
	}, []float64{1, 0.1})
	order = order[:0]
	for _, r := range got {
		order = append(order, r.Type.String()+":"+string(rune('0'+r.ID)))
	}
	if want := "messages:7 messages:8 blocks:7 blocks:9"; join(order) != want {
		t.Errorf("weighted order %q, want %q", join(order), want)
	}
	if w := got[2].Source.Fused; w != 0.1/float64(search.RRFK+1) {
		t.Errorf("weighted fused score %v", w)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

func TestExcerpt(t *testing.T) {
	if got := excerpt("short text", 200); got != "short text" {
		t.Errorf("got %q", got)
	}
	long := "alpha beta gamma delta epsilon zeta eta theta iota kappa"
	if got := excerpt(long, 20); got != "alpha beta gamma"+search.Ellipsis {
		t.Errorf("got %q", got)
	}
}

func TestVectorBlobRoundTrip(t *testing.T) {
	v := []float32{1, -2.5, float32(math.Pi), 0}
	got, err := vecmath.FromBlob(vecmath.Blob(v))
	if err != nil || len(got) != len(v) {
		t.Fatal(got, err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Fatalf("%v != %v", got, v)
		}
	}
	if _, err := vecmath.FromBlob([]byte{1, 2, 3}); err == nil {
		t.Fatal("odd blob accepted")
	}
}

func TestSnippet(t *testing.T) {
	terms := analyzer.QueryTerms("postgres migrations café")
	text := "Intro words here. Then more filler text about nothing. The Postgres migration needs a window; the Cafe is closed during the migration."
	got := snippet(text, terms, 10)
	want := search.Ellipsis + "nothing. The «Postgres» «migration» needs a window; the «Cafe» is" + search.Ellipsis
	if got != want {
		t.Errorf("snippet = %q\nwant     %q", got, want)
	}
	if got := snippet("short postgres note", terms, 10); got != "short «postgres» note" {
		t.Errorf("whole text = %q", got)
	}
	if got := snippet("nothing relevant", terms, 10); got != "" {
		t.Errorf("no match = %q", got)
	}
}

// A huge row does not leave its analyzer scratch held for the cache's
// lifetime, outside its budget (5M tokens were 19 MB for good).
func TestTextCacheScratchIsBounded(t *testing.T) {
	c := newTextCache(DefaultTextCacheBytes, nil, sql.LevelDefault, nil, nil)
	big := strings.Repeat("a ", 5_000_000)
	c.analyzeRow(search.Archival, []sql.NullString{{String: big, Valid: true}, {}, {}}, &c.scratch)
	rt, n := c.analyzeRow(search.Archival, []sql.NullString{{String: "small row", Valid: true}, {}, {}}, &c.scratch)
	if n != 2 || len(rt.toks) != 2 {
		t.Fatalf("small row after a huge one: %d tokens, toks %v", n, rt.toks)
	}
	if cap(c.scratch.toks) > scratchKeepTokens || cap(c.scratch.buf) > scratchKeepBytes {
		t.Fatalf("scratch held after a 5M-token row: %d tokens, %d bytes", cap(c.scratch.toks), cap(c.scratch.buf))
	}
}
