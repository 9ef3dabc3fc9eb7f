package syncrepo

import (
	"errors"
	"fmt"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
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

// scanSyncMessage reads msg with amchunk.ScanSyncMessage: the checks
// automerge needs made before it reads a peer's message, and the message's
// changes and heads without decoding them.
func scanSyncMessage(msg []byte) (amchunk.SyncMessage, error) {
	m, err := amchunk.ScanSyncMessage(msg)
	if err != nil {
		return m, fmt.Errorf("%w: %w", errSyncMessage, err)
	}
	return m, nil
}

// withChanges returns the v1 sync message msg with changes in place of its
// changes.
func withChanges(msg []byte, changes []*automerge.Change) ([]byte, error) {
	m, err := scanSyncMessage(msg)
	if err != nil {
		return nil, err
	}
	raw := make([][]byte, len(changes))
	for i, c := range changes {
		raw[i] = c.Save()
	}
	return amchunk.AppendSyncChanges(msg, m, raw), nil
}
