package blocks

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/internal/blockhook"
	"github.com/engram-go/engram/schema"
)

// A block's history grows with every change, and loading a document costs
// every operation it ever held, deleted text included. A store bounds that
// cost with epochs: past a threshold it starts the block over on a fresh
// document holding only the current value (Rebased), keeps the old
// document as an archive for provenance, and every replica switches to the
// new document (blockseam.Replica.Reset). The new document is a new automerge
// identity: its changes share no history with the old one, so old changes
// can never be merged into it (blockseam.Replica.Merge refuses them).

// Rebased returns a new document that holds d's current value and
// metadata and none of its history: one change, made by the system with
// op OpRebase. Its rendering is d's, byte for byte.
func (d *Document) Rebased() (*Document, error) {
	r := d.StartRebase()
	if err := r.Build(); err != nil {
		return nil, err
	}
	fresh, _, err := r.Finish()
	return fresh, err
}

// A Rebase builds a block's next epoch in three steps, so that the costly
// one holds no lock of the caller's: StartRebase takes d's value (cheap,
// under the caller's lock), Build writes it into a fresh document and saves
// it (in proportion to the value, without the lock), and Finish, under the
// lock again, brings the fresh document to d's value at that moment with
// one more change when it moved meanwhile (in proportion to the
// difference). Each fresh change is the system's, op OpRebase.
type Rebase struct {
	src  *Document
	info Info
	opts Options
	base any // the value the fresh document holds
	nc   *core
	data []byte // nc saved as of base
	err  error  // Build's
}

// StartRebase starts building d's next epoch from its current value and
// metadata (see Rebase).
func (d *Document) StartRebase() *Rebase {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	v, err := c.value()
	return &Rebase{src: d, info: c.info, opts: Options{Approver: c.approver, Now: c.now}, base: cloneValue(v), err: err}
}

// Build writes the value StartRebase took into a fresh document, checks
// that it reads back that value and saves it.
func (r *Rebase) Build() error {
	if r.err != nil {
		return r.err
	}
	if r.nc != nil {
		return nil
	}
	nc := newCore(automerge.New(), r.info, &r.opts)
	err := guard(func() error {
		root := nc.am.RootMap()
		if err := initNode(root, r.info.Schema); err != nil {
			return err
		}
		init, err := readNode(root, r.info.Schema)
		if err != nil {
			return err
		}
		return writeNode(root, r.info.Schema, init, cloneValue(r.base))
	})
	if err == nil {
		err = r.commitChecked(nc, r.base)
	}
	if err == nil {
		err = guard(func() error { r.data = nc.am.Save(); return nil })
	}
	if err != nil {
		r.err = fmt.Errorf("block %q: rebase: %w", r.info.Label, err)
		return r.err
	}
	r.nc = nc
	return nil
}

// commitChecked commits nc's pending operations as a rebase and checks
// that it reads back want: a fresh document that read back another value
// would render other bytes than the block it replaces.
func (r *Rebase) commitChecked(nc *core, want any) error {
	if _, err := nc.commit(commitMessage{Actor: "system", Op: OpRebase}); err != nil {
		return err
	}
	nc.model, nc.hasModel = nil, false
	got, err := nc.value()
	if err != nil {
		return err
	}
	if !sameValue(got, want) {
		return fmt.Errorf("%w: block %q: rebase: the fresh document reads back another value", ErrCorrupt, r.info.Label)
	}
	return nil
}

// Finish returns the fresh document, holding the source document's value
// as it is now, and its saved form (Build's, followed by the change that
// caught up with the source, if any: a saved document followed by changes
// loads as one). The caller keeps the source's value still meanwhile (the
// store holds the block) and checks that its metadata did not change
// since StartRebase: the fresh document has the metadata StartRebase took.
func (r *Rebase) Finish() (*Document, []byte, error) {
	if err := r.Build(); err != nil {
		return nil, nil, err
	}
	c := r.src.c
	c.mu.Lock()
	v, err := c.value()
	c.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	info := r.info
	data := r.data
	if !sameValue(v, r.base) {
		next := cloneValue(v)
		err := guard(func() error { return writeNode(r.nc.am.RootMap(), info.Schema, r.base, cloneValue(next)) })
		if err == nil {
			err = r.commitChecked(r.nc, next)
		}
		if err == nil {
			err = guard(func() error { data = append(append([]byte(nil), r.data...), r.nc.am.SaveIncremental()...); return nil })
		}
		if err != nil {
			r.err = fmt.Errorf("block %q: rebase: %w", info.Label, err)
			return nil, nil, r.err
		}
		r.base, r.data = next, data
	}
	r.nc.persisted = r.nc.am.Heads()
	return &Document{c: r.nc, accessor: r.src.accessor, perm: r.src.perm}, data, nil
}

