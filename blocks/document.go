package blocks

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/schema"
)

// DefaultCharLimit is a block's character limit when Info.CharLimit is 0.
const DefaultCharLimit = 5000

// MaxCharLimit is the largest character limit a store gives a new block.
// Every character of a block is an automerge op kept forever, and
// automerge's text insert grows faster than linearly (measured figures in
// docs/performance.md), so a block is memory a model reads, not a document store: put
// big texts in archival entries.
const MaxCharLimit = 1 << 20

// Info is a block's metadata. It lives beside the CRDT document (the store
// keeps it in SQL columns), not inside it.
type Info struct {
	Label       string        `json:"label"`
	Description string        `json:"description,omitempty"`
	Type        Type          `json:"type"`
	Schema      schema.Schema `json:"-"`
	// Permission is the owner's permission on the block.
	Permission Permission `json:"permission"`
	// CharLimit caps the block's full rendered size in characters (runes);
	// 0 means DefaultCharLimit.
	CharLimit int    `json:"char_limit"`
	Owner     string `json:"owner,omitempty"`
	Pinned    bool   `json:"pinned,omitempty"`
	// Priority orders Working blocks for pruning: a higher number is dropped
	// first when the memory budget is exceeded.
	Priority int `json:"priority,omitempty"`
}

func (i Info) limit() int {
	if i.CharLimit <= 0 {
		return DefaultCharLimit
	}
	return i.CharLimit
}

// Check validates the metadata: a label, a known type and permission and a
// valid schema.
func (i Info) Check() error {
	if i.Label == "" {
		return fmt.Errorf("%w: block label is empty", schema.ErrInvalid)
	}
	if _, err := ParseType(string(i.Type)); err != nil {
		return fmt.Errorf("block %q: %w", i.Label, err)
	}
	if !i.Permission.Valid() {
		return fmt.Errorf("block %q: %w: invalid permission %d", i.Label, ErrPermission, int(i.Permission))
	}
	if i.CharLimit < 0 {
		return fmt.Errorf("%w: block %q: negative char limit", schema.ErrInvalid, i.Label)
	}
	if err := checkUTF8("description", i.Description); err != nil {
		return fmt.Errorf("block %q: %w", i.Label, err)
	}
	if err := schema.Check(i.Schema); err != nil {
		return fmt.Errorf("block %q: %w", i.Label, err)
	}
	return nil
}

// Options configure a Document. nil means defaults.
type Options struct {
	// Approver decides Partner/Human writes; nil denies them.
	Approver Approver
	// Now is the clock for log entry timestamps; nil means time.Now.
	Now func() time.Time
}

// Event describes a change to a document, delivered to subscribers after
// the change is committed (or merged in) and without any lock held.
type Event struct {
	Label   string
	Actor   string // agent id, "system", or "" for changes merged from elsewhere
	Op      Op
	Section string
	Field   string
	// Heads are the document's heads once the change was made (for an
	// edit through a store, once its write was durable: a new epoch's
	// heads if that write started one), not any later writer's.
	Heads  []string
	Remote bool // true for changes that arrived by Merge / LoadIncremental
}

// Change is one entry of a document's history.
type Change struct {
	Hash string `json:"hash"`
	// Actor is who made the change: an agent id or "system" (as its
	// commit message says), or for a change a store merged from elsewhere
	// the agent the store merged it as (see blockseam.Attributor); "unknown" for
	// other changes made outside engram.
	Actor   string    `json:"actor"`
	Op      Op        `json:"op"` // OpMerge for a change a store merged from elsewhere
	Section string    `json:"section,omitempty"`
	Field   string    `json:"field,omitempty"`
	Time    time.Time `json:"time"`
	Deps    []string  `json:"deps,omitempty"`
	Replica string    `json:"replica"` // automerge actor id of the writing replica
	// Epoch is the block's epoch the change belongs to (set by a store's
	// history, which spans epochs; 0 from Document.History).
	Epoch int64 `json:"epoch,omitempty"`
	// PeerMessage is, for a change a store merged from elsewhere, the
	// commit message its maker wrote (at most 256 bytes of it): the
	// peer's own words, unchecked, and never who made the change or what
	// it did (Actor and Op say that).
	PeerMessage string `json:"peer_message,omitempty"`

	message string // the change's commit message, whoever wrote it
}

// commitMessage is stored as each automerge change's message.
type commitMessage struct {
	Actor   string `json:"a"`
	Op      Op     `json:"op"`
	Section string `json:"s,omitempty"`
	Field   string `json:"f,omitempty"`
}

