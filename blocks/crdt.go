package blocks

import (
	"fmt"
	"slices"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/internal/amchunk"
)

var automergeMagic = []byte{0x85, 0x6f, 0x4a, 0x83}

// Heads returns the document's current heads (sorted hex change hashes).
func (d *Document) Heads() []string {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if st := d.stableFor(); st != nil {
		return hexHeads(st.heads)
	}
	return hexHeads(d.c.am.Heads())
}

// Save returns the whole document in automerge's compact form.
func (d *Document) Save() ([]byte, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	am, err := d.amFor()
	if err != nil {
		return nil, err
	}
	var b []byte
	err = guard(func() error { b = am.Save(); return nil })
	return b, err
}

// ChangesSince returns the changes of the document a read sees that heads
// (hex change hashes the caller got earlier) do not cover, concatenated as
// SaveIncremental writes them, and the document's heads they lead to: what
// a peer at heads lacks, without saving the whole document. Heads the
// document does not have (another epoch's) give ErrUnrelated.
func (d *Document) ChangesSince(heads []string) (data []byte, now []string, err error) {
	hs := make([]automerge.ChangeHash, len(heads))
	for i, h := range heads {
		var err error
		if hs[i], err = automerge.NewChangeHash(h); err != nil {
			return nil, nil, fmt.Errorf("%w: head %q: %v", ErrUnrelated, h, err)
		}
	}
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	am, err := d.amFor()
	if err != nil {
		return nil, nil, err
	}
	err = guard(func() error {
		for _, h := range hs {
			if _, err := am.Change(h); err != nil {
				return fmt.Errorf("%w: the document has no change %s", ErrUnrelated, h)
			}
		}
		chs, err := am.Changes(hs...)
		if err != nil {
			return err
		}
		data, now = automerge.SaveChanges(chs), hexHeads(am.Heads())
		return nil
	})
	return data, now, err
}

// amFor returns the automerge document a read through d sees: the live
// one, or for a view while a store's write is in flight, a fork at the
// state before that write (see core.inflight). Caller holds d.c.mu.
func (d *Document) amFor() (*automerge.Doc, error) {
	st := d.stableFor()
	if st == nil {
		return d.c.am, nil
	}
	var am *automerge.Doc
	err := guard(func() (err error) { am, err = d.c.am.Fork(st.heads...); return err })
	if err != nil {
		return nil, fmt.Errorf("block %q: the state before a write in flight: %w", d.c.info.Label, err)
	}
	return am, nil
}

// automergeCopy returns an independent copy of the automerge document a
// read through d sees, with a new actor: automerge's fork of the live
// state, which copies the document in memory, or for a view while a
// store's write is in flight, its fork at the state before that write.
// Saving and loading the document instead costs about four times as much
// (loading rebuilds it operation by operation).
func (d *Document) automergeCopy() (*automerge.Doc, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	am, err := d.forkRead()
	if err != nil {
		return nil, fmt.Errorf("block %q: copy: %w", d.c.info.Label, err)
	}
	return am, nil
}

// forkRead forks the automerge document a read through d sees: the live
// state, or the state before a store's write in flight. Caller holds
// d.c.mu.
func (d *Document) forkRead() (*automerge.Doc, error) {
	var heads []automerge.ChangeHash // nil: the live state
	if st := d.stableFor(); st != nil {
		heads = st.heads
	}
	var am *automerge.Doc
	err := guard(func() (err error) { am, err = d.c.am.Fork(heads...); return err })
	return am, err
}

// SaveIncremental returns the changes since the last Save or
// SaveIncremental. Note that it also re-exports changes that arrived through
// LoadIncremental; a store persisting its own writes should use
// PendingChanges instead.
func (d *Document) SaveIncremental() ([]byte, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	var b []byte
	err := guard(func() error { b = d.c.am.SaveIncremental(); return nil })
	return b, err
}

// LoadIncremental applies changes produced elsewhere (SaveIncremental,
// PendingChanges or Save bytes, or several of them concatenated). Changes
// whose dependencies are missing are queued by automerge until they
// arrive. Subscribers get a Remote event when the heads move. Data that is
// not whole automerge chunks with matching checksums (damaged, or cut
// short) is refused with ErrCorrupt and nothing is loaded; empty data is
// nothing to load (an empty SaveIncremental) and returns nil. If the
// merged state breaks the block's schema or character limit, nothing is
// kept and the error says why. A document a store manages refuses with
// ErrManaged (see Managed).
func (d *Document) LoadIncremental(data []byte) error {
	// automerge skips what it cannot parse without an error: damage
	// would otherwise load as nothing and look like success.
	if err := walkChunks(data, func(byte, automerge.ChangeHash) error { return nil }); err != nil && !d.c.managed() {
		return fmt.Errorf("block %q: load changes: %w: %v", d.Label(), ErrCorrupt, err)
	}
	if d.c.managed() {
		return d.c.errManaged("LoadIncremental")
	}
	return d.c.loadIncremental(data, &Origin{System: true})
}

