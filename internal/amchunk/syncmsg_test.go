package amchunk_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
)

// syncMsg builds a v1 sync message from heads, haves (each a Bloom
// filter's bytes, with no last-sync hashes) and changes.
func syncMsg(heads [][32]byte, filters [][]byte, changes ...[]byte) []byte {
	b := []byte{0x42}
	b = binary.AppendUvarint(b, uint64(len(heads)))
	for _, h := range heads {
		b = append(b, h[:]...)
	}
	b = append(b, 0) // needs
	b = binary.AppendUvarint(b, uint64(len(filters)))
	for _, f := range filters {
		b = append(b, 0) // last sync
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	b = binary.AppendUvarint(b, uint64(len(changes)))
	for _, c := range changes {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	return b
}

func bloom(entries, bits, probes uint64, n int) []byte {
	b := binary.AppendUvarint(nil, entries)
	b = binary.AppendUvarint(b, bits)
	b = binary.AppendUvarint(b, probes)
	return append(b, make([]byte, n)...)
}

// What automerge would trust and must not (a Bloom filter of no bits
// divides by zero and aborts the process; probes, filters and repeated
// heads cost work in their product with the document's changes) is
// refused; what automerge itself sends passes.
func TestScanSyncMessage(t *testing.T) {
	doc := automerge.New()
	doc.RootMap().Set("k", "v")
	doc.Commit("x")
	ss := automerge.NewSyncState(doc)
	peer := automerge.NewSyncState(automerge.New())
	req, _ := peer.GenerateMessage()
	ss.ReceiveMessage(req.Bytes())
	m, _ := ss.GenerateMessage()
	for _, msg := range [][]byte{req.Bytes(), m.Bytes(), syncMsg(nil, [][]byte{bloom(1, 10, 7, 2)}), syncMsg(nil, [][]byte{nil})} {
		if _, err := amchunk.ScanSyncMessage(msg); err != nil {
			t.Errorf("%x: %v", msg, err)
		}
	}
	h := [32]byte{1}
	many := make([][32]byte, amchunk.MaxSyncHeads+1)
	for i := range many {
		many[i][0], many[i][1] = byte(i), byte(i>>8)
	}
	for name, msg := range map[string][]byte{
		"a filter of no bits":        syncMsg(nil, [][]byte{bloom(1, 0, 7, 0)}),
		"a filter of no probes":      syncMsg(nil, [][]byte{bloom(1, 10, 0, 2)}),
		"a hundred million probes":   syncMsg(nil, [][]byte{bloom(1, 10, 1e8, 2)}),
		"a filter short of its bits": syncMsg(nil, [][]byte{bloom(100, 10, 7, 2)}),
		"nine haves":                 syncMsg(nil, bytes.Split(bytes.Repeat([]byte{'x'}, 8), []byte("x"))),
		"a head named twice":         syncMsg([][32]byte{h, h}, nil),
		"too many heads":             syncMsg(many, nil),
		"cut short":                  syncMsg([][32]byte{h}, nil)[:10],
		"not a sync message":         []byte("hello"),
	} {
		if _, err := amchunk.ScanSyncMessage(msg); !errors.Is(err, amchunk.ErrSyncMessage) {
			t.Errorf("%s: err %v, want ErrSyncMessage", name, err)
		}
	}
	// A saved document in a change's place (its compressed columns would
	// be measured for nothing: automerge refuses it) is refused; the
	// change messages above hold changes only.
	withDoc := slices.Clone(m.Bytes())
	sm, err := amchunk.ScanSyncMessage(withDoc)
	if err != nil || len(sm.Changes) == 0 {
		t.Fatalf("the change message: %d changes, %v", len(sm.Changes), err)
	}
	saved := doc.Save()
	msg := append(slices.Clone(withDoc[:sm.ChangesAt]), 1)
	msg = binary.AppendUvarint(msg, uint64(len(saved)))
	msg = append(msg, saved...)
	if _, err := amchunk.ScanSyncMessage(msg); !errors.Is(err, amchunk.ErrSyncMessage) {
		t.Errorf("a saved document among the changes: err %v, want ErrSyncMessage", err)
	}
}
