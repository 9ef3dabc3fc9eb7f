package storetest

import (
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// RunNeighbourTests runs the tests of archival entries' neighbours (the
// same conversation's two live entries before an entry and the one after
// it, whose words find it at a lower weight) against stores made by open: a superseded entry is
// nobody's neighbour, a merged entry takes its sources' place, and a
// search ranks a conversation's turns toward its best.
func RunNeighbourTests(t *testing.T, open LimitOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, LimitOpener)
	}{
		{"SupersededNotNeighbour", testSupersededNotNeighbour},
		{"MergedTakesSourcesPlace", testMergedTakesSourcesPlace},
		{"SessionRankedTogether", testSessionRankedTogether},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// findsArchival checks that a full-text search of agent's archival
// memory for q finds exactly want (ids, any order).
func findsArchival(t *testing.T, ar *memory.Archival, q string, superseded bool, want ...int64) {
	t.Helper()
	res, err := ar.Search(ctx, q, search.NewOptions().Mode(search.FTS).IncludeSuperseded(superseded).Limit(50))
	must(t, err)
	var got []int64
	for _, r := range res {
		got = append(got, r.ID)
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("search %q (superseded %v) found %v, want %v", q, superseded, got, want)
	}
}

func insertIn(t *testing.T, ar *memory.Archival, conv, content string) int64 {
	t.Helper()
	e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: content, Metadata: map[string]any{"conversation": conv}})
	must(t, err)
	return e.ID
}

// testSupersededNotNeighbour: once an entry is superseded its live
// neighbours are each other's context, and no search finds them by its
// words; it keeps the entries next to it as its own context.
func testSupersededNotNeighbour(t *testing.T, open LimitOpener) {
	s := open(t, nil)
	defer s.Close()
	ar := s.Agent("a").Archival()
	e1 := insertIn(t, ar, "c2", "echo river")
	e2 := insertIn(t, ar, "c2", "zebrafinch nest")
	e3 := insertIn(t, ar, "c2", "foxtrot dune")
	findsArchival(t, ar, "zebrafinch", false, e1, e2, e3)
	e4, err := ar.Supersede(ctx, e2, memory.ArchivalEntry{Content: "corrected nest count", Metadata: map[string]any{"conversation": "c2"}})
	must(t, err)
	findsArchival(t, ar, "zebrafinch", false)
	findsArchival(t, ar, "zebrafinch", true, e2)
	// e4 is written after e3: the live entries are e1, e3, e4, each
	// with the two before it and the one after it as context.
	findsArchival(t, ar, "river", false, e1, e3, e4.ID)
	findsArchival(t, ar, "dune", false, e1, e3, e4.ID)
	findsArchival(t, ar, "corrected", false, e3, e4.ID)
	must(t, ar.Delete(ctx, e3))
	findsArchival(t, ar, "river", false, e1, e4.ID)
	// The superseded entry stands in the conversation's history: its
	// neighbours are the entries next to it, superseded or not.
	findsArchival(t, ar, "corrected", true, e1, e2, e4.ID)
	findsArchival(t, ar, "echo", true, e1, e2, e4.ID)
}

