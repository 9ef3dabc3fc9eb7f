package blocks_test

import (
	"errors"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// LoadIncrementals loads a store's update rows in one pass: in order, a
// change before its dependency queues until the dependency arrives, and a
// chunk that is not automerge data fails the whole call with nothing kept.
func TestLoadIncrementals(t *testing.T) {
	src := newDoc(t, schema.Text{}, blocks.ReadWrite)
	_, heads, err := src.PendingChanges()
	must(t, err)
	must(t, src.MarkPersisted(heads))
	var rows [][]byte
	for _, s := range []string{"one\n", "two\n", "three\n"} {
		must(t, src.AppendText(s, blocks.Agent))
		data, heads, err := src.PendingChanges()
		must(t, err)
		must(t, src.MarkPersisted(heads))
		rows = append(rows, data)
	}
	for _, tc := range []struct {
		name    string
		chunks  [][]byte
		want    string
		corrupt bool
	}{
		{"in order", rows, "one\ntwo\nthree\n", false},
		{"a change before its dependency", [][]byte{rows[0], rows[2], rows[1]}, "one\ntwo\nthree\n", false},
		{"an empty chunk", [][]byte{rows[0], nil, rows[1], rows[2]}, "one\ntwo\nthree\n", false},
		{"not automerge data", [][]byte{rows[0], []byte("not automerge"), rows[2]}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := src.Fork()
			must(t, err)
			// Back to the state before the appends: a fresh replica of it.
			d, err = d.At(heads)
			must(t, err)
			d, err = d.Fork()
			must(t, err)
			if got, _ := d.Text(); got != "" {
				t.Fatalf("the replica starts with %q, want the state before the appends", got)
			}
			rep, err := d.Manage(directWriter{})
			must(t, err)
			err = rep.LoadIncrementals(tc.chunks)
			if tc.corrupt {
				if !errors.Is(err, blocks.ErrCorrupt) {
					t.Fatalf("err = %v, want ErrCorrupt", err)
				}
				if got, _ := d.Text(); got != "" {
					t.Fatalf("a failed load kept %q", got)
				}
				return
			}
			must(t, err)
			if got, _ := d.Text(); got != tc.want {
				t.Fatalf("loaded %q, want %q", got, tc.want)
			}
		})
	}
}
