package syncrepo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/automerge/automerge-go"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/amchunk"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/internal/tokenbucket"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// Agent is what a Session asks of the agent it serves: the methods of
// *memory.Agent it calls, defined here so that a caller can share one
// stamp read among the connections of an agent (engram serve does).
type Agent interface {
	ID() string
	// BlocksStamp fingerprints the blocks the agent sees; the Session
	// reads it at every poll and signal and looks at its documents only
	// when it changed.
	BlocksStamp(ctx context.Context) (memory.BlocksStamp, error)
	// DocumentBlock is the handle on the block a document id names, if
	// the agent may read it.
	DocumentBlock(ctx context.Context, id memory.DocumentID) (*memory.Block, error)
}

// Notifier signals when the blocks a store holds may have changed (the
// store's BlocksChanged method): BlocksChanged returns a channel closed at
// the next such change, a new one after each. A Session given one
// (Options.Notifier) reads the stamp at each signal, so a change reaches
// the peer without waiting for the next poll; the poll stays for changes
// the store cannot signal (on SQLite, another process's).
type Notifier interface {
	BlocksChanged() <-chan struct{}
}

// Conn is one peer's connection: whole frames in and out (a WebSocket's
// binary messages). Read's size cap belongs to the Conn.
type Conn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, frame []byte) error
}

// Options configure Serve; the zero value (or nil) means the defaults.
type Options struct {
	// ReadOnly refuses every change the peer sends (a read-only token).
	ReadOnly bool
	// MaxDocuments caps the documents one connection syncs; a request
	// beyond it is answered doc-unavailable. Default 256.
	MaxDocuments int
	// Rate is the peer's sustained frames per second and Burst how many
	// it may send at once; beyond, the Session stops reading (the peer's
	// writes back up in TCP) until the bucket refills. Defaults 200, 400.
	Rate  float64
	Burst int
	// Poll is how often the Session asks the store whether any block the
	// agent sees changed (memory.Agent.BlocksStamp: one indexed query, or
	// on SQLite none while nothing was committed) to push changes to the
	// peer. A Notifier also wakes the Session at each change it
	// signals; the poll then carries only what it cannot signal. Default
	// 100ms.
	Poll time.Duration
	// Notifier, if set, wakes the Session when the store's blocks may
	// have changed: the store the agent's handle came from. Nil: the
	// poll alone.
	Notifier Notifier
	// SignalGap is the least time between two polls that the store's
	// signals start (see Notifier): a signal within it of the last such
	// poll is served by one poll at its end, so a burst of writes costs
	// each connection a poll per gap, not one per write. Default 10ms.
	SignalGap time.Duration
	// MaxHeldBytes caps the refused changes one document of a connection
	// may hold (see docs/sync.md): a peer that keeps making refused edits
	// (a read-only token, say) would otherwise grow the server's copy
	// without end. Beyond it the document becomes unavailable to the
	// peer. Default 4 MiB.
	MaxHeldBytes int
	// MaxMessageOps caps the automerge operations the changes of one
	// sync message may apply, whatever the block's limit: automerge's CPU
	// and memory grow with each, and a block of a large limit would
	// otherwise take a change of millions at once. They are counted as
	// they are measured: operations, the earlier operations they
	// overwrite or delete, and 16 for each change (a change costs about
	// as much on its own), together with what applies along with them:
	// the changes the credential's connections keep waiting for their
	// dependencies (one message may complete them all) or that have
	// applied to the peer's private copy but not yet to the store, and
	// the peer's changes refused earlier and held on its private copy
	// (merged again with every message) past an allowance of one
	// MaxMessageOps. A message past it is refused unapplied, as one past
	// its block's limit is; a peer whose waiting changes alone pass it
	// loses the document. Default DefaultMaxMessageOps.
	MaxMessageOps int
	// Recheck is how long after a stamp change the Session keeps
	// comparing its documents with the store's. Default 1 second.
	Recheck time.Duration
	// Mirrors shares the server's copies of documents with other
	// sessions of the process. Default: this session's own.
	Mirrors *Mirrors
	// PeerID is the server's automerge-repo PeerId. Default random.
	PeerID string
	// Logger gets refused changes and store errors. Default discarded.
	Logger *slog.Logger
	// Budget is the work the peers of this connection's credential may
	// make the server do, shared by all its connections: automerge
	// operations per second and bytes held. Default: this connection's
	// own, NewBudget(0, 0, 0).
	Budget *Budget
	// Turn, when set, is taken before the Session handles a frame the
	// peer sent and released once it has: a server hands its credentials
	// turns, so that the connections of one credential use one share of
	// the cores (and make garbage at one share's pace) however many it
	// opens. It waits, or fails when ctx ends; a failure ends the
	// Session. Nil: no turns.
	Turn func(ctx context.Context) (release func(), err error)
}

// Refusal is the payload (CBOR) of the ephemeral message a Session sends
// on a document when it refused changes the peer made to it: the peer
// gets it as a DocHandle "ephemeral-message" event. The counter-change
// that takes the edit back follows as an ordinary sync message.
type Refusal struct {
	Engram string `cbor:"engram"` // "refused"
	Error  string `cbor:"error"`
}

