package blocks

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
)

// Automerge's binary chunks: magic (4 bytes), checksum (4), type (1),
// body length (unsigned LEB128), body. A chunk's checksum is the first 4
// bytes of the SHA-256 of its uncompressed type, length and body (a
// compressed change carries its uncompressed form's), and a change's hash
// is that whole SHA-256.
const (
	chunkDocument         = 0
	chunkChange           = 1
	chunkCompressedChange = 2
)

// walkChunks checks that data is a sequence of whole automerge chunks, each
// of a known type and with a checksum that matches it, and calls f with
// each chunk's type and SHA-256 (over its uncompressed form). automerge
// itself skips input it cannot parse without an error, so a damaged chunk
// (or a valid one cut short) would load as nothing: this is how damage is
// told from an empty save. Empty data is no chunks.
func walkChunks(data []byte, f func(typ byte, hash automerge.ChangeHash) error) error {
	for len(data) > 0 {
		if len(data) < 9 || !bytes.HasPrefix(data, automergeMagic) {
			return errors.New("not a sequence of automerge chunks")
		}
		typ := data[8]
		n, k := binary.Uvarint(data[9:])
		if k <= 0 || n > uint64(len(data)-9-k) {
			return errors.New("automerge chunk with a bad length (cut short?)")
		}
		body := data[9+k : 9+k+int(n)]
		switch typ {
		case chunkDocument, chunkChange:
		case chunkCompressedChange:
			raw, err := amchunk.Inflate(body, maxInflated)
			if err != nil {
				return fmt.Errorf("compressed automerge change: %w", err)
			}
			body = raw
		default:
			return fmt.Errorf("automerge chunk of unknown type %d", typ)
		}
		h := sha256.New()
		if typ == chunkCompressedChange {
			h.Write([]byte{chunkChange})
		} else {
			h.Write([]byte{typ})
		}
		h.Write(binary.AppendUvarint(nil, uint64(len(body))))
		h.Write(body)
		var hash automerge.ChangeHash
		copy(hash[:], h.Sum(nil))
		if !bytes.Equal(hash[:4], data[4:8]) {
			return fmt.Errorf("automerge chunk with a bad checksum (%x, its content hashes to %x…)", data[4:8], hash[:4])
		}
		if err := f(typ, hash); err != nil {
			return err
		}
		data = data[9+k+int(n):]
	}
	return nil
}

// changeChunkHashes returns the change hash of every change chunk in data,
// which must hold change chunks only, each with a checksum that matches
// it (a compressed chunk is inflated to compute it).
func changeChunkHashes(data []byte) ([]automerge.ChangeHash, error) {
	var hashes []automerge.ChangeHash
	err := walkChunks(data, func(typ byte, hash automerge.ChangeHash) error {
		if typ == chunkDocument {
			return fmt.Errorf("automerge chunk of type %d among changes", typ)
		}
		hashes = append(hashes, hash)
		return nil
	})
	return hashes, err
}

// maxInflated bounds what one compressed change may inflate to.
const maxInflated = 64 << 20

// changesOnTop reads data, change chunks that build on changes this
// document holds but data does not (an automerge peer's second and later
// incremental saves, a sync peer's changes), which automerge.LoadChanges
// cannot read on their own, and returns those the document lacks. Every
// chunk's dependencies must be in data or in the document; one whose are
// not depends on changes the document lacks (another document, or an
// epoch before a rebase) and is refused. The chunks are decoded as a sync
// message's changes on an empty document, which queues those whose
// dependencies it lacks instead of applying them: the cost is the
// changes', not the document's (a fork of the document would cost its
// whole history on every merge). Caller holds mu.
func (c *core) changesOnTop(data []byte) ([]*automerge.Change, error) {
	want, err := changeChunkHashes(data)
	if err != nil {
		return nil, err
	}
	msg := []byte{0x42, 0, 0, 0} // v1 sync message: no heads, needs or haves
	msg = binary.AppendUvarint(msg, uint64(len(want)))
	for rest := data; len(rest) > 0; {
		n, k := binary.Uvarint(rest[9:])
		l := 9 + k + int(n)
		chunk := rest[:l]
		if rest[8] == chunkCompressedChange {
			// Sync messages carry changes uncompressed: the same chunk
			// inflated (its checksum is its uncompressed form's).
			raw, err := amchunk.Inflate(rest[9+k:l], maxInflated)
			if err != nil {
				return nil, fmt.Errorf("compressed automerge change: %w", err)
			}
			chunk = append(append(append([]byte(nil), rest[:8]...), chunkChange), binary.AppendUvarint(nil, uint64(len(raw)))...)
			chunk = append(chunk, raw...)
		}
		msg = binary.AppendUvarint(msg, uint64(len(chunk)))
		msg = append(msg, chunk...)
		rest = rest[l:]
	}
	sm, err := automerge.NewSyncState(automerge.New()).ReceiveMessage(msg)
	if err != nil {
		return nil, err
	}
	chs := sm.Changes()
	if len(chs) != len(want) {
		return nil, fmt.Errorf("%d automerge chunks decoded as %d changes", len(want), len(chs))
	}
	in := make(map[automerge.ChangeHash]bool, len(chs))
	for _, ch := range chs {
		in[ch.Hash()] = true
	}
	var news []*automerge.Change
	for _, ch := range chs {
		if _, err := c.am.Change(ch.Hash()); err == nil {
			continue // the document has it already
		}
		for _, d := range ch.Dependencies() {
			if in[d] {
				continue
			}
			if _, err := c.am.Change(d); err != nil {
				return nil, fmt.Errorf("%w: change %s depends on changes this document does not have (another document, or the block before it was rebased onto a new epoch); load the block's current document and make the edits again",
					ErrUnrelated, ch.Hash())
			}
		}
		news = append(news, ch)
	}
	return news, nil
}
