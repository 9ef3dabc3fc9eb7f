package blocks

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/automerge/automerge-go"
)

// History lists every change in the document in causal order (oldest
// first): who made it, which operation, when. Who made a change, and the
// operation, are what its commit message says (engram writes them there),
// except for the changes a store merged from elsewhere: for those, on a
// document a store manages (and its views and At views), the store names
// the agent it merged them as (see blockseam.Attributor). A store's history of them
// is read with the view's Context.
func (d *Document) History() ([]Change, error) {
	c := d.c
	c.mu.Lock()
	am, err := d.amFor()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	var chs []*automerge.Change
	err = guard(func() (err error) {
		chs, err = am.Changes()
		return err
	})
	attrib := c.attrib
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("block %q: history: %w", c.info.Label, err)
	}
	out := make([]Change, 0, len(chs))
	for _, ch := range chs {
		out = append(out, describe(ch))
	}
	if attrib != nil {
		// Outside the lock: the store reads its record.
		by, err := attrib.MergedBy(d.Context())
		if err != nil {
			return nil, fmt.Errorf("block %q: history: who merged its changes: %w", c.info.Label, err)
		}
		Attribute(out, by)
	}
	return out, nil
}

// maxPeerMessage bounds Change.PeerMessage (bytes): a peer's commit
// message is its own words, which a history shows, not stores.
const maxPeerMessage = 256

// Attribute marks the changes of hist that mergedBy names (change hash →
// agent, as a store's blockseam.Attributor returns) as merged by that agent: Actor is the
// agent, Op is OpMerge, Section and Field are cleared, and the change's
// own commit message (cut to 256 bytes, at a character boundary) is kept
// only as PeerMessage. A store uses it for histories it reads itself
// (archived epochs); Document.History does it for a managed document.
func Attribute(hist []Change, mergedBy map[string]string) {
	if len(mergedBy) == 0 {
		return
	}
	for i := range hist {
		agent, ok := mergedBy[hist[i].Hash]
		if !ok {
			continue
		}
		c := &hist[i]
		c.Actor, c.Op, c.Section, c.Field = agent, OpMerge, "", ""
		c.PeerMessage = c.message
		if len(c.PeerMessage) > maxPeerMessage {
			n := maxPeerMessage
			for n > 0 && !utf8.RuneStart(c.PeerMessage[n]) {
				n--
			}
			c.PeerMessage = c.PeerMessage[:n]
		}
	}
}

func describe(ch *automerge.Change) Change {
	var msg commitMessage
	actor := "unknown"
	raw := ch.Message()
	if err := json.Unmarshal([]byte(raw), &msg); err == nil && msg.Actor != "" {
		actor = msg.Actor
	}
	deps := make([]string, 0, len(ch.Dependencies()))
	for _, h := range ch.Dependencies() {
		deps = append(deps, h.String())
	}
	sort.Strings(deps)
	return Change{
		Hash: ch.Hash().String(), Actor: actor, Op: msg.Op, Section: msg.Section, Field: msg.Field,
		Time: changeTime(ch), Deps: deps, Replica: ch.ActorID(), message: raw,
	}
}

// At returns a read-only view of the document as of the given heads (from
// Heads or History). Writes to it fail with ErrHistorical.
func (d *Document) At(heads []string) (*Document, error) {
	hs, err := parseHeads(heads)
	if err != nil {
		return nil, err
	}
	c := d.c
	c.mu.Lock()
	info, attrib := c.info, c.attrib
	var fork *automerge.Doc
	err = guard(func() (err error) {
		fork, err = c.am.Fork(hs...)
		return err
	})
	c.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("block %q: view at %v: %w: %v", info.Label, heads, ErrOutOfRange, err)
	}
	nc := newCore(fork, info, nil)
	nc.historical = true
	nc.attrib = attrib
	if _, err := nc.value(); err != nil {
		return nil, err
	}
	return &Document{c: nc, accessor: d.accessor, perm: ReadOnly, ctx: d.ctx}, nil
}

// Restore makes the block's value what it was at heads, as a new change
// (history is never rewritten). Log blocks cannot be restored to an earlier
// state because they are append-only.
func (d *Document) Restore(heads []string, actor Actor) error {
	old, err := d.At(heads)
	if err != nil {
		return err
	}
	return d.RestoreFrom(old, actor)
}

// RestoreFrom makes the block's value old's (a view from At, or from a
// store's history of an earlier epoch), as a new change with op OpRestore.
func (d *Document) RestoreFrom(old *Document, actor Actor) error {
	v, err := old.Value()
	if err != nil {
		return err
	}
	return d.setValue(OpRestore, v, actor)
}

// changeTime reads a change's timestamp. Automerge's convention (automerge
// JS) is whole seconds since the epoch, which engram writes too (see
// core.commit); automerge-go's own Commit writes milliseconds, as engram
// did before. A value below 1e11 is taken as seconds (1e11 seconds is the
// year 5138; 1e11 milliseconds is 1973), so both read right.
func changeTime(ch *automerge.Change) time.Time {
	raw := ch.Timestamp().UnixMilli()
	switch {
	case raw == 0:
		return time.Time{}
	case raw < 1e11:
		return time.Unix(raw, 0).UTC()
	}
	return time.UnixMilli(raw).UTC()
}
