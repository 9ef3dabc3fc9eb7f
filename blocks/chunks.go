package blocks

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/automerge/automerge-go"
)

// Automerge's binary chunks: magic (4 bytes), checksum (4), type (1),
// body length (unsigned LEB128), body. A change's hash is the SHA-256 of
// its uncompressed chunk's type, length and body, so an uncompressed
// change chunk's checksum is the first 4 bytes of its hash.
const (
	chunkDocument         = 0
	chunkChange           = 1
	chunkCompressedChange = 2
)

// changeChunkSums returns the hash prefix (the first 4 bytes of the
// change hash) of every change chunk in data, which must hold change
// chunks only. A compressed chunk is inflated to compute it.
func changeChunkSums(data []byte) ([][4]byte, error) {
	var sums [][4]byte
	for len(data) > 0 {
		if len(data) < 9 || !bytes.HasPrefix(data, automergeMagic) {
			return nil, errors.New("not a sequence of automerge chunks")
		}
		typ := data[8]
		n, k := binary.Uvarint(data[9:])
		if k <= 0 || n > uint64(len(data)-9-k) {
			return nil, errors.New("automerge chunk with a bad length")
		}
		body := data[9+k : 9+k+int(n)]
		var sum [4]byte
		switch typ {
		case chunkChange:
			copy(sum[:], data[4:8])
		case chunkCompressedChange:
			raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(body)), maxInflated))
			if err != nil {
				return nil, fmt.Errorf("compressed automerge change: %w", err)
			}
			h := sha256.New()
			h.Write([]byte{chunkChange})
			h.Write(binary.AppendUvarint(nil, uint64(len(raw))))
			h.Write(raw)
			copy(sum[:], h.Sum(nil))
		default:
			return nil, fmt.Errorf("automerge chunk of type %d among changes", typ)
		}
		sums = append(sums, sum)
		data = data[9+k+int(n):]
	}
	return sums, nil
}

// maxInflated bounds what one compressed change may inflate to.
const maxInflated = 64 << 20

// changesOnTop reads data, change chunks that build on changes this
// document holds but data does not (an automerge peer's second and later
// incremental saves), which automerge.LoadChanges cannot read on their
// own: it applies them to a fork of the document and returns the changes
// that were new. Every chunk must be among them or already in the
// document; one that is neither depends on changes the document lacks
// (another document, or an epoch before a rebase) and is refused.
// Caller holds mu.
func (c *core) changesOnTop(data []byte) ([]*automerge.Change, error) {
	sums, err := changeChunkSums(data)
	if err != nil {
		return nil, err
	}
	fork, err := c.am.Fork()
	if err != nil {
		return nil, err
	}
	if err := fork.LoadIncremental(data); err != nil {
		return nil, err
	}
	news, err := fork.Changes(c.am.Heads()...)
	if err != nil {
		return nil, err
	}
	seen := make(map[[4]byte]bool, len(news))
	for _, ch := range news {
		h := ch.Hash()
		seen[[4]byte(h[:4])] = true
	}
	var old map[[4]byte]bool // the document's own changes, read only if needed
	for _, s := range sums {
		if seen[s] {
			continue
		}
		if old == nil {
			all, err := c.am.Changes()
			if err != nil {
				return nil, err
			}
			old = make(map[[4]byte]bool, len(all))
			for _, ch := range all {
				h := ch.Hash()
				old[[4]byte(h[:4])] = true
			}
		}
		if !old[s] {
			return nil, fmt.Errorf("%w: a change (hash %x…) depends on changes this document does not have (another document, or the block before it was rebased onto a new epoch); load the block's current document and make the edits again",
				ErrUnrelated, s)
		}
	}
	return news, nil
}