// core is the shared state behind all views of one block.
type core struct {
	mu        sync.Mutex
	am        *automerge.Doc
	info      Info
	infoVer   uint64
	model     any // cached current value; nil when it must be re-read
	hasModel  bool
	size      int // runes of the full rendering of model
	sizeBytes int // its bytes
	view      string
	hasView   bool // view caches render(model, renderView)
	persisted []automerge.ChangeHash
	// own holds every automerge actor this replica has written as: a
	// rollback replaces the document by a fork with a new actor, and the
	// changes made before it under the old one are still this replica's to
	// persist.
	own        map[string]bool
	historical bool
	approver   Approver
	now        func() time.Time
	subs       map[uint64]func(Event)
	nextSub    uint64
	writer     writer // set by manage: every mutation runs inside its Write
	// attrib names who merged the changes that came from elsewhere (the
	// Writer, when it is an Attributor; At views carry their document's).
	attrib attributor
	text   textBuf

	// A store's write in flight: its edit is applied to am but not yet
	// durable, and the store may still take it back (see blockseam.Writer). Views
	// read stable, the state before it, so no reader sees an edit that
	// may fail, until the store's last Release (the write is over then) or
	// the edit's endFlight, whichever comes first; the document the store
	// manages reads the live state it writes. inflight is the write's
	// token (0: none), flights the last token handed out.
	inflight, flights uint64
	stable            stableState
	// ended holds, by write token, the heads at the store's last Release
	// during that write's flight: what the write left, which its edit's
	// event names (another writer may have taken the block and committed
	// by the time the event fires). An edit's write makes its place when
	// it applies, Release fills it, endFlight takes it out.
	ended map[uint64][]string

	// held counts the store's holds (blockseam.Replica.Hold): while held, Remote
	// events wait in queued (the latest) until the last Release, so a
	// subscriber that calls the store runs after the store's own lock on
	// the block is released. mergeFlight is the token of a store merge
	// (blockseam.Replica.Merge) in flight under a hold: views read stable until the
	// hold ends, when the merge is committed or taken back.
	held        int
	queued      *remoteEvent
	mergeFlight uint64
}

// remoteEvent is a Remote event waiting for the end of a hold.
type remoteEvent struct {
	ev   Event
	subs []func(Event)
}

// remote decides what to do with a Remote event: fire it now (true), or
// keep it until the hold ends. Caller holds mu.
func (c *core) remote(ev Event, subs []func(Event)) bool {
	if subs == nil {
		return false
	}
	if c.held > 0 {
		c.queued = &remoteEvent{ev, subs}
		return false
	}
	return true
}

// stableState is what views read while a store's write is in flight.
type stableState struct {
	model           any
	size, sizeBytes int
	view            string
	hasView         bool
	heads           []automerge.ChangeHash
}

// holdStable keeps the current state as the one views read until the write
// in flight ends. The model is shared, not copied: it is never changed in
// place (edits plan on clones and replace it). Caller holds mu.
func (c *core) holdStable() error {
	v, err := c.value()
	if err != nil {
		return err
	}
	c.stable = stableState{model: v, size: c.size, sizeBytes: c.sizeBytes, view: c.view, hasView: c.hasView, heads: c.am.Heads()}
	return nil
}

// dropStable ends the flight in progress: views read the live state.
// Caller holds mu.
func (c *core) dropStable() { c.inflight, c.stable = 0, stableState{} }

// takeQueued returns the Remote event that waited, once nothing holds it
// back: no store hold (blockseam.Replica.Hold) and no write in flight, so views read
// what it announces. Caller holds mu.
func (c *core) takeQueued() *remoteEvent {
	if c.held > 0 || c.inflight != 0 {
		return nil
	}
	q := c.queued
	c.queued = nil
	return q
}

// endFlight ends write token's flight (views read the live state again),
// fires the Remote event that waited for it, and returns the heads the
// store's last release during the flight found (nil: none released).
func (c *core) endFlight(token uint64) (ended []string) {
	c.mu.Lock()
	if c.inflight == token {
		c.dropStable()
	}
	ended = c.ended[token]
	delete(c.ended, token)
	q := c.takeQueued()
	c.mu.Unlock()
	if q != nil {
		fire(q.subs, q.ev)
	}
	return ended
}

