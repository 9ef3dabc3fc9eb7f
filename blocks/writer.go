package blocks

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/internal/blockhook"
)

// The seam a store manages a document through (internal/blockseam gives
// the store these types and calls manage and markPersisted).
type (
	writer       = blockhook.Writer[Op, Permission]
	writeRequest = blockhook.WriteRequest[Op, Permission]
	attributor   = blockhook.Attributor
	proposer     = blockhook.Proposer[ApprovalRequest]
	merged       = blockhook.Merged
)

func init() {
	blockhook.Manage = func(doc, w any) (any, error) { return doc.(*Document).manage(w.(writer)) }
	blockhook.MarkPersisted = func(doc any, heads []string) error { return doc.(*Document).markPersisted(heads) }
	blockhook.Automerge = func(doc any) (any, error) { return doc.(*Document).automergeCopy() }
	blockhook.KnownSize = func(doc any) int { return doc.(*Document).knownSize() }
}

// The replica satisfies the store's interface to it.
var _ blockhook.Replica[Origin, *Document] = (*replica)(nil)

// Managed reports whether a store manages the document: then every
// mutation through any of its views runs inside the store's write and is
// durable when the method returns, and LoadIncremental, Merge and sync
// messages on its views fail with ErrManaged (a store merges external
// changes with its own MergeChanges).
func (d *Document) Managed() bool {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.c.writer != nil
}

// manage hands the document to a store (blockseam.Manage). From then on
// every mutation made through any of its views runs inside w.Write, so it is validated against
// the durable state and is durable when the method returns (or rolled back
// with the error). Changes made elsewhere can then only arrive through the
// returned replica, which the store keeps: LoadIncremental, Merge and sync
// messages on the document's views fail with ErrManaged, because changes
// that bypass the store would be neither validated nor persisted. Manage
// may be called once.
func (d *Document) manage(w writer) (*replica, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writer != nil {
		return nil, fmt.Errorf("%w: block %q is already managed", ErrManaged, c.info.Label)
	}
	if c.historical {
		return nil, fmt.Errorf("%w: block %q", ErrHistorical, c.info.Label)
	}
	c.writer = w
	c.attrib, _ = w.(attributor)
	return &replica{c: c}, nil
}

// replica is the store's side of a managed document
// (blockseam.Replica): the one way durable changes from elsewhere (other
// processes, external automerge peers the store has validated) enter it.
type replica struct{ c *core }

// Hold defers the Remote events of the changes the store brings in (its
// catch-ups, merges and epoch switches) until the matching Release. A
// store holds while it holds its own lock on the block, so a subscriber,
// which may call the store (read the block, close the store), runs after
// that lock is released instead of deadlocking on it. Holds nest.
func (r *replica) Hold() {
	r.c.mu.Lock()
	r.c.held++
	r.c.mu.Unlock()
}

// Release ends a Hold. At the last one, the store's write under it is
// over — committed, or taken back before the release — so views read the
// live state again: a merge made under it (Merge), and an edit whose
// flight has not ended yet (its Write returned; endFlight then finds
// nothing to end). The latest deferred Remote event is returned, not fired:
// the store calls fire once it released its own lock on the block (nil:
// nothing to fire). The store releases before it unlocks, so no reader
// can take the block between the two and still read the state before the
// merge.
func (r *replica) Release() (fireEvent func()) {
	c := r.c
	c.mu.Lock()
	c.held--
	if c.held == 0 {
		if _, edit := c.ended[c.inflight]; edit && c.inflight != 0 {
			c.ended[c.inflight] = hexHeads(c.am.Heads())
		}
		c.dropStable()
		c.mergeFlight = 0
	}
	q := c.takeQueued()
	c.mu.Unlock()
	if q == nil {
		return nil
	}
	return func() { fire(q.subs, q.ev) }
}

// LoadIncremental applies changes made elsewhere, as Document.LoadIncremental
// does for an unmanaged document: the merged state must be valid under the
// block's schema, or nothing is kept and the error wraps ErrCorrupt.
//
// Unlike a merge from a peer, a durable change is not refused for pushing
// the block past its character limit: the store enforces limits when it
// writes, and refusing durable history would make the block unreadable.
func (r *replica) LoadIncremental(data []byte) error { return r.c.loadIncremental(data, nil) }