// carried is what a replica had not persisted when Reset moved it to a new
// epoch (the State of a blockhook.Carried): the value its own unpersisted
// changes were made on, and that value with them. Reapply brings their
// effect into the new epoch.
type carried struct {
	base *automerge.Doc // the replica as of its persisted state (plus others' changes)
	ours *automerge.Doc // base plus this replica's unpersisted changes
}

// Reset replaces the replica's document with data, the saved document of
// the block's new epoch (see Rebased), in place: every view of the block
// keeps working and reads the new document. Everything in data counts as
// persisted. If this replica had changes of its own that were not marked
// persisted, Reset returns them as a Carried (nil otherwise), for Reapply
// (at once, or after the new document caught up: the new epoch's other
// changes merge with the re-applied change either way). Subscribers get a
// Remote event.
func (r *replica) Reset(data []byte) (*blockhook.Carried, error) {
	var am *automerge.Doc
	if err := guard(func() (err error) { am, err = automerge.Load(data); return err }); err != nil {
		return nil, fmt.Errorf("block %q: new epoch: %w: %v", r.c.info.Label, ErrCorrupt, err)
	}
	return r.reset(am)
}

// Adopt is Reset to fresh, a document Rebased made from this replica
// whose saved bytes are now the new epoch's snapshot: it takes fresh's
// document over instead of loading those bytes again (a load costs more
// than building the document did; see docs/performance.md). fresh must
// not be used afterwards.
func (r *replica) Adopt(fresh *Document) (*blockhook.Carried, error) {
	fc := fresh.c
	fc.mu.Lock()
	am := fc.am
	fc.am = nil
	fc.mu.Unlock()
	if am == nil {
		return nil, fmt.Errorf("block %q: new epoch: the fresh document was adopted already", r.c.info.Label)
	}
	return r.reset(am)
}

func (r *replica) reset(am *automerge.Doc) (*blockhook.Carried, error) {
	c := r.c
	c.mu.Lock()
	carried, err := c.unpersisted()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	old, oldPersisted, oldHeads := c.am, c.persisted, hexHeads(c.am.Heads())
	c.am, c.persisted = am, am.Heads()
	c.invalidate()
	if _, err := c.value(); err != nil {
		c.am, c.persisted = old, oldPersisted
		c.invalidate()
		c.mu.Unlock()
		return nil, fmt.Errorf("block %q: new epoch: %w", c.info.Label, err)
	}
	// The old epoch's actors wrote nothing the new document holds.
	c.own = map[string]bool{am.ActorID(): true}
	ev, subs := c.afterRemote(oldHeads)
	now := c.remote(ev, subs)
	c.mu.Unlock()
	if now {
		fire(subs, ev)
	}
	return carried, nil
}

