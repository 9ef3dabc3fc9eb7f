package amchunk_test

import (
	"errors"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/amchunk"
)

// A change of no operations costs automerge a change all the same: its
// hash, its place in the history (kept in memory and stored for good), and
// with automerge-go's Doc.Apply much more. A saved document compresses a
// run of empty changes to about a byte each (20,000 in ~600 bytes), and
// change chunks carry one in ~70 bytes; measured by operations alone they
// cost nothing, so neither MergeLimits nor a sync budget of operations
// bounds them. Their number must count.
func TestMeasureCountsEmptyChanges(t *testing.T) {
	const n = 20_000
	doc := automerge.New()
	if err := doc.RootMap().Set("k", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := doc.Commit(""); err != nil {
		t.Fatal(err)
	}
	before := doc.Heads()
	for range n {
		if _, err := doc.Commit("", automerge.CommitOptions{AllowEmpty: true}); err != nil {
			t.Fatal(err)
		}
	}
	chs, err := doc.Changes(before...)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"saved document", doc.Save()},
		{"change chunks", automerge.SaveChanges(chs[:6_000])}, // past MergeLimits(5000).Changes
	} {
		c, err := amchunk.Measure(tc.data, blocks.MergeLimits(5000))
		t.Logf("%s: %d bytes: %+v %v", tc.name, len(tc.data), c, err)
		if !errors.Is(err, amchunk.ErrTooCostly) {
			t.Errorf("%s of %d bytes holding %d changes passes MergeLimits(5000) (measured %d operations): changes are not bounded", tc.name, len(tc.data), c.Changes, c.Ops)
		}
	}
}