// LoadIncrementals is LoadIncremental of each of chunks in order (a store's
// update rows), with the merged state read and validated once, after the
// last: reading it costs the whole block, so a load of many rows one at a
// time would cost rows × block size. Each chunk is still loaded on its own
// (automerge stops at the first chunk of a buffer it cannot parse and
// keeps what came before, so concatenated rows could lose the rows after a
// damaged one without a word); changes whose dependencies are missing
// queue as with LoadIncremental. On error nothing is kept and no chunk is
// named: a caller that must name the damaged one loads them one at a time.
func (r *replica) LoadIncrementals(chunks [][]byte) error {
	c := r.c
	for i, data := range chunks {
		if len(data) > 0 && !bytes.HasPrefix(data, automergeMagic) {
			return fmt.Errorf("block %q: load changes: %w: chunk %d of %d is not automerge data", c.info.Label, ErrCorrupt, i+1, len(chunks))
		}
	}
	return c.merge("load changes", nil, func() error {
		for _, data := range chunks {
			if len(data) == 0 {
				continue
			}
			if err := c.am.LoadIncremental(data); err != nil {
				return err
			}
		}
		return nil
	})
}

// Unknown returns those of heads (hex change hashes, as Document.Heads
// gives them) that the document does not hold: a store checks that the
// rows it loaded delivered the changes it recorded. A change whose
// dependencies are missing is queued by automerge, not held, so it counts
// as unknown; so does a hash that does not parse.
func (r *replica) Unknown(heads []string) []string {
	c := r.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, h := range heads {
		hs, err := parseHeads([]string{h})
		if err == nil {
			err = guard(func() error { _, err := c.am.Change(hs[0]); return err })
		}
		if err != nil {
			out = append(out, h)
		}
	}
	return out
}

// WithContext returns a view whose writes run with ctx: a managed
// document's Writer gets it, so a store can honour its cancellation before
// a write starts. The default is context.Background().
func (d *Document) WithContext(ctx context.Context) *Document {
	if ctx == nil {
		panic("blocks: nil context")
	}
	v := *d
	v.ctx = ctx
	return &v
}

// Context is the view's context (see WithContext).
func (d *Document) Context() context.Context {
	if d.ctx == nil {
		return context.Background()
	}
	return d.ctx
}

func (c *core) loadIncremental(data []byte, o *Origin) error {
	if len(data) == 0 {
		return nil
	}
	// automerge silently skips input it cannot parse; every automerge chunk
	// starts with the same magic bytes, so reject anything else up front.
	if !bytes.HasPrefix(data, automergeMagic) {
		return fmt.Errorf("block %q: load changes: %w: not automerge data", c.info.Label, ErrCorrupt)
	}
	return c.merge("load changes", o, func() error { return c.am.LoadIncremental(data) })
}

// merge runs f, which brings changes from elsewhere into c.am, judges the
// result and fires a Remote event; if f fails or the change is refused,
// the document returns to its state before f. With an origin the change
// is judged as any write is (CheckTransition): the merged value must be
// valid under the schema, leave read-only parts alone, fit the origin's
// permission and the character limit, and the document must not gain
// containers or value kinds its schema does not lay out. Without one (a
// durable change the store catches up on, judged when it was written) the
// merged value need only be readable.
func (c *core) merge(what string, o *Origin, f func() error) error {
	c.mu.Lock()
	before := c.am.Heads()
	beforeHex := hexHeads(before)
	var (
		prev       any
		prevSize   int
		prevLayout map[string]error
		err        error
	)
	if o != nil {
		// A value the document cannot read now is judged as no value.
		if v, verr := c.value(); verr == nil {
			prev, prevSize = v, c.size
		}
		prevLayout, err = layoutSet(c.am, c.info.Schema)
	}
	if err == nil {
		err = guard(f)
	}
	if err != nil {
		err = fmt.Errorf("block %q: %s: %w: %v", c.info.Label, what, ErrCorrupt, err)
	} else if !equalStrings(beforeHex, hexHeads(c.am.Heads())) {
		c.invalidate()
		if _, verr := c.value(); verr != nil {
			err = fmt.Errorf("block %q: %s: the merged changes break the block's %s schema, so they were not kept: %w",
				c.info.Label, what, c.info.Schema.Kind(), verr)
		} else if o != nil {
			err = c.judgeMerge(what, *o, prev, prevSize, prevLayout)
		}
	}
	if err != nil {
		if rerr := c.rollback(before); rerr != nil {
			err = fmt.Errorf("%w (and rolling back failed: %v)", err, rerr)
		}
		c.mu.Unlock()
		return err
	}
	ev, subs := c.afterRemote(beforeHex)
	now := c.remote(ev, subs)
	c.mu.Unlock()
	if now {
		fire(subs, ev)
	}
	return nil
}