// unpersisted returns this replica's own changes past its persisted heads
// as a Carried, or nil if it has none. Caller holds mu.
func (c *core) unpersisted() (*blockhook.Carried, error) {
	var out *blockhook.Carried
	err := guard(func() error {
		chs, err := c.am.Changes(c.persisted...)
		if err != nil {
			return err
		}
		var others []*automerge.Change
		own := false
		for _, ch := range chs {
			if c.own[ch.ActorID()] {
				own = true
			} else {
				others = append(others, ch)
			}
		}
		if !own {
			return nil
		}
		base, err := c.am.Fork(c.persisted...)
		if err != nil {
			return err
		}
		// Not base.Apply(others...): automerge-go passes each change with
		// the whole result it came from (here every change since the
		// persisted heads, ours included), so Apply of a subset applies
		// all of them; base would then already hold our changes, and the
		// re-apply would find nothing to carry over. Saved and loaded
		// again, only the others go in.
		if len(others) > 0 {
			if err := base.LoadIncremental(automerge.SaveChanges(others)); err != nil {
				return err
			}
		}
		ours, err := c.am.Fork()
		if err != nil {
			return err
		}
		out = &blockhook.Carried{State: &carried{base: base, ours: ours}}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("block %q: carry unpersisted changes: %w", c.info.Label, err)
	}
	return out, nil
}

// Reapply makes the changes Reset carried over again, on the new epoch.
// archived are the saved documents of the epochs from the one the carried
// changes were made on up to the one before the new epoch, oldest first
// (a store's archive of them). With them, for a text block, nothing but the carried changes
// is ever diffed: they are merged with the whole of their epoch (every
// change the block's other writers made on it, as automerge changes), and
// their effect, the difference between that merge and the epoch's final
// value, is made again on the next epoch's first state (the value its
// rebase wrote, which is that final value) and merged with that epoch's
// own changes, and so on up to the new one, where it becomes one new
// change by the system, pending like the originals. Without them (nil),
// for other schemas, or when they do not hold what that needs, the other writers' changes
// since the carried ones are diffed instead (reapplyByValue): a difference
// of whole values that, merged with the carried changes, can misplace text
// the two made near each other. Nothing is duplicated either way: the new
// document gets a difference of values, never an old change.
func (r *replica) Reapply(k *blockhook.Carried, archived [][]byte) error {
	if k == nil {
		return nil
	}
	c := r.c
	kc, ok := k.State.(*carried)
	if !ok {
		return fmt.Errorf("block %q: reapply: %T is not what Reset carried", c.info.Label, k.State)
	}
	c.mu.Lock()
	ev, subs, err := c.reapplyLocked(kc, archived)
	now := c.remote(ev, subs)
	c.mu.Unlock()
	if now {
		fire(subs, ev)
	}
	return err
}

func (c *core) reapplyLocked(k *carried, archived [][]byte) (Event, []func(Event), error) {
	// Through the archive only for text: its difference is made of
	// splices of the characters that changed, which merge with the
	// epochs' later changes. Other schemas' differences replace whole
	// items or lists (a checked item is deleted and inserted again, a
	// list field set anew, a log rewritten when it rotated), and made at
	// an epoch's start they would undo what that epoch later deleted or
	// appended there; their value difference is taken at the new epoch
	// instead, as before.
	if len(archived) > 0 && c.info.Schema.Kind() == schema.KindText {
		// Any failure (an archive that does not load, an epoch that does
		// not start where the one before it ended) leaves c as it was:
		// the value difference still carries the edits.
		if data, err := c.carryThrough(k, archived); err == nil {
			return c.loadCarried(data)
		}
	}
	return c.reapplyByValue(k)
}

// errNoEpochStart: an epoch's document does not start with the rebase of
// the one before it (Reapply then diffs values).
var errNoEpochStart = errors.New("the epoch does not start where the one before it ended")

// carryThrough is Reapply's merge through archived (see Reapply): it
// returns the change that makes the carried changes' effect on the
// current document, saved for LoadIncremental (nil: they have none left,
// because every one of them is in the archive already or the other
// writers' changes made them moot). It changes nothing of c. Caller holds
// mu.
func (c *core) carryThrough(k *carried, archived [][]byte) ([]byte, error) {
	s := c.info.Schema
	var data []byte
	err := guard(func() error {
		// ours with all of its epoch: every change of the epoch once.
		epoch, err := automerge.Load(archived[0])
		if err != nil {
			return err
		}
		ours, err := k.ours.Fork()
		if err != nil {
			return err
		}
		if _, err := ours.Merge(epoch); err != nil {
			return err
		}
		final, err := readNode(epoch.RootMap(), s)
		if err != nil {
			return err
		}
		want, err := readNode(ours.RootMap(), s)
		if err != nil {
			return err
		}
		next := func(i int) (*automerge.Doc, error) {
			if i < len(archived) {
				return automerge.Load(archived[i])
			}
			return c.am, nil
		}
		for i := 1; i <= len(archived); i++ {
			if sameValue(final, want) {
				return nil // nothing of ours is left to carry
			}
			doc, err := next(i)
			if err != nil {
				return err
			}
			start, err := epochStart(doc)
			if err != nil {
				return err
			}
			fork, err := doc.Fork(start...)
			if err != nil {
				return err
			}
			if i == len(archived) {
				// The change goes into c.am as this replica's own: its
				// actor's next change there (none was made since start,
				// or the sequence numbers would collide).
				after, err := doc.Changes(start...)
				if err != nil {
					return err
				}
				for _, ch := range after {
					if ch.ActorID() == c.am.ActorID() {
						return errNoEpochStart
					}
				}
				if err := fork.SetActorID(c.am.ActorID()); err != nil {
					return err
				}
			}
			first, err := readNode(fork.RootMap(), s)
			if err != nil {
				return err
			}
			if !sameValue(first, final) {
				return errNoEpochStart
			}
			if err := writeNode(fork.RootMap(), s, final, cloneValue(want)); err != nil {
				return err
			}
			if _, err := commitTo(fork, commitMessage{Actor: "system", Op: OpMerge}); err != nil {
				return err
			}
			if i == len(archived) {
				chs, err := fork.Changes(start...)
				if err != nil {
					return err
				}
				data = automerge.SaveChanges(chs)
				return nil
			}
			// Through an archived epoch: the effect meets that epoch's
			// own changes, and what it came to is carried on.
			if _, err := fork.Merge(doc); err != nil {
				return err
			}
			if final, err = readNode(doc.RootMap(), s); err != nil {
				return err
			}
			if want, err = readNode(fork.RootMap(), s); err != nil {
				return err
			}
		}
		return nil
	})
	return data, err
}

// epochStart returns the heads of doc's first state: the change or
// changes of the rebase that started its epoch (see Rebase), which every
// other change of the epoch comes after.
func epochStart(doc *automerge.Doc) ([]automerge.ChangeHash, error) {
	chs, err := doc.Changes()
	if err != nil {
		return nil, err
	}
	rebase := map[string]automerge.ChangeHash{}
	for _, ch := range chs {
		var m commitMessage
		if json.Unmarshal([]byte(ch.Message()), &m) == nil && m.Op == OpRebase && m.Actor == "system" {
			rebase[ch.Hash().String()] = ch.Hash()
		}
	}
	for _, ch := range chs {
		if _, ok := rebase[ch.Hash().String()]; !ok {
			continue
		}
		for _, d := range ch.Dependencies() {
			delete(rebase, d.String())
		}
	}
	if len(rebase) == 0 {
		return nil, errNoEpochStart
	}
	out := make([]automerge.ChangeHash, 0, len(rebase))
	for _, h := range rebase {
		out = append(out, h)
	}
	return out, nil
}

// loadCarried loads the change carryThrough made into c.am, where it is
// pending like the changes it carries. A change that would leave a value
// the schema refuses is not kept. Caller holds mu.
func (c *core) loadCarried(data []byte) (Event, []func(Event), error) {
	if data == nil {
		return Event{}, nil, nil
	}
	before := c.am.Heads()
	beforeHex := hexHeads(before)
	err := guard(func() error { return c.am.LoadIncremental(data) })
	if err == nil {
		c.invalidate()
		_, err = c.value()
	}
	if err != nil {
		if rerr := c.rollback(before); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return Event{}, nil, fmt.Errorf("block %q: re-apply unpersisted changes on the new epoch: %w", c.info.Label, err)
	}
	ev, subs := c.afterRemote(beforeHex)
	return ev, subs, nil
}

// reapplyByValue is Reapply without the archived epochs: what the
// block's other writers changed since the carried changes were made and
// what the carried changes did are merged by automerge on the old
// document, and the difference between the new document's value and that
// merge is applied as one new change by the system.
func (c *core) reapplyByValue(k *carried) (Event, []func(Event), error) {
	before := hexHeads(c.am.Heads())
	s := c.info.Schema
	theirs, err := c.value()
	if err != nil {
		return Event{}, nil, err
	}
	var merged any
	same := false
	err = guard(func() error {
		// On the old document: base → theirs as one change, then the
		// carried changes merged in.
		root := k.base.RootMap()
		base, err := readNode(root, s)
		if err != nil {
			return err
		}
		if err := writeNode(root, s, base, cloneValue(theirs)); err != nil {
			return err
		}
		if _, err := k.base.Commit("epoch catch-up", automerge.CommitOptions{AllowEmpty: true}); err != nil {
			return err
		}
		if _, err := k.base.Merge(k.ours); err != nil {
			return err
		}
		if merged, err = readNode(k.base.RootMap(), s); err != nil {
			return err
		}
		if same = reflect.DeepEqual(merged, theirs); same {
			return nil
		}
		return writeNode(c.am.RootMap(), s, theirs, cloneValue(merged))
	})
	if err == nil && !same {
		_, err = c.commit(commitMessage{Actor: "system", Op: OpMerge})
	}
	if err != nil {
		// As for a failed edit (mutateLocked): operations writeNode left
		// pending on the document would ride on the next edit's commit.
		if rerr := c.discardPending(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return Event{}, nil, fmt.Errorf("block %q: re-apply unpersisted changes on the new epoch: %w", c.info.Label, err)
	}
	if same {
		return Event{}, nil, nil
	}
	ev, subs := c.afterRemote(before) // (drops the cached value: merged is the new one)
	return ev, subs, nil
}