type docState struct {
	id           string
	owner, label string
	blk          *memory.Block // the agent's handle on the block
	// sh is the shared copy the session syncs against, until the peer
	// makes a refused change; from then on mirror is the session's own.
	sh *shared
	ss *automerge.SyncState
	// mirror (private) is the store's document plus what the peer sent
	// (refused changes and their counter-changes too).
	mirror *automerge.Doc
	base   []string // heads (hex) of the store's document last merged into mirror
	// held are refused changes and their counter-changes: in mirror (the
	// peer has them) but not in the store. They go to the store only
	// with a later change that depends on them (the pair nets out), never
	// on their own, so a refused edit persists nothing.
	held      map[automerge.ChangeHash]bool
	heldBytes int
	// heldOps are the held changes' operations as measured: every later
	// merge of the peer's changes hands them to the store again (with
	// the new ones), so they count against each message's MaxMessageOps.
	heldOps int64
	// unmergedOps are the operations of changes that waited for their
	// dependencies and have applied in mirror (a catch-up brought those)
	// but not yet in the store: the peer's next merge hands them over.
	unmergedOps int64
	// queued are changes the peer sent whose dependencies mirror lacks:
	// automerge keeps them, without bound, until those come. They count
	// against MaxHeldBytes with held.
	// automerge applies them, with the change that completes them, as
	// part of a later message, so their operations (queuedOps) count
	// against that message's MaxMessageOps.
	queued      map[automerge.ChangeHash]queuedChange
	queuedBytes int
	queuedOps   int64
	// waitingAccounted is the part of queuedOps counted in the
	// credential's Budget: another of its connections may merge the
	// change that completes them, and every private copy waiting for it
	// then applies its own at its next catch-up.
	waitingAccounted int64
	// limit is the block's character limit as of the last message: a
	// message's changes are measured against MergeLimits(limit) before
	// automerge applies them.
	limit int
	// mirrorBytes is the saved size of the private mirror, and accounted
	// what this document holds against Options.Budget.
	mirrorBytes int
	accounted   int64
	// peerHeads are the heads the peer's last sync message named (heard:
	// there was one), and sent the changes past them that messages since
	// carried: what complete needs.
	heard     bool
	peerHeads []automerge.ChangeHash
	sent      map[automerge.ChangeHash]bool
}

type session struct {
	ctx context.Context
	// live ends with ctx or as soon as the peer's connection cannot be
	// read (closed): what waits only for the peer's sake (the budget, a
	// copy another session is making) stops waiting then.
	live    context.Context
	conn    Conn
	mem     Agent
	agent   string
	hooks   hooks
	opts    Options
	log     *slog.Logger
	peer    string // the peer's PeerId, as it says (used only to address replies)
	joined  bool
	docs    map[string]*docState
	stamp   memory.BlocksStamp
	recheck time.Time // poll looks at the documents until then
	session string
	count   uint64
}

// Serve syncs, over conn, the blocks agent a may read with one
// automerge-repo peer until ctx ends or the connection fails (its error
// is returned; a peer breaking the protocol gives ErrProtocol). Every
// change the peer sends is merged through the block handle's Merge as the
// agent; a refused one is taken back on the peer by a counter-change (see
// docs/sync.md).
func Serve(ctx context.Context, conn Conn, a Agent, opts *Options) error {
	return serve(ctx, conn, a, opts, hooks{})
}

// hooks replace the block handles' Doc and Merge (nil: the handle's); only
// tests set them (export_test.go).
type hooks = struct {
	Doc   func(ctx context.Context, b *memory.Block) (*blocks.Document, error)
	Merge func(ctx context.Context, b *memory.Block, data []byte) error
}