// judgeMerge judges merged changes, now in c.am, as a transition from
// prev (its rendering prevSize runes, its layout problems prevLayout).
// Caller holds mu and has read the merged value.
func (c *core) judgeMerge(what string, o Origin, prev any, prevSize int, prevLayout map[string]error) error {
	who := o.Agent
	if o.System {
		who = "system"
	}
	after, err := layoutSet(c.am, c.info.Schema)
	if err == nil {
		if p := newLayoutProblem(prevLayout, after); p != nil {
			err = fmt.Errorf("block %q: %s by %q: the merged changes do not fit the block's %s layout, so they were not kept: %w",
				c.info.Label, what, who, c.info.Schema.Kind(), p)
		}
	} else {
		err = fmt.Errorf("block %q: %s: %w: %v", c.info.Label, what, ErrCorrupt, err)
	}
	if err != nil {
		return err
	}
	t := transition{info: c.info, origin: o, op: OpMerge, before: prev, after: c.model, sizeBefore: prevSize, sizeAfter: c.size}
	if err := judge(t); err != nil {
		return fmt.Errorf("%s: the merged changes were not kept: %w", what, err)
	}
	return nil
}

// rollback returns the document to heads, dropping every change made or
// merged after them. automerge cannot undo a commit, so the document is
// replaced by a fork as of heads (with a new automerge actor, so no change
// hash or sequence number is ever reused). Caller holds mu.
func (c *core) rollback(heads []automerge.ChangeHash) error {
	var fork *automerge.Doc
	if err := guard(func() (err error) { fork, err = c.am.Fork(heads...); return err }); err != nil {
		c.invalidate()
		return fmt.Errorf("%w: block %q: roll back: %v", ErrCorrupt, c.info.Label, err)
	}
	c.am = fork
	c.own[fork.ActorID()] = true
	c.invalidate()
	return nil
}

// discardPending drops the operations a failed edit left uncommitted.
// automerge-go cannot roll pending operations back, but asking for the
// heads commits them, as a change with no message by this document's
// actor, which no edit makes (every commit here carries a message): the
// document then returns to that change's dependencies. (Reading the heads
// before every edit instead cost each edit a cgo call and ten
// allocations, for a rare failure.) With no operations pending there is
// nothing to drop. Caller holds mu.
func (c *core) discardPending() error {
	var partial *automerge.Change
	err := guard(func() error {
		hs := c.am.Heads()
		if len(hs) != 1 {
			return nil // a commit of pending operations is the one head
		}
		ch, err := c.am.Change(hs[0])
		if err != nil {
			return err
		}
		if ch.Message() == "" && ch.ActorID() == c.am.ActorID() {
			partial = ch
		}
		return nil
	})
	if err != nil {
		c.invalidate()
		return fmt.Errorf("%w: block %q: drop a failed edit: %v", ErrCorrupt, c.info.Label, err)
	}
	if partial == nil {
		c.invalidate()
		return nil
	}
	return c.rollback(partial.Dependencies())
}

// rollbackEdit undoes the change an edit just committed, named by the
// edit's event heads (a local commit is the document's one head): the
// document returns to that change's dependencies, the heads before it
// (read now, not before every edit, as an edit is rarely undone). Caller
// holds mu.
func (c *core) rollbackEdit(heads []string) error {
	hs, err := parseHeads(heads)
	if err == nil && len(hs) != 1 {
		err = fmt.Errorf("%d heads, want the edit's one change", len(hs))
	}
	var deps []automerge.ChangeHash
	if err == nil {
		err = guard(func() error {
			ch, err := c.am.Change(hs[0])
			if err == nil {
				deps = ch.Dependencies()
			}
			return err
		})
	}
	if err != nil {
		c.invalidate()
		return fmt.Errorf("%w: block %q: roll back: %v", ErrCorrupt, c.info.Label, err)
	}
	return c.rollback(deps)
}

// errManaged is the error of a merge attempted on a managed document.
func (c *core) errManaged(what string) error {
	return fmt.Errorf("%w: block %q: %s here would bypass the store (nothing validated or persisted); merge external changes with the store's MergeChanges",
		ErrManaged, c.info.Label, what)
}

// managed reports whether a store manages c. Caller does not hold mu.
func (c *core) managed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writer != nil
}

