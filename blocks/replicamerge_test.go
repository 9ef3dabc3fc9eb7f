package blocks_test

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

// peerText appends s to the text at "content" of an external automerge
// peer and commits.
func peerText(t *testing.T, p *automerge.Doc, s string) {
	t.Helper()
	v, err := p.RootMap().Get("content")
	must(t, err)
	must(t, v.Text().Append(s))
	_, err = p.Commit("peer")
	must(t, err)
}

// TestReplicaMergesIncrementalSaves: a peer that keeps a block's document
// and saves incrementally sends, from its second save on, changes whose
// dependencies are not in what it sends. Merge takes them (it read only
// self-contained data before); data that repeats changes the block has
// is no error; a change whose dependencies the block lacks is refused as
// unrelated and changes nothing.
func TestReplicaMergesIncrementalSaves(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, d.SetText("base\n", blocks.Agent))
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	saved, err := d.Save()
	must(t, err)
	rep, err := blockseam.Manage(d, directWriter{})
	must(t, err)

	peer, err := automerge.Load(saved)
	must(t, err)
	peerText(t, peer, "one\n")
	first := peer.SaveIncremental()
	peerText(t, peer, "two\n")
	peerText(t, peer, "three\n")
	second := peer.SaveIncremental()
	peerText(t, peer, "four\n")
	third := peer.SaveIncremental()

	// Out of order: the third save builds on the second, not yet merged.
	_, _, err = rep.Merge(third, blocks.Origin{System: true})
	if !errors.Is(err, blocks.ErrUnrelated) {
		t.Fatalf("a change whose dependencies the block lacks: %v, want ErrUnrelated", err)
	}
	if got, _ := d.Text(); got != "base\n" {
		t.Fatalf("a refused merge changed the text: %q", got)
	}
	for i, data := range [][]byte{first, second, second, third} {
		if _, _, err := rep.Merge(data, blocks.Origin{System: true}); err != nil {
			t.Fatalf("merge %d: %v", i, err)
		}
	}
	if got, _ := d.Text(); got != "base\none\ntwo\nthree\nfour\n" {
		t.Fatalf("after the peer's saves: %q", got)
	}

	// A Go replica's own pending changes (several, building on what the
	// block has) merge the same way.
	fork, err := d.Fork()
	must(t, err)
	must(t, fork.AppendText("five\n", blocks.Agent))
	must(t, fork.AppendText("six\n", blocks.Agent))
	inc, _, err := fork.PendingChanges()
	must(t, err)
	if _, _, err := rep.Merge(inc, blocks.Origin{System: true}); err != nil {
		t.Fatalf("a fork's pending changes: %v", err)
	}
	if got, _ := d.Text(); got != "base\none\ntwo\nthree\nfour\nfive\nsix\n" {
		t.Fatalf("after the fork's changes: %q", got)
	}

	// The same change compressed, as automerge writes large changes (the
	// peer caught up first, so the text's order is decided; what it sends
	// repeats the changes it caught up with).
	now, err := d.Save()
	must(t, err)
	must(t, peer.LoadIncremental(now))
	peerText(t, peer, "seven\n")
	plain := peer.SaveIncremental()
	if _, _, err := rep.Merge(compressChunks(t, plain), blocks.Origin{System: true}); err != nil {
		t.Fatalf("a compressed change: %v", err)
	}
	if got, _ := d.Text(); got != "base\none\ntwo\nthree\nfour\nfive\nsix\nseven\n" {
		t.Fatalf("after the compressed change: %q", got)
	}

	// Damaged data is corrupt, not unrelated, and nothing of it is kept:
	// a truncated chunk; a byte flipped in a change the block has; valid
	// new changes followed by a damaged one (automerge's incremental load
	// would keep the first and drop the rest without a word).
	before, _ := d.Text()
	peerText(t, peer, "eight\n")
	peerText(t, peer, "nine\n")
	two := peer.SaveIncremental()
	flip := func(data []byte, at int) []byte {
		out := bytes.Clone(data)
		out[at] ^= 0x20
		return out
	}
	for name, data := range map[string][]byte{
		"truncated":              append(bytes.Clone(plain[:12]), 0xff, 0xff, 0xff),
		"a known change damaged": flip(plain, len(plain)-3),
		"the second of two":      flip(two, len(two)-3),
		"compressed, damaged":    flip(compressChunks(t, two), len(compressChunks(t, two))-2),
	} {
		if _, _, err := rep.Merge(data, blocks.Origin{System: true}); !errors.Is(err, blocks.ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrCorrupt", name, err)
		}
		if got, _ := d.Text(); got != before {
			t.Fatalf("%s: a refused merge changed the text to %q", name, got)
		}
	}
}

// compressChunks rewrites each uncompressed change chunk in data as a
// compressed one (type 2, raw DEFLATE body; the checksum stays the
// uncompressed chunk's, the change hash's first bytes, as automerge
// writes it).
func compressChunks(t *testing.T, data []byte) []byte {
	t.Helper()
	var out []byte
	for len(data) > 0 {
		if data[8] != 1 {
			t.Fatalf("chunk type %d, want a change", data[8])
		}
		n, k := binary.Uvarint(data[9:])
		body := data[9+k : 9+k+int(n)]
		var z bytes.Buffer
		w, err := flate.NewWriter(&z, flate.BestCompression)
		must(t, err)
		w.Write(body)
		must(t, w.Close())
		out = append(out, data[:8]...)
		out = append(out, 2)
		out = binary.AppendUvarint(out, uint64(z.Len()))
		out = append(out, z.Bytes()...)
		data = data[9+k+int(n):]
	}
	return out
}

// FuzzReplicaMerge: any bytes given to Merge either merge or are refused
// with nothing changed, and never panic.
func FuzzReplicaMerge(f *testing.F) {
	d := newDoc(f, schema.Text{}, blocks.ReadWrite)
	must(f, d.SetText("base\n", blocks.Agent))
	saved, err := d.Save()
	must(f, err)
	peer, err := automerge.Load(saved)
	must(f, err)
	v, err := peer.RootMap().Get("content")
	must(f, err)
	must(f, v.Text().Append("one\n"))
	_, err = peer.Commit("peer")
	must(f, err)
	first := peer.SaveIncremental()
	must(f, v.Text().Append("two\n"))
	_, err = peer.Commit("peer")
	must(f, err)
	f.Add(first)
	f.Add(peer.SaveIncremental())
	f.Add(saved)
	f.Add([]byte{0x85, 0x6f, 0x4a, 0x83, 0, 0, 0, 0, 2, 3, 1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := blocks.Load(blocks.Info{Label: "b", Type: blocks.Working, Schema: schema.Text{}, Permission: blocks.ReadWrite, Owner: "agent-1"}, saved, nil)
		must(t, err)
		rep, err := blockseam.Manage(d, directWriter{})
		must(t, err)
		before, _ := d.Text()
		if _, _, err := rep.Merge(data, blocks.Origin{System: true}); err != nil {
			if got, _ := d.Text(); got != before {
				t.Fatalf("a refused merge changed the text to %q", got)
			}
			return
		}
		if _, err := d.Text(); err != nil {
			t.Fatalf("merged data left an unreadable block: %v", err)
		}
	})
}