// testMergedTakesSourcesPlace: a merge of two of a conversation's
// entries puts the merged entry where the first source was: its
// neighbours are that source's live neighbours, and the conversation's
// last entry is not its neighbour.
func testMergedTakesSourcesPlace(t *testing.T, open LimitOpener) {
	s := open(t, &memory.Options{KeepDuplicates: true})
	defer s.Close()
	ar := s.Agent("a").Archival()
	e1 := insertIn(t, ar, "c1", "alpha harbour")
	insertIn(t, ar, "c1", "duplicate fact about the lighthouse keeper")
	e3 := insertIn(t, ar, "c1", "bravo meadow")
	e4 := insertIn(t, ar, "c1", "charlie quarry")
	insertIn(t, ar, "c1", "duplicate fact about the LIGHTHOUSE keeper")
	e6 := insertIn(t, ar, "c1", "delta canyon")
	rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true})
	must(t, err)
	if rep.Applied != 1 {
		t.Fatalf("applied %d merges, want 1 (%+v)", rep.Applied, rep)
	}
	live, err := ar.List(ctx, nil)
	must(t, err)
	var m int64
	for _, e := range live {
		if e.ID > e6 {
			m = e.ID
		}
	}
	if m == 0 || len(live) != 5 {
		t.Fatalf("live entries %+v: want 5, one merged", live)
	}
	// The live entries: e1, m, e3, e4, e6; each is found by the words of
	// the two before and the one after it.
	findsArchival(t, ar, "harbour", false, e1, m, e3)
	findsArchival(t, ar, "lighthouse", false, m, e1, e3, e4)
	findsArchival(t, ar, "meadow", false, m, e3, e4, e6)
	findsArchival(t, ar, "canyon", false, e4, e6)
	// The merged entry is superseded in turn: its neighbours close up.
	e7, err := ar.Supersede(ctx, m, memory.ArchivalEntry{Content: "echo summary"})
	must(t, err)
	findsArchival(t, ar, "harbour", false, e1, e3, e4)
	findsArchival(t, ar, "meadow", false, e1, e3, e4, e6)
	findsArchival(t, ar, "summary", false, e7.ID)
}

// testSessionRankedTogether: a turn that matches a query weakly ranks
// above a stronger match of another conversation when its own
// conversation holds the best match (a full-text leg moves each row's
// score toward its session's best), for messages by batch and archival
// entries by conversation key; an entry naming no conversation keeps its
// place.
func testSessionRankedTogether(t *testing.T, open LimitOpener) {
	s := open(t, nil)
	a := s.Agent("sessions")
	filler := strings.Repeat("lorem ipsum dolor sit amet ", 3)
	// x: the best match, four turns of other words, then a weak match
	// (one "zebra" in a long turn); y: a single medium match.
	x := []string{"zebra zebra zebra zebra zebra", "lorem ipsum", "dolor sit", "amet lorem", "ipsum dolor", "zebra " + filler}
	y := "zebra one two three four five six seven eight nine ten eleven twelve"
	var msgs []memory.Message
	for _, c := range x {
		msgs = append(msgs, memory.Message{Role: memory.RoleUser, Content: c, BatchID: "x"})
	}
	out, err := a.Messages().AppendMany(ctx, msgs)
	must(t, err)
	weak := out[len(out)-1].ID
	other, err := a.Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: y, BatchID: "y"}})
	must(t, err)
	// The order of the three turns that say "zebra" (the others are
	// found by their neighbours' words).
	order := func(what string, types search.ContentType, want ...int64) {
		t.Helper()
		res, err := a.Search(ctx, "zebra", search.NewOptions().Mode(search.FTS).ContentTypes(types).Limit(20))
		must(t, err)
		var got []int64
		var scores []float64
		for _, r := range res {
			if slices.Contains(want, r.ID) {
				got = append(got, r.ID)
				scores = append(scores, r.Score)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: search found %v (scores %v), want %v", what, got, scores, want)
		}
	}
	order("messages", search.Messages, out[0].ID, weak, other[0].ID)

	ar := a.Archival()
	var ids []int64
	for _, c := range x {
		ids = append(ids, insertIn(t, ar, "x", c))
	}
	medium := insertIn(t, ar, "y", y)
	order("archival entries", search.Archival, ids[0], ids[len(ids)-1], medium)

	// The same entries naming no conversation: the weak one stays last.
	b := s.Agent("no-sessions")
	var alone []int64
	for _, c := range append(slices.Clone(x), y) {
		e, err := b.Archival().Insert(ctx, memory.ArchivalEntry{Content: c})
		must(t, err)
		alone = append(alone, e.ID)
	}
	res, err := b.Archival().Search(ctx, "zebra", search.NewOptions().Mode(search.FTS).Limit(10))
	must(t, err)
	if len(res) != 3 || res[0].ID != alone[0] || res[1].ID != alone[len(alone)-1] || res[2].ID != alone[len(alone)-2] {
		var got []int64
		for _, r := range res {
			got = append(got, r.ID)
		}
		t.Fatalf("entries naming no conversation: search found %v, want [%d %d %d]", got, alone[0], alone[len(alone)-1], alone[len(alone)-2])
	}
}