// stableFor returns the state a read through d sees while a store's write
// is in flight, or nil when d reads the live state. Caller holds d.c.mu.
func (d *Document) stableFor() *stableState {
	if d.view && d.c.inflight != 0 {
		return &d.c.stable
	}
	return nil
}

// Document is one memory block: an automerge document plus its metadata,
// seen by one accessor with that accessor's effective permission. Views made
// with View share the underlying document. A Document is safe for concurrent
// use.
type Document struct {
	c        *core
	accessor string
	perm     Permission
	approved bool            // a person approved this view's writes (see Approved)
	decision any             // the store's record of that approval (see Approved)
	ctx      context.Context // see WithContext; nil means context.Background()
	// view: made by View, for a reader; it does not see a store's write
	// in flight (see core.inflight).
	view bool
}

// New creates a block document: it checks info, creates the containers the
// schema needs, writes defaults and commits that as the "create" change made
// by the system. The returned view's accessor is info.Owner with
// info.Permission.
func New(info Info, opts *Options) (*Document, error) {
	if err := info.Check(); err != nil {
		return nil, err
	}
	c := newCore(automerge.New(), info, opts)
	if err := guard(func() error { return initNode(c.am.RootMap(), info.Schema) }); err != nil {
		return nil, fmt.Errorf("block %q: create: %w", info.Label, err)
	}
	if _, err := c.commit(commitMessage{Actor: "system", Op: OpCreate}); err != nil {
		return nil, fmt.Errorf("block %q: create: %w", info.Label, err)
	}
	return &Document{c: c, accessor: info.Owner, perm: info.Permission}, nil
}

