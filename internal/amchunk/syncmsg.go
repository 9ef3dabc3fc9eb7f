package amchunk

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrSyncMessage is wrapped by ScanSyncMessage's error for bytes that are
// not a v1 sync message automerge may be given.
var ErrSyncMessage = errors.New("amchunk: not a valid sync message")

// Bounds on what a sync message may ask automerge to do. automerge makes
// one message with at most one "have" (a Bloom filter of 10 bits per
// entry and 7 probes) and names each head once; its own reading of a
// message trusts every count in it: a Bloom filter of no bits divides by
// zero (a panic that aborts the process), and probes, filters and
// repeated heads cost work in their product with the document's changes.
const (
	MaxSyncHeads     = 256 // distinct heads (and needs are not bounded: they cost a lookup each)
	MaxSyncHaves     = 8
	MaxBloomBits     = 32 // bits per entry
	MaxBloomProbes   = 32
	maxHashesPerList = 1 << 20
)

// SyncMessage is a v1 sync message as ScanSyncMessage reads it: the heads
// the sender names and the raw changes it carries, which nothing has
// decoded or applied, and where those changes sit in the message.
type SyncMessage struct {
	Heads                 [][32]byte
	Changes               [][]byte
	ChangesAt, ChangesEnd int // msg[ChangesAt:ChangesEnd] is the changes' count and changes
}

// ScanSyncMessage reads msg, a v1 sync message (automerge's encoding:
// 0x42, heads, needs, haves, changes, each a LEB128 count of entries),
// without handing any of it to automerge, and checks what automerge would
// trust: at most MaxSyncHeads heads, none repeated; at most MaxSyncHaves
// haves, each Bloom filter empty or of 1–MaxBloomBits bits per entry and
// 1–MaxBloomProbes probes with as many bytes as its entries need; no
// saved document among the changes. Its time
// is proportional to len(msg). The changes are not measured: see Measure.
func ScanSyncMessage(msg []byte) (SyncMessage, error) {
	var m SyncMessage
	if len(msg) == 0 || msg[0] != 0x42 {
		return m, fmt.Errorf("%w: not a v1 sync message", ErrSyncMessage)
	}
	r := reader{b: msg, i: 1}
	count := func(what string, max uint64) (int, error) {
		n, err := r.uleb()
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", ErrSyncMessage, what, err)
		}
		if n > max || n > uint64(r.left()) {
			return 0, fmt.Errorf("%w: %d %s", ErrSyncMessage, n, what)
		}
		return int(n), nil
	}
	hashes := func(what string, max uint64) ([][32]byte, error) {
		n, err := count(what, max)
		if err != nil {
			return nil, err
		}
		b, err := r.take(32 * n)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrSyncMessage, what, err)
		}
		hs := make([][32]byte, n)
		for k := range n {
			hs[k] = [32]byte(b[32*k : 32*k+32])
		}
		return hs, nil
	}
	var err error
	if m.Heads, err = hashes("heads", MaxSyncHeads); err != nil {
		return m, err
	}
	sorted := slices.Clone(m.Heads)
	slices.SortFunc(sorted, func(a, b [32]byte) int { return slices.Compare(a[:], b[:]) })
	if len(slices.Compact(sorted)) != len(m.Heads) {
		return m, fmt.Errorf("%w: a head named twice", ErrSyncMessage)
	}
	if _, err := hashes("needs", maxHashesPerList); err != nil {
		return m, err
	}
	haves, err := count("haves", MaxSyncHaves)
	if err != nil {
		return m, err
	}
	for range haves {
		if _, err := hashes("last-sync hashes", MaxSyncHeads); err != nil {
			return m, err
		}
		n, err := count("bytes of a Bloom filter", uint64(len(msg)))
		if err != nil {
			return m, err
		}
		filter, err := r.take(n)
		if err != nil {
			return m, fmt.Errorf("%w: Bloom filter: %v", ErrSyncMessage, err)
		}
		if err := checkBloom(filter); err != nil {
			return m, err
		}
	}
	m.ChangesAt = r.i
	n, err := count("changes", uint64(len(msg)))
	if err != nil {
		return m, err
	}
	for range n {
		c, err := r.prefixed()
		if err != nil {
			return m, fmt.Errorf("%w: change: %v", ErrSyncMessage, err)
		}
		if len(c) > 8 && c[8] == chunkDocument {
			// A message carries changes: automerge refuses a document in
			// their place, and measuring one first would cost its
			// compressed columns for nothing.
			return m, fmt.Errorf("%w: a saved document among the changes", ErrSyncMessage)
		}
		m.Changes = append(m.Changes, c)
	}
	m.ChangesEnd = r.i
	return m, nil
}

// checkBloom checks an encoded Bloom filter: empty, or entries, bits per
// entry and probes (LEB128) then the bits.
func checkBloom(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	r := reader{b: b}
	var v [3]uint64
	for k := range v {
		var err error
		if v[k], err = r.uleb(); err != nil {
			return fmt.Errorf("%w: Bloom filter: %v", ErrSyncMessage, err)
		}
	}
	entries, bits, probes := v[0], v[1], v[2]
	switch {
	case entries == 0 && bits == 0 && probes == 0 && r.done():
		return nil
	case entries == 0 || bits < 1 || bits > MaxBloomBits || probes < 1 || probes > MaxBloomProbes:
		return fmt.Errorf("%w: a Bloom filter of %d entries, %d bits per entry, %d probes", ErrSyncMessage, entries, bits, probes)
	case entries > uint64(len(b))*8 || (entries*bits+7)/8 != uint64(r.left()):
		return fmt.Errorf("%w: a Bloom filter of %d entries × %d bits in %d bytes", ErrSyncMessage, entries, bits, r.left())
	}
	return nil
}

// AppendSyncChanges returns msg, a v1 sync message scanned as m, with
// changes (raw chunks) in place of its changes.
func AppendSyncChanges(msg []byte, m SyncMessage, changes [][]byte) []byte {
	out := append([]byte(nil), msg[:m.ChangesAt]...)
	out = binary.AppendUvarint(out, uint64(len(changes)))
	for _, c := range changes {
		out = binary.AppendUvarint(out, uint64(len(c)))
		out = append(out, c...)
	}
	return append(out, msg[m.ChangesEnd:]...)
}
