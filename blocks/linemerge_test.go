package blocks_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// Whole-value writes on several replicas, each inserting new lines among
// lines of the same shape ("r0-3" beside "r1-2"), merge with every line
// intact: a line inserted by a diff is anchored at a line boundary, never
// on another line's characters, where a concurrent insertion anchored
// there too would interleave with it (a write-back edit
// re-applied on a new epoch as a value difference, garbled with another
// writer's concurrent line).
func TestConcurrentLineInsertionsStayWhole(t *testing.T) {
	r := rand.New(rand.NewSource(29))
	for round := range 200 {
		base := newDoc(t, schema.Text{}, blocks.ReadWrite)
		var lines []string
		for i := range 1 + r.Intn(4) {
			lines = append(lines, fmt.Sprintf("b-%d", i))
		}
		must(t, base.SetText(strings.Join(lines, "\n")+"\n", blocks.Agent))
		want := map[string]bool{}
		for _, l := range lines {
			want[l] = true
		}
		var replicas []*blocks.Document
		for k := range 3 {
			rep, err := base.Fork()
			must(t, err)
			text, _ := rep.Text()
			ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
			for i := range 1 + r.Intn(3) {
				l := fmt.Sprintf("r%d-%d", k, i)
				at := r.Intn(len(ls) + 1)
				ls = append(ls[:at], append([]string{l}, ls[at:]...)...)
				want[l] = true
			}
			must(t, rep.SetText(strings.Join(ls, "\n")+"\n", blocks.Agent))
			replicas = append(replicas, rep)
		}
		for _, rep := range replicas {
			must(t, base.Merge(rep))
		}
		text, _ := base.Text()
		got := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if !want[l] || got[l] {
				t.Fatalf("round %d: merged text %q has line %q, garbled or repeated", round, text, l)
			}
			got[l] = true
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: merged text %q has %d lines, want %d", round, text, len(got), len(want))
		}
	}
}
