package blocks_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// LoadIncremental on a standalone document refuses damaged input with
// ErrCorrupt and loads nothing. automerge skips what it cannot parse
// without an error, so before, a chunk with a damaged header, body or
// checksum, or a valid chunk cut short, returned nil having merged
// nothing. Empty input is nothing to load: nil.
func TestLoadIncrementalRefusesDamagedInput(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	must(t, a.SetText("hello", blocks.System))
	full, err := a.Save()
	must(t, err)
	must(t, a.AppendText(" world", blocks.System))
	inc1, err := a.SaveIncremental()
	must(t, err)
	must(t, a.AppendText(" and more", blocks.System))
	inc2, err := a.SaveIncremental()
	must(t, err)
	both := slices.Concat(inc1, inc2)
	saved, err := a.Save()
	must(t, err)

	flip := func(b []byte, i int) []byte {
		b = slices.Clone(b)
		if i < 0 {
			i += len(b)
		}
		b[i] ^= 0x5a
		return b
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"damaged magic", flip(inc1, 1)},
		{"damaged checksum", flip(inc1, 5)},
		{"damaged type", flip(inc1, 8)},
		{"damaged length", flip(inc1, 9)},
		{"damaged body start", flip(inc1, 12)},
		{"damaged body middle", flip(inc1, len(inc1)/2)},
		{"damaged body end", flip(inc1, -1)},
		{"damaged second chunk", flip(both, len(inc1)+len(inc2)/2)},
		{"damaged document", flip(saved, len(saved)/2)},
		{"cut after 3 bytes", inc1[:3]},
		{"cut after the magic", inc1[:4]},
		{"cut in the header", inc1[:9]},
		{"cut in half", inc1[:len(inc1)/2]},
		{"cut one byte short", inc1[:len(inc1)-1]},
		{"second chunk cut short", both[:len(both)-1]},
		{"second chunk cut in its header", both[:len(inc1)+6]},
		{"document cut short", saved[:len(saved)-1]},
		{"garbage after a valid chunk", slices.Concat(inc1, []byte("garbage"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := blocks.Load(a.Info(), full, nil)
			must(t, err)
			before := b.Heads()
			err = b.LoadIncremental(tc.data)
			if !errors.Is(err, blocks.ErrCorrupt) {
				t.Fatalf("LoadIncremental = %v, want ErrCorrupt", err)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(a.Label())) {
				t.Errorf("error %q does not name the block", err)
			}
			if !slices.Equal(b.Heads(), before) || b.Render() != "hello" {
				t.Errorf("damaged input changed the document: %q", b.Render())
			}
		})
	}

	valid := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "hello"},
		{"one chunk", inc1, "hello world"},
		{"two chunks", both, "hello world and more"},
		{"a saved document", saved, "hello world and more"},
	}
	for _, tc := range valid {
		t.Run(tc.name, func(t *testing.T) {
			b, err := blocks.Load(a.Info(), full, nil)
			must(t, err)
			if err := b.LoadIncremental(tc.data); err != nil {
				t.Fatalf("LoadIncremental = %v", err)
			}
			if b.Render() != tc.want {
				t.Errorf("after loading: %q, want %q", b.Render(), tc.want)
			}
		})
	}
}

// LoadIncrementals loads a store's update rows in one pass: in order, a
// change before its dependency queues until the dependency arrives, and a
// chunk that is not automerge data fails the whole call with nothing kept.
func TestLoadIncrementals(t *testing.T) {
	src := newDoc(t, schema.Text{}, blocks.ReadWrite)
	_, heads, err := src.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(src, heads))
	var rows [][]byte
	for _, s := range []string{"one\n", "two\n", "three\n"} {
		must(t, src.AppendText(s, blocks.Agent))
		data, heads, err := src.PendingChanges()
		must(t, err)
		must(t, blockseam.MarkPersisted(src, heads))
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
			rep, err := blockseam.Manage(d, directWriter{})
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
