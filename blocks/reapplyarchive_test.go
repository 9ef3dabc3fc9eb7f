package blocks_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// A write-back replica's unflushed edits, carried to a new epoch another
// writer made, keep every edit of that writer: the writer's changes this
// replica had not seen, its changes on the new epoch, and lines that look
// alike (markers each writer rewrites in place, as a store's agents do).
// Each case is a random interleaving over three epochs (every third
// case switches two epochs at once); the carried edits go through the
// archived epochs (what a store passes to Reapply). The same cases
// without the archive, diffing whole values, lose the other writer's
// lines in 8 of 200.
func TestReapplyThroughArchiveKeepsOthersEdits(t *testing.T) {
	lost := 0
	for seed := range 200 {
		got, want := carryScenario(t, uint64(seed), true)
		for _, line := range want {
			if n := strings.Count(got+"\n", line+"\n"); n != 1 {
				t.Errorf("seed %d: %q present %d times in\n%s", seed, line, n, got)
				lost++
			}
		}
		if lost > 5 {
			t.FailNow()
		}
	}
}

// carryScenario plays one interleaving (see above) and returns the
// replica's text after Reapply and the lines that must each be in it
// once. throughArchive passes the old epoch's document to Reapply.
func carryScenario(t *testing.T, seed uint64, throughArchive bool) (string, []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	marker := func(who string, i int) string {
		return fmt.Sprintf("{%s-round-%d-%s}", who, i, strings.Repeat("~", 20))
	}
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("start", blocks.Agent))
	ours, theirs := []string{"o0", "o1", "o2"}, []string{"t0", "t1", "t2"}
	round := map[string]int{}
	for _, w := range theirs {
		must(t, d.AppendText("\n"+marker(w, 0), blocks.Agent))
	}
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	other, err := d.Fork()
	must(t, err)
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)
	var tokens []string
	started := map[string]bool{}
	edit := func(doc *blocks.Document, w string, n int) {
		if doc == d && !started[w] {
			must(t, doc.AppendText("\n"+marker(w, 0), blocks.Agent))
			started[w] = true
			return
		}
		if rng.IntN(2) == 0 {
			ok, err := doc.ReplaceText(marker(w, round[w]), marker(w, round[w]+1), blocks.Agent)
			must(t, err)
			if !ok {
				t.Fatalf("seed %d: marker of %s round %d gone", seed, w, round[w])
			}
			round[w]++
			return
		}
		tok := fmt.Sprintf("[%s-%d]", w, n)
		must(t, doc.AppendText("\n"+tok, blocks.Agent))
		tokens = append(tokens, tok)
	}
	behind := false // this replica missed an epoch
	var archived [][]byte
	persist := func() {
		data, heads, err := other.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(other, heads))
		if !behind && rng.IntN(4) == 0 { // this replica sees it
			must(t, rep.LoadIncremental(data))
		}
	}
	n := 0
	for epoch := range 3 {
		for range 10 + rng.IntN(30) {
			n++
			if rng.IntN(2) == 0 {
				edit(d, ours[rng.IntN(len(ours))], n)
			} else {
				edit(other, theirs[rng.IntN(len(theirs))], n)
				persist()
			}
		}
		// The other writer's epoch ends: its document (every persisted
		// change of the epoch) is archived, and the new epoch starts from
		// its value, with a few of its changes folded into the snapshot.
		old, err := other.Save()
		must(t, err)
		if other, err = other.Rebased(); err != nil {
			t.Fatal(err)
		}
		for range rng.IntN(4) {
			n++
			edit(other, theirs[rng.IntN(len(theirs))], n)
		}
		_, heads, err := other.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(other, heads))
		if throughArchive {
			archived = append(archived, old)
		}
		if behind = epoch == 0 && seed%3 == 0; behind {
			continue // it switches two epochs at once, after the next
		}
		snap, err := other.Save()
		must(t, err)
		k, err := rep.Reset(snap)
		must(t, err)
		must(t, rep.Reapply(k, archived))
		archived = nil
	}
	got, err := d.Text()
	must(t, err)
	want := append([]string{"start"}, tokens...)
	for _, w := range append(append([]string{}, theirs...), ours...) {
		if started[w] || strings.HasPrefix(w, "t") {
			want = append(want, marker(w, round[w]))
		}
	}
	return got, want
}