// afterRemote refreshes the cache after changes arrived from elsewhere and
// returns the event to fire, if the heads moved. Caller holds mu.
func (c *core) afterRemote(before []string) (Event, []func(Event)) {
	after := hexHeads(c.am.Heads())
	if equalStrings(before, after) {
		return Event{}, nil
	}
	// Changes from elsewhere are durable, and a store brings a document up
	// to date only with no edit of its own in flight (it takes one applied
	// ahead back first): views read the live state again, so what the
	// Remote event announces is there to read; an edit applied next holds
	// a new stable state.
	if c.mergeFlight == 0 {
		c.dropStable()
	}
	c.invalidate()
	return Event{Label: c.info.Label, Op: OpMerge, Heads: after, Remote: true}, c.subscribers()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Merge applies every change of other that this document lacks. The two
// documents must be replicas of one block (one was forked or loaded from
// the other). As with LoadIncremental, a merged state that breaks the
// schema or the character limit is not kept, and a managed document
// refuses with ErrManaged.
func (d *Document) Merge(other *Document) error {
	if d.c == other.c {
		return nil
	}
	if d.c.managed() {
		return d.c.errManaged("Merge")
	}
	// Snapshot the other side under its own lock, then merge under ours, so
	// two opposite merges cannot deadlock.
	oc := other.c
	oc.mu.Lock()
	var snap *automerge.Doc
	err := guard(func() (err error) { snap, err = oc.am.Fork(); return err })
	oc.mu.Unlock()
	if err != nil {
		return fmt.Errorf("block %q: merge: %w", d.Label(), err)
	}
	return d.c.merge("merge", &Origin{System: true}, func() error { _, err := d.c.am.Merge(snap); return err })
}

// Fork returns an independent replica of the document (same metadata, new
// automerge actor) that can be edited separately and merged back.
func (d *Document) Fork() (*Document, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	fork, err := d.forkRead()
	if err != nil {
		return nil, fmt.Errorf("block %q: fork: %w", c.info.Label, err)
	}
	nc := newCore(fork, c.info, &Options{Approver: c.approver, Now: c.now})
	nc.persisted = fork.Heads()
	return &Document{c: nc, accessor: d.accessor, perm: d.perm}, nil
}

// PendingChanges returns the changes this replica made that are not yet
// marked persisted (by the store that manages the document, once they are
// durable; on a standalone document: since it was made or loaded),
// encoded for LoadIncremental, and the heads they bring the document to. Changes merged in from other
// replicas are not included: whoever made them persists them. data is nil
// when there is nothing to persist.
func (d *Document) PendingChanges() (data []byte, heads []string, err error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	err = guard(func() error {
		var ok bool
		if data, heads, ok = c.pendingFast(); ok {
			return nil
		}
		data, heads, err = c.pendingScan()
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("block %q: pending changes: %w", c.info.Label, err)
	}
	return data, heads, nil
}

// pendingFast is PendingChanges for the usual cases, without a walk over
// the history (asking automerge for the changes since the persisted heads
// costs time in proportion to the whole history): nothing new, or one
// change of ours right on the persisted heads. ok is false otherwise.
// Caller holds mu.
func (c *core) pendingFast() (data []byte, heads []string, ok bool) {
	hs := c.am.Heads()
	if sameHashes(hs, c.persisted) {
		return nil, hexHeads(hs), true
	}
	if len(hs) != 1 {
		return nil, nil, false
	}
	ch, err := c.am.Change(hs[0])
	if err != nil || !c.own[ch.ActorID()] || !sameHashes(ch.Dependencies(), c.persisted) {
		return nil, nil, false
	}
	return ch.Save(), hexHeads(hs), true
}

// pendingScan is PendingChanges by asking automerge for every change
// past the persisted heads and keeping this replica's own. Caller holds
// mu.
func (c *core) pendingScan() (data []byte, heads []string, err error) {
	chs, err := c.am.Changes(c.persisted...)
	if err != nil {
		return nil, nil, err
	}
	var own []*automerge.Change
	for _, ch := range chs {
		if c.own[ch.ActorID()] {
			own = append(own, ch)
		}
	}
	if len(own) > 0 {
		data = automerge.SaveChanges(own)
	}
	return data, hexHeads(c.am.Heads()), nil
}

// sameHashes reports whether a and b hold the same change hashes, in any
// order.
func sameHashes(a, b []automerge.ChangeHash) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// markPersisted records that everything up to heads is durable
// (blockseam.MarkPersisted).
func (d *Document) markPersisted(heads []string) error {
	hs, err := parseHeads(heads)
	if err != nil {
		return err
	}
	d.c.mu.Lock()
	d.c.persisted = hs
	d.c.mu.Unlock()
	return nil
}

// Dirty reports whether this replica has changes not marked persisted.
func (d *Document) Dirty() bool {
	data, _, err := d.PendingChanges()
	return err != nil || len(data) > 0
}

// SetInfo replaces the block's metadata (the store uses it for
// reconfiguration it has authorized and persisted). The schema may only
// change within its kind, and the current value must still be valid.
func (d *Document) SetInfo(info Info) error {
	if err := info.Check(); err != nil {
		return err
	}
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if info.Schema.Kind() != c.info.Schema.Kind() {
		return fmt.Errorf("%w: block %q: cannot change schema kind from %s to %s", ErrWrongSchema, c.info.Label, c.info.Schema.Kind(), info.Schema.Kind())
	}
	old := c.info
	c.info = info
	c.infoVer++
	c.invalidate()
	// New fields need their containers; reading validates the rest.
	var wrote bool
	if err := guard(func() (err error) { wrote, err = ensureContainers(c.am.RootMap(), info.Schema); return err }); err != nil {
		c.info = old
		return fmt.Errorf("block %q: reconfigure: %w", info.Label, err)
	}
	if wrote {
		if _, err := c.commit(commitMessage{Actor: "system", Op: OpReconfigure}); err != nil {
			c.info = old
			return fmt.Errorf("block %q: reconfigure: %w", info.Label, err)
		}
	}
	if _, err := c.value(); err != nil {
		c.info = old
		c.invalidate()
		return err
	}
	return nil
}

// SyncState tracks one peer for the automerge sync protocol.
type SyncState struct {
	d *Document
	// am is the automerge document ss was made for. A refused change is
	// rolled back by replacing the document with a fork (core.rollback),
	// so a session made for the old one would go on with it: apply the
	// peer's later changes where the block never sees them, and hand the
	// refused change on to the peer. The session then starts anew on the
	// current document (see current); the protocol recovers from a reset
	// state as from a reconnect.
	am *automerge.Doc
	ss *automerge.SyncState
}

// NewSyncState starts a sync session with one peer.
func (d *Document) NewSyncState() *SyncState {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return &SyncState{d: d, am: d.c.am, ss: automerge.NewSyncState(d.c.am)}
}

// current returns the session's automerge state for the block's current
// document, starting it anew if the document was replaced. Caller holds
// mu.
func (s *SyncState) current() *automerge.SyncState {
	if c := s.d.c; s.am != c.am {
		s.am, s.ss = c.am, automerge.NewSyncState(c.am)
	}
	return s.ss
}

// GenerateMessage returns the next message to send to the peer, or false
// when the peer is up to date.
func (s *SyncState) GenerateMessage() ([]byte, bool) {
	s.d.c.mu.Lock()
	defer s.d.c.mu.Unlock()
	m, ok := s.current().GenerateMessage()
	if !ok {
		return nil, false
	}
	return m.Bytes(), true
}

// ReceiveMessage applies a message from the peer.
func (s *SyncState) ReceiveMessage(msg []byte) error {
	c := s.d.c
	if c.managed() {
		return c.errManaged("a sync message")
	}
	// automerge trusts a message's counts (a Bloom filter of no bits
	// aborts the process): checked first, and its changes measured as a
	// merge's are.
	m, err := amchunk.ScanSyncMessage(msg)
	if err != nil {
		return fmt.Errorf("block %q: sync message: %w: %v", c.info.Label, ErrCorrupt, err)
	}
	if len(m.Changes) > 0 {
		if _, err := amchunk.MeasureAll(m.Changes, MergeLimits(c.info.limit())); err != nil {
			return fmt.Errorf("block %q: sync message: %w: %v", c.info.Label, ErrLimit, err)
		}
	}
	return c.merge("sync", &Origin{System: true}, func() error { _, err := s.current().ReceiveMessage(msg); return err })
}