func serve(ctx context.Context, conn Conn, a Agent, opts *Options, h hooks) error {
	if h.Doc == nil {
		h.Doc = func(ctx context.Context, b *memory.Block) (*blocks.Document, error) { return b.Doc(ctx) }
	}
	if h.Merge == nil {
		h.Merge = func(ctx context.Context, b *memory.Block, data []byte) error { return b.Merge(ctx, data) }
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxDocuments <= 0 {
		o.MaxDocuments = 256
	}
	if o.Rate <= 0 {
		o.Rate = 200
	}
	if o.Burst <= 0 {
		o.Burst = 400
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.SignalGap <= 0 {
		o.SignalGap = 10 * time.Millisecond
	}
	if o.MaxHeldBytes <= 0 {
		o.MaxHeldBytes = 4 << 20
	}
	if o.MaxMessageOps <= 0 {
		o.MaxMessageOps = DefaultMaxMessageOps
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Second
	}
	if o.Mirrors == nil {
		o.Mirrors = NewMirrors()
	}
	if o.Budget == nil {
		o.Budget = NewBudget(0, 0, 0)
	}
	if o.PeerID == "" {
		o.PeerID = "engram-" + randomHex(8)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	live, closed := context.WithCancel(ctx)
	defer closed()
	s := &session{ctx: ctx, live: live, conn: conn, mem: a, agent: a.ID(), hooks: h, opts: o, log: log, docs: map[string]*docState{}, session: randomHex(8)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		bucket := tokenbucket.Full(float64(o.Burst), time.Now())
		for {
			if wait := bucket.Take(time.Now(), o.Rate, float64(o.Burst)); wait > 0 {
				select {
				case <-time.After(wait):
					continue
				case <-ctx.Done():
					return
				}
			}
			b, err := conn.Read(ctx)
			if err != nil {
				errc <- err
				closed()
				return
			}
			select {
			case in <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		for _, d := range s.docs {
			if d.sh != nil {
				o.Mirrors.release(d.sh)
			}
			o.Budget.hold(-d.accounted)
			o.Budget.addWaitingOps(-d.waitingAccounted)
		}
	}()
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	// The signal's channel is taken before each stamp read, so a change
	// racing with the read closes it and the session looks again.
	notifier := o.Notifier
	var (
		changed  <-chan struct{}
		signaled time.Time        // when a signal last started a poll
		deferred <-chan time.Time // a poll for signals within SignalGap of it
	)
	if notifier != nil {
		changed = notifier.BlocksChanged()
	}
	if st, err := a.BlocksStamp(ctx); err == nil {
		s.stamp = st
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err = <-errc:
			return err
		case b := <-in:
			err = s.handleInTurn(b)
		case <-changed:
			changed = notifier.BlocksChanged()
			switch now := time.Now(); {
			case deferred != nil:
				// the deferred poll will see this change too
			case now.Sub(signaled) < o.SignalGap:
				deferred = time.After(o.SignalGap - now.Sub(signaled))
			case s.joined:
				signaled = now
				err = s.poll()
			}
		case <-deferred:
			deferred, signaled = nil, time.Now()
			if s.joined {
				err = s.poll()
			}
		case <-tick.C:
			if s.joined {
				err = s.poll()
			}
		}
		if err != nil {
			select {
			case rerr := <-errc:
				return rerr // the connection's end, which cut err short
			default:
			}
			return err
		}
	}
}

// handleInTurn handles frame b in a turn (Options.Turn), if turns are
// given out.
func (s *session) handleInTurn(b []byte) error {
	if s.opts.Turn != nil {
		release, err := s.opts.Turn(s.live)
		if err != nil {
			return err
		}
		defer release()
	}
	return s.handle(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *session) send(m Message) error {
	m.SenderID = s.opts.PeerID
	if m.TargetID == "" {
		m.TargetID = s.peer
	}
	b, err := EncodeMessage(m)
	if err != nil {
		return err
	}
	return s.conn.Write(s.ctx, b)
}

func (s *session) handle(frame []byte) error {
	m, err := DecodeMessage(frame)
	if err != nil {
		return s.send(Message{Type: TypeError, Message: err.Error()})
	}
	if !s.joined {
		if m.Type != TypeJoin {
			s.send(Message{Type: TypeError, Message: "the first message must be join"})
			return fmt.Errorf("%w: %s before join", ErrProtocol, m.Type)
		}
		if !slices.Contains(m.SupportedProtocolVersions, ProtocolVersion) {
			s.send(Message{Type: TypeError, TargetID: m.SenderID, Message: "unsupported protocol versions: this server speaks " + ProtocolVersion})
			return fmt.Errorf("%w: peer supports %q, not %q", ErrProtocol, m.SupportedProtocolVersions, ProtocolVersion)
		}
		s.peer, s.joined = m.SenderID, true
		return s.send(Message{Type: TypePeer, SelectedProtocolVersion: ProtocolVersion, PeerMetadata: map[string]any{"isEphemeral": true}})
	}
	switch m.Type {
	case TypeSync, TypeRequest:
		return s.syncMessage(m)
	}
	// ephemeral messages are not relayed: the Session is no relay
	// between peers. Others (doc-unavailable, remote heads) need no answer.
	return nil
}

func (s *session) unavailable(id string) error {
	return s.send(Message{Type: TypeDocUnavailable, DocumentID: id})
}

func (s *session) syncMessage(m Message) error {
	d := s.docs[m.DocumentID]
	if d != nil {
		// The poll learns of an unshare or a deletion only at its next
		// tick, and by then another session may have caught the shared
		// copy up with the owner's later edits: a message is answered
		// only while agent may still read the block.
		doc, err := s.view(d)
		if err != nil {
			return s.gone(d, err)
		}
		d.limit = doc.CharLimit()
	}
	if d == nil {
		id, err := ParseDocumentID(m.DocumentID)
		if err != nil {
			return s.unavailable(m.DocumentID)
		}
		if len(s.docs) >= s.opts.MaxDocuments {
			s.log.Info("sync: documents per connection cap reached", "agent", s.agent, "max", s.opts.MaxDocuments)
			return s.unavailable(m.DocumentID)
		}
		b, err := s.mem.DocumentBlock(s.ctx, id)
		if err != nil {
			if !errors.Is(err, memory.ErrNotFound) {
				s.log.Error("sync: look up document", "agent", s.agent, "err", err)
			}
			return s.unavailable(m.DocumentID)
		}
		owner, label := b.Owner(), b.Label()
		d = &docState{id: m.DocumentID, owner: owner, label: label, blk: b}
		doc, err := s.view(d)
		if err != nil {
			return s.unavailable(m.DocumentID)
		}
		d.limit = doc.CharLimit()
		// The id names one epoch of one block: its copy is the same
		// for every agent that may read it.
		// A copy no session holds yet is made for this one, whose
		// credential is charged for it as for a private copy: otherwise a
		// token that joins a large block, leaves and joins again would
		// have it copied each time for free. Charged before the copy is
		// registered, not inside load: the sessions of other tokens
		// joining the same document then never wait on this one's budget.
		// A copy made in between by a race is charged after it.
		charged := false
		if !s.opts.Mirrors.has(m.DocumentID) {
			if err := s.chargeCopy(d); err != nil {
				return err
			}
			charged = true
		}
		sh, loaded, err := s.opts.Mirrors.acquire(s.live, m.DocumentID, func() (*automerge.Doc, error) { return s.storeDoc(d) })
		if err != nil {
			if s.live.Err() != nil {
				return s.live.Err()
			}
			s.log.Error("sync: load document", "agent", s.agent, "owner", owner, "label", label, "err", err)
			return s.unavailable(m.DocumentID)
		}
		if loaded && !charged {
			if err := s.chargeCopy(d); err != nil {
				s.opts.Mirrors.release(sh)
				return err
			}
		}
		d.sh = sh
		sh.mu.Lock()
		d.ss = automerge.NewSyncState(sh.doc)
		sh.mu.Unlock()
		s.docs[m.DocumentID] = d
	}
	sm, err := scanSyncMessage(m.Data)
	if err != nil {
		return s.send(Message{Type: TypeError, Message: fmt.Sprintf("document %s: bad sync message: %v", d.id, err)})
	}
	if len(sm.Changes) > 0 {
		// Measured before automerge sees them: applying a change costs
		// CPU and memory per operation, and a few bytes can describe
		// millions of operations.
		room := s.messageRoom(d)
		cost, err := amchunk.MeasureAll(sm.Changes, messageLimits(d.limit, room))
		if err == nil && messageCost(cost) > room {
			err = fmt.Errorf("%w: %d operations, references and changes (each change counted %d), more than %d",
				amchunk.ErrTooCostly, messageCost(cost), changeWeight, room)
		}
		if err != nil {
			return s.refuseUnapplied(d, err)
		}
		if err := s.opts.Budget.spend(s.live, messageCost(cost)); err != nil {
			return err
		}
	}
	if d.sh != nil {
		return s.syncShared(d, m, sm)
	}
	return s.syncPrivate(d, m.Data)
}

// changeWeight is what a change counts for against MaxMessageOps and the
// Budget beside its operations: applying one costs the server about as
// much as 13 one-character operations (it is decoded, looked up,
// merged and recorded on its own).
const changeWeight = 16

// messageCost is what measured changes count against MaxMessageOps and
// the Budget: their operations, the earlier operations they overwrite
// or delete, and changeWeight for each change.
func messageCost(c amchunk.Cost) int64 {
	return c.Ops + c.Refs + changeWeight*c.Changes
}

// messageRoom is what the changes of one message to d may cost
// (messageCost): Options.MaxMessageOps, less what applies with them, at
// least 1. That is: the changes the credential's connections keep
// waiting for their dependencies (the message may complete them), those
// that have applied in d's mirror since but not in the store, and d's
// held changes (a refused edit and its counter-change, merged again with
// every message) past an allowance of one MaxMessageOps: an honest
// peer's one refused edit costs the store about three times its own
// operations with each later merge (the counter-change deletes what it
// inserted), which must not leave it no room, while refused edits that
// pile up do. A read-only peer's held changes never reach the store.
func (s *session) messageRoom(d *docState) int64 {
	most := int64(s.opts.MaxMessageOps)
	waiting := max(s.opts.Budget.waitingOps(), d.queuedOps)
	held := max(d.heldOps-most, 0)
	if s.opts.ReadOnly {
		held = 0
	}
	return max(most-held-d.unmergedOps-waiting, 1)
}

// messageLimits is what one message's changes may ask of a block of
// limit characters: its merge limits, each within room (the measure
// stops at the first it passes; their sum is checked after).
func messageLimits(limit int, room int64) amchunk.Limits {
	lim := blocks.MergeLimits(limit)
	lim.Ops, lim.Refs, lim.Changes = min(lim.Ops, room), min(lim.Refs, room), min(lim.Changes, max(room/changeWeight, 1))
	return lim
}

// refuseUnapplied answers a message whose changes were refused before
// anything applied them (too costly for the block, or not automerge
// data): the peer gets the Refusal and then doc-unavailable, since no
// counter-change can be made for a change the server never applied.
// The peer keeps its edit; the store never sees it.
func (s *session) refuseUnapplied(d *docState, why error) error {
	var err error
	if errors.Is(why, amchunk.ErrTooCostly) {
		waiting := ""
		if n := int64(s.opts.MaxMessageOps) - s.messageRoom(d); n > 0 {
			waiting = fmt.Sprintf(" (with the %d of changes refused earlier or waiting for their dependencies, which apply with it)", n)
		}
		err = fmt.Errorf("%w: block %q of %q: the changes ask too much (%v): one message may apply at most %d operations%s to a block of %d characters; nothing was applied",
			blocks.ErrLimit, d.label, d.owner, why, min(blocks.MergeLimits(d.limit).Ops, int64(s.opts.MaxMessageOps)), waiting, d.limit)
	} else {
		err = fmt.Errorf("%w: block %q of %q: %v", blocks.ErrCorrupt, d.label, d.owner, why)
	}
	s.log.Info("sync: refused a peer's changes unapplied; the document is unavailable to the peer", "agent", s.agent, "owner", d.owner, "label", d.label, "err", err)
	payload, merr := encMode.Marshal(Refusal{Engram: "refused", Error: err.Error()})
	if merr != nil {
		return merr
	}
	s.count++
	if err := s.send(Message{Type: TypeEphemeral, DocumentID: d.id, SessionID: s.session, Count: s.count, Data: payload}); err != nil {
		return err
	}
	return s.gone(d, err)
}

// syncShared handles a sync message on a shared copy. Changes it carries
// that the copy lacks go to the store first; only accepted ones enter the
// copy, which the other sessions sync from. A refused change moves the
// session to a private copy, where it is taken back.
func (s *session) syncShared(d *docState, m Message, sm amchunk.SyncMessage) error {
	var changes []*automerge.Change
	heads := make([]automerge.ChangeHash, len(sm.Heads))
	for i, h := range sm.Heads {
		heads[i] = automerge.ChangeHash(h)
	}
	if err := guard(func() error {
		// A throwaway document decodes the message's changes without
		// applying them anywhere that matters (automerge-go offers no
		// other way to read changes whose dependencies are elsewhere);
		// syncMessage measured them first.
		tm, err := automerge.NewSyncState(automerge.New()).ReceiveMessage(m.Data)
		if err != nil {
			return err
		}
		changes = tm.Changes()
		return nil
	}); err != nil {
		return s.send(Message{Type: TypeError, Message: fmt.Sprintf("document %s: bad sync message: %v", d.id, err)})
	}
	d.sh.mu.Lock()
	changes = slices.DeleteFunc(changes, func(c *automerge.Change) bool { _, err := d.sh.doc.Change(c.Hash()); return err == nil })
	d.sh.mu.Unlock()
	if len(changes) > 0 {
		if refusal := s.merge(d, changes); refusal != nil {
			if !refused(refusal) {
				return fmt.Errorf("%w: merge into block %q of %q: %w", ErrStore, d.label, d.owner, refusal)
			}
			if err := s.privatize(d); err != nil {
				return s.gone(d, err)
			}
			return s.syncPrivate(d, m.Data)
		}
		if _, err := s.catchUp(d); err != nil {
			return s.gone(d, err)
		}
	}
	d.sh.mu.Lock()
	err := guard(func() error { _, err := d.ss.ReceiveMessage(m.Data); return err })
	d.sh.mu.Unlock()
	if err != nil {
		return s.send(Message{Type: TypeError, Message: fmt.Sprintf("document %s: bad sync message: %v", d.id, err)})
	}
	d.heard, d.peerHeads = true, heads
	return s.push(d)
}

// chargeCopy charges the budget for a whole copy of d's document (a
// private copy, the store's document loaded to take a refused edit back):
// its size in characters, as many operations as writing it would take.
// Otherwise a read-only token's one-character edits on a large block
// would each cost the server the whole block for one operation's charge.
func (s *session) chargeCopy(d *docState) error {
	doc, err := s.view(d)
	if err != nil {
		return nil // the copy fails the same way, and says so
	}
	return s.opts.Budget.spend(s.live, int64(doc.Size())+1)
}

// privatize gives d a private copy of its shared one (a new sync state:
// the protocol recovers from a reset as from a reconnect).
func (s *session) privatize(d *docState) error {
	if err := s.chargeCopy(d); err != nil {
		return err
	}
	sh := d.sh
	sh.mu.Lock()
	var (
		saved  []byte
		mirror *automerge.Doc
	)
	// A fork copies the document in memory, a quarter of what loading
	// the saved one costs; the saved size is what the copy is held as.
	err := guard(func() (err error) {
		saved = sh.doc.Save()
		mirror, err = sh.doc.Fork()
		return err
	})
	base := slices.Clone(sh.base)
	sh.mu.Unlock()
	if err != nil {
		return err
	}
	s.opts.Mirrors.release(sh)
	d.sh, d.mirror, d.base, d.ss = nil, mirror, base, automerge.NewSyncState(mirror)
	d.mirrorBytes = len(saved)
	return nil
}

// syncPrivate handles a sync message on d's private copy.
func (s *session) syncPrivate(d *docState, data []byte) error {
	var sm *automerge.SyncMessage
	if err := guard(func() (err error) { sm, err = d.ss.ReceiveMessage(data); return err }); err != nil {
		return s.send(Message{Type: TypeError, Message: fmt.Sprintf("document %s: bad sync message: %v", d.id, err)})
	}
	if err := guard(func() error { d.heard, d.peerHeads = true, sm.Heads(); return nil }); err != nil {
		return err
	}
	if err := guard(func() error { s.countQueued(d, sm); return nil }); err != nil {
		return err
	}
	if s.overHeld(d) {
		return s.unavailable(d.id)
	}
	if err := s.absorb(d); err != nil {
		return err
	}
	return s.push(d)
}

// view returns the store's document of d's block as agent sees it
// (checking again that agent may read it).
func (s *session) view(d *docState) (*blocks.Document, error) {
	return s.hooks.Doc(s.ctx, d.blk)
}

// storeDoc copies the store's whole current document of d's block (in
// memory: saving and loading it costs about four times as much).
func (s *session) storeDoc(d *docState) (*automerge.Doc, error) {
	doc, err := s.view(d)
	if err != nil {
		return nil, err
	}
	var am *automerge.Doc
	err = guard(func() (err error) { am, err = blockseam.Automerge(doc); return err })
	return am, err
}

// catchUp merges into d's copy (the shared one, or its private mirror)
// the store's changes since the copy's base, and reports whether there
// were any. Only the new changes are saved and loaded, so a peer on a
// large block costs little per edit. An error means the document is gone
// for agent (unshared, deleted, rebased).
func (s *session) catchUp(d *docState) (bool, error) {
	doc, err := s.view(d)
	if err != nil {
		return false, err
	}
	am, base := d.mirror, &d.base
	if sh := d.sh; sh != nil {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		am, base = sh.doc, &sh.base
	}
	if slices.Equal(doc.Heads(), *base) {
		return false, nil
	}
	data, now, err := doc.ChangesSince(*base)
	if err != nil {
		return false, err
	}
	if err := guard(func() error { return am.LoadIncremental(data) }); err != nil {
		return false, err
	}
	*base = now
	return true, nil
}

func hexHeads(hs []automerge.ChangeHash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	slices.Sort(out)
	return out
}

// gone tells the peer d is unavailable and forgets it.
func (s *session) gone(d *docState, err error) error {
	if !errors.Is(err, memory.ErrNotFound) && !errors.Is(err, blocks.ErrPermission) && !errors.Is(err, blocks.ErrUnrelated) {
		s.log.Error("sync: document", "agent", s.agent, "owner", d.owner, "label", d.label, "err", err)
	}
	if d.sh != nil {
		s.opts.Mirrors.release(d.sh)
	}
	s.forget(d)
	return s.unavailable(d.id)
}

// absorb merges into the store the changes the peer sent that the store
// does not have; a refused merge is answered with a Refusal and a
// counter-change on the mirror, which the next sync hands the peer.
func (s *session) absorb(d *docState) error {
	changes, err := peerChanges(d)
	if err != nil || len(changes) == 0 {
		return nil
	}
	if !slices.ContainsFunc(changes, func(c *automerge.Change) bool { return !d.held[c.Hash()] }) {
		return nil
	}
	refusal := s.merge(d, changes)
	if refusal != nil && !refused(refusal) {
		return fmt.Errorf("%w: merge into block %q of %q: %w", ErrStore, d.label, d.owner, refusal)
	}
	d.unmergedOps = 0 // handed over (refused: held, below)
	if _, err := s.catchUp(d); err != nil {
		return s.gone(d, err)
	}
	s.settleQueued(d) // the store's changes may have completed some
	if refusal == nil {
		d.held, d.heldBytes, d.heldOps = nil, 0, 0
		return nil
	}
	// The counter-change restores a whole loaded state that the mirror
	// also merges, so a store write racing with this cannot be undone by
	// it. Loading it costs the whole document, not the refused edit: the
	// budget is charged the block's size.
	if err := s.chargeCopy(d); err != nil {
		return err
	}
	fresh, err := s.storeDoc(d)
	if err != nil {
		return s.gone(d, err)
	}
	if err := guard(func() error { _, err := d.mirror.Merge(fresh); return err }); err != nil {
		return err
	}
	d.base = hexHeads(fresh.Heads())
	if d.held == nil {
		d.held = map[automerge.ChangeHash]bool{}
	}
	for _, c := range changes {
		if !d.held[c.Hash()] {
			d.held[c.Hash()] = true
			saved := c.Save()
			d.heldBytes += len(saved)
			d.heldOps += savedCost(saved)
		}
	}
	if s.overHeld(d) {
		return s.unavailable(d.id)
	}
	s.log.Info("sync: refused a peer's changes", "agent", s.agent, "owner", d.owner, "label", d.label, "err", refusal)
	var overrides bool
	err = guard(func() error {
		var err error
		if overrides, err = reconcile(d.mirror, fresh); err != nil {
			return err
		}
		h, err := d.mirror.Commit("engram: refused: "+refusal.Error(), automerge.CommitOptions{AllowEmpty: false})
		if err == nil {
			d.held[h] = true
			if c, err := d.mirror.Change(h); err == nil {
				d.heldOps += savedCost(c.Save())
			}
		}
		return err
	})
	if err != nil {
		s.log.Error("sync: take back a refused change", "agent", s.agent, "label", d.label, "err", err)
	}
	if overrides && err == nil && !s.opts.ReadOnly {
		// The counter-change wrote over the refused edit (a scalar set
		// back, an object restored as a copy). Held back, it would later
		// merge concurrently with store edits made meanwhile and could
		// win over them (a register's conflict) or orphan them (edits in
		// the replaced object). Persisted now, the pair changes no value
		// and later edits build on it. Where the agent may not write at
		// all, the merge is refused and the pair stays held.
		if err := s.persistHeld(d); err != nil {
			s.log.Info("sync: the refused edit and its counter-change stay held", "agent", s.agent, "label", d.label, "err", err)
		}
	}
	payload, err := encMode.Marshal(Refusal{Engram: "refused", Error: refusal.Error()})
	if err != nil {
		return err
	}
	s.count++
	return s.send(Message{Type: TypeEphemeral, DocumentID: d.id, SessionID: s.session, Count: s.count, Data: payload})
}

// queuedChange is a change d's mirror keeps queued: its saved size and
// its operations as measured.
type queuedChange struct {
	bytes int
	ops   int64
}

// countQueued notes which of sm's changes d's mirror keeps queued (their
// dependencies missing) and forgets those that have since applied.
func (s *session) countQueued(d *docState, sm *automerge.SyncMessage) {
	for _, c := range sm.Changes() {
		h := c.Hash()
		if _, err := d.mirror.Change(h); err == nil {
			continue
		}
		if _, ok := d.queued[h]; !ok {
			if d.queued == nil {
				d.queued = map[automerge.ChangeHash]queuedChange{}
			}
			saved := c.Save()
			q := queuedChange{bytes: len(saved), ops: savedCost(saved)}
			d.queued[h] = q
			d.queuedBytes += q.bytes
			d.queuedOps += q.ops
		}
	}
	s.settleQueued(d)
}

// settleQueued forgets the changes d's mirror kept waiting that have
// since applied (their dependencies came with a message or a catch-up),
// counting them unmerged until the peer's next merge hands them to the
// store, and counts what still waits in the credential's Budget.
func (s *session) settleQueued(d *docState) {
	for h, q := range d.queued {
		if _, err := d.mirror.Change(h); err == nil {
			delete(d.queued, h)
			d.queuedBytes -= q.bytes
			d.queuedOps -= q.ops
			d.unmergedOps += q.ops
		}
	}
	s.opts.Budget.addWaitingOps(d.queuedOps - d.waitingAccounted)
	d.waitingAccounted = d.queuedOps
}

// savedCost is a saved change's messageCost (it was measured within
// limits when it came).
func savedCost(saved []byte) int64 {
	c, _ := amchunk.Measure(saved, amchunk.Limits{})
	return messageCost(c)
}

// overHeld reports whether d's private copy holds more of the peer's
// refused or unappliable changes than MaxHeldBytes, and if so forgets d
// (nothing shared to release), so that the copy is freed and the document
// is unavailable to the peer.
func (s *session) overHeld(d *docState) bool {
	now := int64(d.heldBytes + d.queuedBytes + d.mirrorBytes)
	overBudget := s.opts.Budget.hold(now - d.accounted)
	d.accounted = now
	if d.heldBytes+d.queuedBytes <= s.opts.MaxHeldBytes && max(s.opts.Budget.waitingOps(), d.queuedOps) <= int64(s.opts.MaxMessageOps) && !overBudget {
		return false
	}
	s.log.Info("sync: too many refused or unappliable changes held; the document is unavailable to the peer",
		"agent", s.agent, "owner", d.owner, "label", d.label, "held", d.heldBytes, "queued", d.queuedBytes, "credential_held", s.opts.Budget.Held())
	s.forget(d)
	return true
}

// forget drops d from the session and gives back what it held against
// the budget. Its shared copy, if any, the caller releases.
func (s *session) forget(d *docState) {
	s.opts.Budget.hold(-d.accounted)
	s.opts.Budget.addWaitingOps(-d.waitingAccounted)
	d.accounted, d.waitingAccounted = 0, 0
	delete(s.docs, d.id)
}

// merge merges the peer's changes into d's block through the store's
// checked merge, as agent: the store's history names agent as the maker
// of each, with op merge, whatever its commit message says (memory records
// who merged which change). Before it, a change whose commit message names
// another actor is refused all the same: the message stays in the
// document, and whoever reads it there (another automerge peer, a copy of
// the document outside the store) must not find a change in another
// agent's or the system's name.
func (s *session) merge(d *docState, changes []*automerge.Change) error {
	if s.opts.ReadOnly {
		return fmt.Errorf("%w: the token is read-only", blocks.ErrPermission)
	}
	for _, c := range changes {
		if a := claimedActor(c); a != "" && a != s.agent {
			return fmt.Errorf("%w: change %s says it was made by %q, but the token is %q's", blocks.ErrPermission, c.Hash(), a, s.agent)
		}
	}
	return s.hooks.Merge(s.ctx, d.blk, automerge.SaveChanges(changes))
}

// refused reports whether err, from a merge, is the store judging the
// changes (which the session takes back on the peer) rather than failing
// to write them (a database down or busy, a failed commit, the session's
// end). A counter-change for the latter would, once merged, delete a good
// edit for good; Serve ends instead with an error wrapping ErrStore, and the
// peer, reconnecting, sends its changes again.
func refused(err error) bool {
	if errors.Is(err, memory.ErrPersist) {
		return false
	}
	for _, kind := range []error{blocks.ErrPermission, blocks.ErrNeedsApproval, blocks.ErrWrongSchema, blocks.ErrLimit,
		blocks.ErrCorrupt, blocks.ErrUnrelated, schema.ErrInvalid, memory.ErrNotFound, memory.ErrInvalidArgument} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// claimedActor is the actor a change's commit message names in package
// blocks' format ({"a": actor, "op": ...}), or "".
func claimedActor(c *automerge.Change) string {
	var msg struct {
		Actor string `json:"a"`
	}
	if json.Unmarshal([]byte(c.Message()), &msg) != nil {
		return ""
	}
	return msg.Actor
}

// persistHeld merges d's held changes (a refused edit and its
// counter-change, which net out) into the store.
func (s *session) persistHeld(d *docState) error {
	changes, err := peerChanges(d)
	if err != nil {
		return err
	}
	if err := s.merge(d, changes); err != nil {
		return err
	}
	d.held, d.heldBytes, d.heldOps, d.unmergedOps = nil, 0, 0, 0
	if _, err = s.catchUp(d); err != nil {
		return err
	}
	s.settleQueued(d)
	return nil
}

// peerChanges returns the changes d's private mirror has past the store's
// heads it last merged (d.base): the peer's.
func peerChanges(d *docState) (changes []*automerge.Change, err error) {
	base := make([]automerge.ChangeHash, len(d.base))
	for i, h := range d.base {
		base[i], _ = automerge.NewChangeHash(h)
	}
	err = guard(func() (err error) { changes, err = d.mirror.Changes(base...); return err })
	return changes, err
}

// push sends the peer what it lacks of d, if anything.
func (s *session) push(d *docState) error {
	var msg []byte
	// The shared copy is locked only while the message is made, not
	// while a slow peer takes it.
	doc := d.mirror
	if d.sh != nil {
		d.sh.mu.Lock()
		doc = d.sh.doc
	}
	err := guard(func() error {
		m, ok := d.ss.GenerateMessage()
		if !ok {
			return nil
		}
		var err error
		msg, err = d.complete(doc, m)
		return err
	})
	if d.sh != nil {
		d.sh.mu.Unlock()
	}
	if err != nil || msg == nil {
		return err
	}
	if d.owner != s.agent {
		// The copy may have taken edits the owner made after an unshare
		// since this session last checked (another session catches a
		// shared copy up; a block's document gains writers' changes at
		// any time): the message goes out only if agent may still read
		// the block now that it is made. (An own block cannot be lost
		// but by deletion, after which it gains nothing.)
		if _, err := s.view(d); err != nil {
			return s.gone(d, err)
		}
	}
	return s.send(Message{Type: TypeSync, DocumentID: d.id, Data: msg})
}

// poll pushes the store's changes to the peer's documents when the
// agent's BlocksStamp moved.
func (s *session) poll() error {
	if len(s.docs) == 0 {
		return nil
	}
	st, err := s.mem.BlocksStamp(s.ctx)
	if err != nil {
		return nil
	}
	now := time.Now()
	structural := st.Gen != s.stamp.Gen || st.Blocks != s.stamp.Blocks
	if st != s.stamp {
		// The stamp is read from the database, a block through the
		// store's cache, which on PostgreSQL learns of another process's
		// write by a notification that may come a little later: look
		// again for a while after each change.
		s.stamp, s.recheck = st, now.Add(s.opts.Recheck)
	} else if now.After(s.recheck) {
		return nil
	}
	for key, d := range s.docs {
		if structural {
			id, _ := ParseDocumentID(key)
			if _, err := s.mem.DocumentBlock(s.ctx, id); err != nil {
				// Unshared or deleted: the document is gone for this peer.
				if err := s.gone(d, err); err != nil {
					return err
				}
				continue
			}
		}
		changed, err := s.catchUp(d)
		if err != nil {
			if err := s.gone(d, err); err != nil {
				return err
			}
			continue
		}
		if changed {
			s.settleQueued(d) // the store's changes may have completed some
		}
		// A shared copy may have been caught up by another session: let
		// the sync state decide.
		if changed || d.sh != nil {
			if err := s.push(d); err != nil {
				return err
			}
		}
	}
	return nil
}

// guard turns a panic of automerge-go (cgo) on bytes a peer made into an
// error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("automerge: %v", r)
		}
	}()
	return f()
}