// Merge brings changes made by an external automerge peer (automerge JS, a
// fork of the block, ...) into the document, as Document.LoadIncremental
// would but stricter: data may be change chunks (SaveIncremental; also a
// peer's later incremental saves, whose changes build on changes the block
// has and data does not hold) or a whole saved document; every change must
// be applicable (changes whose dependencies the block lacks are refused as
// ErrUnrelated, not queued); and the merge is judged as an edit by from
// would be (CheckTransition: schema, layout, read-only parts, from's
// permission, character limit; schema.ErrInvalid, ErrPermission, ErrLimit).
// A store passes the merging agent's current permission. On success it
// returns the changes that were new to the document (see blockseam.Merged), and undo,
// which returns the document to its state before Merge if the store cannot
// make them durable. On error nothing is kept.
func (r *replica) Merge(data []byte, from Origin) (fresh merged, undo func() error, err error) {
	c := r.c
	if len(data) == 0 {
		return merged{}, func() error { return nil }, nil
	}
	if !bytes.HasPrefix(data, automergeMagic) {
		return merged{}, nil, fmt.Errorf("block %q: merge changes: %w: not automerge data", c.info.Label, ErrCorrupt)
	}
	if err := c.affordable(data); err != nil {
		return merged{}, nil, err
	}
	var chs []*automerge.Change
	err = guard(func() (err error) {
		if chs, err = automerge.LoadChanges(data); err == nil && len(chs) > 0 {
			return nil
		}
		doc, lerr := automerge.Load(data)
		if lerr == nil {
			chs, err = doc.Changes()
			return err
		}
		// Changes whose dependencies are in this document, not in data.
		c.mu.Lock()
		defer c.mu.Unlock()
		var oerr error
		if chs, oerr = c.changesOnTop(data); oerr != nil {
			if errors.Is(oerr, ErrUnrelated) {
				return oerr
			}
			return fmt.Errorf("neither changes (%v) nor a document (%v) nor changes on this document (%v)", err, lerr, oerr)
		}
		return nil
	})
	if errors.Is(err, ErrUnrelated) {
		return merged{}, nil, fmt.Errorf("block %q: merge changes: %w", c.info.Label, err)
	}
	if err != nil {
		return merged{}, nil, fmt.Errorf("block %q: merge changes: %w: %v", c.info.Label, ErrCorrupt, err)
	}
	c.mu.Lock()
	before := c.am.Heads()
	err = guard(func() error {
		for _, ch := range chs {
			if len(ch.Dependencies()) > 0 {
				continue
			}
			if _, err := c.am.Change(ch.Hash()); err != nil {
				// A root change the document lacks starts another history:
				// another document, or an epoch before a rebase.
				return fmt.Errorf("block %q: merge changes: %w: change %s starts a history this document does not have (another document, or the block before it was rebased onto a new epoch); load the block's current document and make the edits again",
					c.info.Label, ErrUnrelated, ch.Hash())
			}
		}
		return nil
	})
	if err == nil && c.held > 0 {
		// Under the store's hold this merge is part of a write that may
		// still fail: views read the state before it until the hold ends
		// (Release), and its Remote event waits as long. Its own token, so
		// an edit whose flight is still ending cannot end this one. The
		// state kept is the current one, durable since the store holds the
		// block; not an earlier one still kept (a merge tried ahead, taken
		// back and tried again after a catch-up), which is older.
		err = c.holdStable()
		if err == nil {
			c.flights++
			c.inflight, c.mergeFlight = c.flights, c.flights
		}
	}
	prevQueued := c.queued
	c.mu.Unlock()
	if err != nil {
		return merged{}, nil, err
	}
	err = c.merge("merge changes", &from, func() error {
		// Saved and loaded, not c.am.Apply(chs...): automerge-go passes
		// each change with the whole result it came from, so applying n
		// changes of one peer costs time and memory in n² (see
		// TestMergeOfManySmallChangesIsCheap); loaded, they cost their
		// operations.
		if err := c.am.LoadIncremental(automerge.SaveChanges(chs)); err != nil {
			return err
		}
		for _, ch := range chs {
			if _, err := c.am.Change(ch.Hash()); err != nil {
				return fmt.Errorf("change %s depends on changes this block does not have", ch.Hash())
			}
		}
		return nil
	})
	if err != nil {
		return merged{}, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err = guard(func() error {
		news, err := c.am.Changes(before...)
		if err == nil && len(news) > 0 {
			fresh.Data = automerge.SaveChanges(news)
			for _, ch := range news {
				fresh.Hashes = append(fresh.Hashes, ch.Hash().String())
			}
		}
		return err
	})
	if err != nil {
		return merged{}, nil, fmt.Errorf("block %q: merge changes: %w", c.info.Label, err)
	}
	undo = func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.queued = prevQueued // announce nothing that was taken back
		return c.rollback(before)
	}
	return fresh, undo, nil
}