// Load opens a document from Save (or concatenated SaveIncremental) bytes.
// Everything loaded counts as persisted.
func Load(info Info, data []byte, opts *Options) (*Document, error) {
	if err := info.Check(); err != nil {
		return nil, err
	}
	var am *automerge.Doc
	err := guard(func() (err error) {
		am, err = automerge.Load(data)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("block %q: load: %w: %v", info.Label, ErrCorrupt, err)
	}
	c := newCore(am, info, opts)
	c.persisted = am.Heads()
	if _, err := c.value(); err != nil {
		return nil, fmt.Errorf("block %q: load: %w", info.Label, err)
	}
	return &Document{c: c, accessor: info.Owner, perm: info.Permission}, nil
}

func newCore(am *automerge.Doc, info Info, opts *Options) *core {
	c := &core{am: am, info: info, now: time.Now, subs: map[uint64]func(Event){}, own: map[string]bool{am.ActorID(): true}}
	if opts != nil {
		c.approver = opts.Approver
		if opts.Now != nil {
			c.now = opts.Now
		}
	}
	return c
}

// View returns a view of the same document for another accessor with the
// given effective permission (its own, or one a share granted).
func (d *Document) View(accessor string, perm Permission) *Document {
	return &Document{c: d.c, accessor: accessor, perm: perm, ctx: d.ctx, view: true}
}

// Approved returns a view whose Partner/Human writes count as approved
// without asking the Approver: a store uses it to apply a proposal a person
// (or the owner) approved. Every other check still applies. decision is
// the store's own record of the approval, nil for none: a managed
// document's Writer gets it with each write through the view
// (blockseam.WriteRequest.Decision), so the store can commit the decision in the
// transaction that writes the edit, and it is a parameter of that write,
// not a value hidden in its context.
func (d *Document) Approved(decision any) *Document {
	v := *d
	v.approved = true
	v.decision = decision
	return &v
}

// Accessor is the agent this view acts for.
func (d *Document) Accessor() string { return d.accessor }

// Permission is this view's effective permission.
func (d *Document) Permission() Permission { return d.perm }

// Same reports whether two views share one underlying document.
func (d *Document) Same(o *Document) bool { return o != nil && d.c == o.c }

// Info returns the block's metadata.
func (d *Document) Info() Info {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.c.info
}

// Label is the block's label.
func (d *Document) Label() string { return d.Info().Label }

// Schema is the block's schema.
func (d *Document) Schema() schema.Schema { return d.Info().Schema }

// SetApprover sets the Approver consulted for Partner/Human writes on every
// view of this document.
func (d *Document) SetApprover(a Approver) {
	d.c.mu.Lock()
	d.c.approver = a
	d.c.mu.Unlock()
}

// Historical reports whether this is a read-only view as of past heads.
func (d *Document) Historical() bool { return d.c.historical }

// Value returns a deep copy of the block's current value: a string (Text),
// map[string]any (Map), []Item (List), []LogEntry (Log), or a map of section
// name to section value (Composite).
func (d *Document) Value() (any, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if st := d.stableFor(); st != nil {
		return cloneValue(st.model), nil
	}
	v, err := d.c.value()
	if err != nil {
		return nil, err
	}
	return cloneValue(v), nil
}

// Render renders the block for a model. It is deterministic: the same heads
// and metadata give the same bytes.
func (d *Document) Render() string {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	c := d.c
	if st := d.stableFor(); st != nil {
		if !st.hasView {
			st.view, st.hasView = render(c.info.Schema, st.model, renderView), true
		}
		return st.view
	}
	v, err := c.value()
	if err != nil {
		return ""
	}
	if !c.hasView {
		c.view, c.hasView = render(c.info.Schema, v, renderView), true
	}
	return c.view
}

// Size is the block's full rendered size in characters, the figure the
// character limit applies to.
func (d *Document) Size() int {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if st := d.stableFor(); st != nil {
		return st.size
	}
	if _, err := d.c.value(); err != nil {
		return 0
	}
	return d.c.size
}

// knownSize is Size as last computed (by a read or a write through any
// view), without reading the document again: after a merge not read
// since, it is the size before the merge. For estimates that reading the
// whole document would cost more than they are worth (a store's cache
// weighing its documents at every write).
func (d *Document) knownSize() int {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	return d.c.size
}

// ChangeCount is how many changes the document holds: its history since
// it was created or last rebased (see Rebased).
func (d *Document) ChangeCount() (int, error) {
	c := d.c
	c.mu.Lock()
	defer c.mu.Unlock()
	am, err := d.amFor()
	if err != nil {
		return 0, err
	}
	var n int
	err = guard(func() error {
		chs, err := am.Changes()
		n = len(chs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("block %q: changes: %w", c.info.Label, err)
	}
	return n, nil
}

// SizeBytes is the block's full rendered size in bytes (Size counts
// characters).
func (d *Document) SizeBytes() int {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	if st := d.stableFor(); st != nil {
		return st.sizeBytes
	}
	if _, err := d.c.value(); err != nil {
		return 0
	}
	return d.c.sizeBytes
}

// CharLimit is the block's effective character limit.
func (d *Document) CharLimit() int { return d.Info().limit() }

// value returns the cached model, reading the document if needed. Caller
// holds mu.
func (c *core) value() (any, error) {
	if c.hasModel {
		return c.model, nil
	}
	var v any
	err := guard(func() (err error) {
		v, err = readNode(c.am.RootMap(), c.info.Schema)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w: block %q: %v", ErrCorrupt, c.info.Label, err)
	}
	c.setModel(v)
	return v, nil
}

func (c *core) setModel(v any) {
	c.model, c.hasModel, c.hasView = v, true, false
	full := render(c.info.Schema, v, renderFull)
	c.size, c.sizeBytes = runeLen(full), len(full)
}

func (c *core) invalidate() { c.model, c.hasModel, c.hasView = nil, false, false }

func (c *core) commit(msg commitMessage) (automerge.ChangeHash, error) {
	return commitTo(c.am, msg)
}

// commitTo commits am's pending operations as one change with msg.
func commitTo(am *automerge.Doc, msg commitMessage) (automerge.ChangeHash, error) {
	b, _ := json.Marshal(msg)
	// Automerge's change time is whole seconds (automerge JS); automerge-go
	// writes the milliseconds of the time it is given, so it is given the
	// seconds as milliseconds. changeTime reads both forms.
	at := time.UnixMilli(time.Now().Unix())
	var h automerge.ChangeHash
	err := guard(func() (err error) {
		h, err = am.Commit(string(b), automerge.CommitOptions{Time: &at})
		return err
	})
	return h, err
}

// guard turns a panic inside automerge-go (it panics on some internal
// errors) into an error, so none crosses this package's boundary.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: automerge: %v", ErrCorrupt, r)
		}
	}()
	return f()
}

func hexHeads(hs []automerge.ChangeHash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	sort.Strings(out)
	return out
}

func parseHeads(hs []string) ([]automerge.ChangeHash, error) {
	out := make([]automerge.ChangeHash, 0, len(hs))
	for _, s := range hs {
		if _, err := hex.DecodeString(s); err != nil || len(s) != 64 {
			return nil, fmt.Errorf("%w: bad change hash %q", ErrOutOfRange, s)
		}
		h, err := automerge.NewChangeHash(s)
		if err != nil {
			return nil, fmt.Errorf("%w: bad change hash %q: %v", ErrOutOfRange, s, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// Subscribe registers f to be called after every change to the document,
// local or merged in. Callbacks run on the writer's goroutine after the
// document's locks are released, so they may read the document; on a
// managed document, after the store's lock on the block is released too,
// so they may call the store (see the package doc).
// The returned function unsubscribes.
func (d *Document) Subscribe(f func(Event)) (cancel func()) {
	c := d.c
	c.mu.Lock()
	id := c.nextSub
	c.nextSub++
	c.subs[id] = f
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.subs, id)
		c.mu.Unlock()
	}
}

// subscribers snapshots the callbacks in subscription order. Caller holds mu.
func (c *core) subscribers() []func(Event) {
	if len(c.subs) == 0 {
		return nil
	}
	ids := make([]uint64, 0, len(c.subs))
	for id := range c.subs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	out := make([]func(Event), len(ids))
	for i, id := range ids {
		out[i] = c.subs[id]
	}
	return out
}

func fire(subs []func(Event), ev Event) {
	for _, f := range subs {
		f(ev)
	}
}

// resolveActor returns the attributed actor name and whether checks apply.
func (d *Document) resolveActor(actor Actor) (who string, system bool, err error) {
	switch actor {
	case System:
		return "system", true, nil
	case Agent:
		if d.accessor == "" {
			return "", false, fmt.Errorf("%w: block %q: view has no accessor; act as blocks.System or use View", ErrPermission, d.c.info.Label)
		}
		return d.accessor, false, nil
	}
	if string(actor) != d.accessor {
		return "", false, fmt.Errorf("%w: block %q: view for %q cannot act as %q", ErrPermission, d.c.info.Label, d.accessor, actor)
	}
	return d.accessor, false, nil
}

// request describes one mutation for authorization and history.
type request struct {
	op      Op
	section string
	field   string
	args    []any
}

// authorize checks whether actor may perform req on this view. It may call
// the Approver, so it must run without mu held.
func (d *Document) authorize(actor Actor, req request) (who string, system bool, ver uint64, err error) {
	who, system, err = d.resolveActor(actor)
	if err != nil {
		return "", false, 0, err
	}
	c := d.c
	c.mu.Lock()
	info, ver, approver := c.info, c.infoVer, c.approver
	c.mu.Unlock()
	if c.historical {
		return "", false, 0, fmt.Errorf("%w: block %q", ErrHistorical, info.Label)
	}
	if system {
		return who, true, ver, nil
	}
	if d.approved {
		approver = nil
	}
	if err := d.check(who, info, d.perm, req, approver, true); err != nil {
		return "", false, 0, err
	}
	return who, false, ver, nil
}

// check decides whether agent who, holding perm, may perform req on a
// block described by info. Partner/Human writes are decided by approver
// when ask is set (nil denies), and pass without asking on an Approved view.
func (d *Document) check(who string, info Info, perm Permission, req request, approver Approver, ask bool) error {
	deny := func(why string) error {
		return fmt.Errorf("%w: agent %q may not %s on block %q: %s", ErrPermission, who, req.op, info.Label, why)
	}
	// Schema-level read-only binds agents whatever their permission.
	if ro, what := readOnlyTarget(info.Schema, req.section, req.field); ro {
		return deny(what + " is read-only")
	}
	// A Log block is append-only whatever its schema says.
	if info.Type == Log && req.op.class() == classWrite {
		return deny("a log block is append-only")
	}
	// An Append permission may add to a counter, never take away.
	if req.op == OpIncrementCounter && perm < ReadWrite && len(req.args) == 1 {
		if delta, ok := req.args[0].(int64); ok && delta < 0 {
			return deny(fmt.Sprintf("permission %s allows only increments (delta %d is negative)", perm, delta))
		}
	}
	switch perm {
	case ReadOnly:
		return deny("permission is ReadOnly")
	case Partner, Human:
		if req.op.class() == classAdmin {
			return deny(fmt.Sprintf("permission is %s", perm))
		}
		if d.approved {
			return nil
		}
		if !ask {
			if perm == d.perm {
				return nil // the approver already said yes to this view's edit
			}
			return fmt.Errorf("%w: %w: agent %q %s on block %q needs approval: its permission is now %s (was %s when this view was made)",
				ErrPermission, ErrNeedsApproval, who, req.op, info.Label, perm, d.perm)
		}
		if approver == nil {
			return fmt.Errorf("%w: %w: agent %q %s on block %q needs approval (permission %s) and no approver is set",
				ErrPermission, ErrNeedsApproval, who, req.op, info.Label, perm)
		}
		ok, aerr := approver.Approve(ApprovalRequest{
			Block: info.Label, Owner: info.Owner, Agent: who, Permission: perm,
			Op: req.op, Section: req.section, Field: req.field, Args: req.args,
		})
		if aerr != nil {
			return fmt.Errorf("%w: %w: approver failed for agent %q %s on block %q: %v", ErrPermission, ErrNeedsApproval, who, req.op, info.Label, aerr)
		}
		if !ok {
			return fmt.Errorf("%w: %w: approver denied agent %q %s on block %q", ErrPermission, ErrNeedsApproval, who, req.op, info.Label)
		}
	case Append:
		if req.op.class() != classAppend {
			return deny("permission Append allows only appending operations")
		}
	case ReadWrite:
		if req.op.class() == classAdmin {
			return deny("permission ReadWrite cannot delete or reconfigure")
		}
	case Admin:
	default:
		return deny("no valid permission")
	}
	return nil
}

// readOnlyTarget reports whether a section or field is read-only in s.
func readOnlyTarget(s schema.Schema, section, field string) (bool, string) {
	target := s
	if c, ok := schema.Deref(s).(schema.Composite); ok && section != "" {
		sec, ok := c.Section(section)
		if !ok {
			return false, ""
		}
		if sec.ReadOnly {
			return true, fmt.Sprintf("section %q", section)
		}
		target = sec.Schema
	}
	if m, ok := schema.Deref(target).(schema.Map); ok && field != "" {
		if f, ok := m.Field(field); ok && f.ReadOnly {
			return true, fmt.Sprintf("field %q", field)
		}
	}
	return false, ""
}

// plan computes the prospective value of the node an edit targets and the
// CRDT operations that produce it.
type plan func(s schema.Schema, cur any) (next any, apply func(node *automerge.Map) error, err error)

// Authorize checks, without changing anything, whether actor may perform op
// on this view. The store uses it for operations that live outside the
// document (delete, reconfigure).
func (d *Document) Authorize(actor Actor, op Op) error {
	_, _, _, err := d.authorize(actor, request{op: op})
	return err
}

// mutate authorizes, plans, checks limits and applies one edit as one
// automerge change. A refused edit leaves the document unchanged: every
// check runs on a prospective copy before any CRDT operation. On a managed
// document the edit runs inside the store's Writer, against the state the
// store brought up to date, and is rolled back if the store cannot make it
// durable; subscribers hear of it only once it is.
func (d *Document) mutate(actor Actor, req request, p plan) error {
	err := d.mutateOnce(actor, req, p)
	if err == nil || d.approved || !errors.Is(err, ErrNeedsApproval) {
		return err
	}
	d.c.mu.Lock()
	pr, ok := d.c.writer.(proposer)
	info := d.c.info
	d.c.mu.Unlock()
	if !ok {
		return err
	}
	return pr.Propose(d.Context(), ApprovalRequest{Block: info.Label, Owner: info.Owner, Agent: d.accessor, Permission: d.perm,
		Op: req.op, Section: req.section, Field: req.field, Args: req.args}, err)
}

// mutateOnce is mutate without handing a refusal for want of approval to
// the store (see blockseam.Proposer).
func (d *Document) mutateOnce(actor Actor, req request, p plan) error {
	who, system, ver, err := d.authorize(actor, req)
	if err != nil {
		return err
	}
	c := d.c
	c.mu.Lock()
	w := c.writer
	label := c.info.Label
	c.mu.Unlock()
	if w == nil {
		c.mu.Lock()
		ev, subs, err := c.mutateLocked(Origin{Agent: who, Permission: d.perm, System: system}, ver, req, p)
		c.mu.Unlock()
		if err == nil && ev.Op != "" {
			fire(subs, ev)
		}
		return nameBlock(label, err)
	}
	err = d.mutateManaged(w, who, system, ver, req, p)
	return nameBlock(label, err)
}

// nameBlock adds the block's label to an error that would not say which
// block it is about.
func nameBlock(label string, err error) error {
	if name := fmt.Sprintf("block %q", label); errors.Is(err, ErrWrongSchema) && !strings.Contains(err.Error(), name) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}

// mutateManaged is mutate on a managed document: the edit runs inside w's
// Write (see blockseam.Writer), as a flight of its own token.
func (d *Document) mutateManaged(w writer, who string, system bool, ver uint64, req request, p plan) error {
	c := d.c
	c.mu.Lock()
	c.flights++
	token := c.flights
	// SetInfo replaces c.info under c.mu while a write may be starting.
	label := c.info.Label
	c.mu.Unlock()
	var err error
	var (
		ev      Event
		subs    []func(Event)
		applied bool
		ended   bool
	)
	defer func() {
		if !ended { // a panic under w.Write: no flight outlives it
			c.endFlight(token)
		}
	}()
	wreq := writeRequest{Label: label, Accessor: d.accessor, Actor: who, System: system, Op: req.op, Permission: d.perm, Decision: d.decision}
	wreq.Undo = func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !applied {
			return nil
		}
		applied = false
		if ev.Op == "" {
			return nil // the edit was refused: nothing to take back
		}
		heads := ev.Heads
		ev, subs = Event{}, nil
		return c.rollbackEdit(heads)
	}
	err = w.Write(d.Context(), wreq, func(current Permission) error {
		if applied {
			return fmt.Errorf("block %q: %s: the store applied one edit twice", label, req.op)
		}
		applied = true
		c.mu.Lock()
		defer c.mu.Unlock()
		// The store's Write serializes the edits of a block and takes a
		// failed one back before it returns, so the state an edit meets
		// here (another write's included) is durable: views read it
		// until this write ends.
		if c.inflight != token {
			if err := c.holdStable(); err != nil {
				return err
			}
			c.inflight = token
			// A place for the heads the store's last release finds
			// (Release fills only places an edit made: a merge's token
			// has no endFlight to take them out).
			if c.ended == nil {
				c.ended = map[uint64][]string{}
			}
			c.ended[token] = nil
		}
		if !system && (current != d.perm || c.infoVer != ver) {
			// The share, the permission or the schema changed since this
			// view was made or the edit was authorized: the current ones
			// decide (without asking the approver again while the store
			// holds its write lock).
			if err := d.check(who, c.info, current, req, nil, false); err != nil {
				return err
			}
		}
		ver = c.infoVer
		var err error
		ev, subs, err = c.mutateLocked(Origin{Agent: who, Permission: current, System: system}, ver, req, p)
		return err
	})
	if err != nil {
		if ev.Op != "" {
			c.mu.Lock()
			if rerr := c.rollbackEdit(ev.Heads); rerr != nil {
				err = fmt.Errorf("%w (and rolling back failed: %v)", err, rerr)
			}
			c.mu.Unlock()
		}
		ended = true
		c.endFlight(token)
		return err
	}
	ended = true
	heads := c.endFlight(token)
	if ev.Op != "" {
		// The heads once the write is durable, as the store's release
		// found them (if the store started a new epoch in that write, the
		// edit's own heads are gone): by now another writer may have
		// taken the block and committed.
		if heads == nil {
			c.mu.Lock()
			heads = hexHeads(c.am.Heads())
			c.mu.Unlock()
		}
		ev.Heads = heads
		fire(subs, ev)
	}
	return nil
}

// mutateLocked applies p as o and commits it. It returns the event (no
// Op when nothing changed; its Heads are the edit's change, the one head a
// local commit leaves) and the subscribers to tell. The prospective value
// is judged as every change is (see CheckTransition) before any CRDT
// operation. Caller holds mu.
func (c *core) mutateLocked(o Origin, ver uint64, req request, p plan) (Event, []func(Event), error) {
	label := c.info.Label
	who := o.Agent
	if c.infoVer != ver {
		return Event{}, nil, fmt.Errorf("%w: block %q was reconfigured during %s; retry", ErrWrongSchema, label, req.op)
	}
	full, err := c.value()
	if err != nil {
		return Event{}, nil, err
	}
	nodeSchema := c.info.Schema
	var nodeVal any = full
	if req.section != "" {
		comp, ok := schema.Deref(c.info.Schema).(schema.Composite)
		if !ok {
			return Event{}, nil, fmt.Errorf("%w: block %q has no sections (schema %s)", ErrWrongSchema, label, c.info.Schema.Kind())
		}
		sec, ok := comp.Section(req.section)
		if !ok {
			return Event{}, nil, fmt.Errorf("%w: block %q has no section %q", ErrWrongSchema, label, req.section)
		}
		nodeSchema = sec.Schema
		nodeVal = full.(map[string]any)[req.section]
	} else if c.info.Schema.Kind() == schema.KindComposite && req.op != OpSetValue && req.op != OpRestore {
		return Event{}, nil, fmt.Errorf("%w: block %q is composite; %s needs a section (Document.Section)", ErrWrongSchema, label, req.op)
	}
	var next any
	var apply func(*automerge.Map) error
	err = guard(func() (err error) {
		next, apply, err = p(nodeSchema, cloneValue(nodeVal))
		return err
	})
	if err != nil {
		return Event{}, nil, decorate(err, label)
	}
	var fullNext any = next
	if req.section != "" {
		m := cloneValue(full).(map[string]any)
		m[req.section] = next
		fullNext = m
	}
	if reflect.DeepEqual(fullNext, full) {
		// Nothing would change: no CRDT ops, no empty change, no event.
		return Event{}, nil, nil
	}
	var newSize, newBytes int
	var rotated []LogEntry
	rotator, ls := c.logRotation(req)
	if rotator != nil {
		// Rotation is part of the append (see LogRotator): it makes room
		// before the limit is checked, so a full log takes the entry.
		if req.section == "" {
			var kept []LogEntry
			kept, apply, rotated, newSize, newBytes, err = rotateAppend(c.info.Schema, ls, fullNext.([]LogEntry), c.info.limit(), label, who, apply)
			fullNext = kept
		} else {
			var kept map[string]any
			kept, apply, rotated, newSize, newBytes, err = rotateSectionAppend(c.info.Schema, ls, req.section, full.(map[string]any), next.([]LogEntry), c.info.limit(), label, who, apply)
			fullNext = kept
		}
		if err != nil {
			return Event{}, nil, err
		}
	} else if os, ns, ok := textGrowth(full, fullNext); ok {
		// An append to a Text block: count only the new characters, so
		// the cost of an append does not grow with the block.
		newSize, newBytes = c.size+runeLen(ns[len(os):]), c.sizeBytes+len(ns)-len(os)
	} else {
		r := render(c.info.Schema, fullNext, renderFull)
		newSize, newBytes = runeLen(r), len(r)
	}
	before := full
	if len(rotated) > 0 {
		// The rotation is the store's doing, not the actor's: the append
		// is judged against the entries it keeps, so a rotating append is
		// an append like any other.
		if req.section == "" {
			before = full.([]LogEntry)[len(rotated):]
		} else {
			m := cloneValue(full).(map[string]any)
			m[req.section] = m[req.section].([]LogEntry)[len(rotated):]
			before = m
		}
	}
	t := transition{info: c.info, origin: o, op: req.op, before: before, after: fullNext, sizeBefore: c.size, sizeAfter: newSize}
	if err := judge(t); err != nil {
		return Event{}, nil, err
	}
	node := c.am.RootMap()
	err = guard(func() error {
		if req.section != "" {
			secs, err := getMap(node, keySections)
			if err != nil {
				return err
			}
			if node, err = getMap(secs, req.section); err != nil {
				return err
			}
		}
		return apply(node)
	})
	var made automerge.ChangeHash
	if err == nil {
		made, err = c.commit(commitMessage{Actor: who, Op: req.op, Section: req.section, Field: req.field})
	}
	if err != nil {
		// The document may hold part of the edit as pending operations,
		// which the next edit's commit would carry into the history.
		if rerr := c.discardPending(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return Event{}, nil, fmt.Errorf("block %q: %s: %w", label, req.op, err)
	}
	c.model, c.hasModel, c.size, c.sizeBytes, c.hasView = fullNext, true, newSize, newBytes, false
	if len(rotated) > 0 {
		rotator.RotateLog(rotated)
	}
	// A local commit depends on every head: it is the only head now.
	ev := Event{Label: label, Actor: who, Op: req.op, Section: req.section, Field: req.field, Heads: []string{made.String()}}
	return ev, c.subscribers(), nil
}

// textGrowth reports whether a Text block's value goes from old to new by
// appending (new starts with old); c.size is then old's rune count.
func textGrowth(old, new any) (string, string, bool) {
	os, ok1 := old.(string)
	ns, ok2 := new.(string)
	return os, ns, ok1 && ok2 && len(ns) >= len(os) && ns[:len(os)] == os
}

// decorate adds the block label to schema errors that lack it.
func decorate(err error, label string) error {
	var fe *schema.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("block %q: %w", label, err)
	}
	return err
}
