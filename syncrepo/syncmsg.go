package syncrepo

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/automerge/automerge-go"
)

// errSyncMessage is what withChanges returns for bytes that are not a v1
// sync message; push then sends automerge's message as it is.
var errSyncMessage = errors.New("not a v1 sync message")

// complete returns the bytes of m, a message d.ss made on doc, carrying
// also every change the peer lacks that neither m nor an earlier message
// carries.
//
// automerge leaves out of a message the changes that the peer's Bloom
// filter seems to hold, and a filter of n changes holds about 1% of the
// others too. A change left out that way is normally asked for again in
// the next round, but not when it builds on a change the peer sent and
// has not seen acknowledged: the peer (automerge-go's core, like the
// automerge releases of 2023) stays "in flight" until it knows every head
// the server names, so it sends nothing, and the server, answered by
// nothing, sends nothing either. A refused edit's counter-change is such
// a change (so is a store edit made on top of the peer's): the refused
// edit stayed on the peer. The peer's heads tell exactly what it lacks
// whenever the server knows them all; a message is completed from them.
// When the server does not know them (the peer's changes not yet
// received), the peer's next message brings them and is answered again.
func (d *docState) complete(doc *automerge.Doc, m *automerge.SyncMessage) ([]byte, error) {
	b := m.Bytes()
	if !d.heard {
		return b, nil
	}
	for _, h := range d.peerHeads {
		if _, err := doc.Change(h); err != nil {
			return b, nil
		}
	}
	lacking, err := doc.Changes(d.peerHeads...)
	if err != nil {
		return b, nil
	}
	lacks := make(map[automerge.ChangeHash]bool, len(lacking))
	for _, c := range lacking {
		lacks[c.Hash()] = true
	}
	// What the peer's heads now cover it has: sent no more.
	for h := range d.sent {
		if !lacks[h] {
			delete(d.sent, h)
		}
	}
	if d.sent == nil {
		d.sent = map[automerge.ChangeHash]bool{}
	}
	carried := m.Changes()
	for _, c := range carried {
		if lacks[c.Hash()] {
			d.sent[c.Hash()] = true
		}
	}
	var extra []*automerge.Change
	for _, c := range lacking {
		if !d.sent[c.Hash()] {
			extra = append(extra, c)
		}
	}
	if len(extra) == 0 {
		return b, nil
	}
	out, err := withChanges(b, append(carried, extra...))
	if err != nil {
		return b, nil
	}
	for _, c := range extra {
		d.sent[c.Hash()] = true
	}
	return out, nil
}

// syncMsg is a v1 sync message as scanSyncMessage reads it: the heads the
// sender names and the raw changes it carries, which nothing has decoded
// or applied, and where those changes sit in the message.
type syncMsg struct {
	heads                 []automerge.ChangeHash
	changes               [][]byte
	changesAt, changesEnd int // msg[changesAt:changesEnd] is the changes' count and changes
}

// scanSyncMessage reads msg, a v1 sync message (automerge's encoding:
// 0x42, heads, needs, haves, changes, each a LEB128 count of entries),
// without handing any of it to automerge: a peer's changes are measured
// before automerge applies them (automerge's own reading of a message
// applies its changes to a document). Its time is proportional to
// len(msg).
func scanSyncMessage(msg []byte) (syncMsg, error) {
	var m syncMsg
	if len(msg) == 0 || msg[0] != 0x42 {
		return m, errSyncMessage
	}
	i := 1
	next := func() (int, error) {
		v, n := binary.Uvarint(msg[i:])
		if n <= 0 || v > uint64(len(msg)) {
			return 0, fmt.Errorf("%w: bad length at byte %d", errSyncMessage, i)
		}
		i += n
		return int(v), nil
	}
	skip := func(n int) ([]byte, error) {
		if n > len(msg)-i {
			return nil, fmt.Errorf("%w: %d bytes past the end", errSyncMessage, n-(len(msg)-i))
		}
		i += n
		return msg[i-n : i], nil
	}
	hashes := func(keep *[]automerge.ChangeHash) error {
		n, err := next()
		if err != nil {
			return err
		}
		if n > len(msg)/32 {
			return fmt.Errorf("%w: %d hashes", errSyncMessage, n)
		}
		b, err := skip(32 * n)
		if err != nil || keep == nil {
			return err
		}
		for k := range n {
			*keep = append(*keep, automerge.ChangeHash(b[32*k:32*k+32]))
		}
		return nil
	}
	if err := hashes(&m.heads); err != nil {
		return m, err
	}
	if err := hashes(nil); err != nil { // needs
		return m, err
	}
	haves, err := next()
	if err != nil {
		return m, err
	}
	for range haves {
		if err := hashes(nil); err != nil { // last sync
			return m, err
		}
		n, err := next() // the Bloom filter
		if err != nil {
			return m, err
		}
		if _, err := skip(n); err != nil {
			return m, err
		}
	}
	m.changesAt = i
	n, err := next()
	if err != nil {
		return m, err
	}
	for range n {
		l, err := next()
		if err != nil {
			return m, err
		}
		c, err := skip(l)
		if err != nil {
			return m, err
		}
		m.changes = append(m.changes, c)
	}
	m.changesEnd = i
	return m, nil
}

// withChanges returns the v1 sync message msg with changes in place of its
// changes.
func withChanges(msg []byte, changes []*automerge.Change) ([]byte, error) {
	m, err := scanSyncMessage(msg)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), msg[:m.changesAt]...)
	out = binary.AppendUvarint(out, uint64(len(changes)))
	for _, c := range changes {
		raw := c.Save()
		out = binary.AppendUvarint(out, uint64(len(raw)))
		out = append(out, raw...)
	}
	return append(out, msg[m.changesEnd:]...), nil
}
